#pragma once
/// The access-log line of a run (tollgate_settings.access_log), rendered from its state (an
/// observer of the decision trace): one JSON object with the time, request and trace ids, the
/// hashed key, key alias, team, the model asked and served, deployment, status, failure class,
/// degradation, tokens by kind, cost and reserved (USD strings), duration, overhead and time to
/// first token (ms). Never an API key, never prompt or completion text. Internal to pipeline/.

#include <optional>
#include <string>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// The line (no newline); call from finish_run, after the trace's totals are set.
std::string access_line(const RunState& st, bool ok, std::optional<int> status);

}  // namespace tollgate::pipeline
