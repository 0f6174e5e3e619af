#pragma once
/// How `tollgate simulate` prints a run: text for people (docs/simulate.md shows real output),
/// JSON for tools. Both are deterministic for a given config and scenario, so two runs (before
/// and after a policy change) can be diffed like an API contract.

#include <string>

#include <boost/json/object.hpp>

#include "simulate/simulator.hpp"

namespace tollgate::simulate {

/// The text report: per request its decision path (as `tollgate explain` prints it), final
/// status, virtual time, money and circuit changes; then the summary and the final circuits.
std::string render_text(const SimulationResult& result);

/// The JSON report: {scenario, config, seed, requests: [{..., decision: <trace JSON>}], summary,
/// circuits}. Money as decimal dollar strings.
boost::json::object render_json(const SimulationResult& result);

/// JSON text with one member or element per line, two-space indent, keys in insertion order
/// (diff-friendly), ending in a newline.
std::string pretty_json(const boost::json::value& v);

}  // namespace tollgate::simulate
