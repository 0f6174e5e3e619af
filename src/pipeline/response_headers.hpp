#pragma once
/// The response headers of a run, rendered from its state (an observer of the decision trace):
/// LiteLLM's x-litellm-* headers (call id, retries, fallbacks, durations, model, cost, key
/// spend), and Tollgate's x-tollgate-attempts / -skipped-fallbacks / -decision / -degradation /
/// -output-capped / -soft-budget-exceeded. Internal to pipeline/.

#include <optional>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// The headers for an answer served by deployment `dep` (a stream's go out before its attempt
/// is recorded: it is added as the serving step), or for an error / degraded answer (nullopt).
Headers response_headers(const RunState& st, std::optional<std::size_t> dep);

}  // namespace tollgate::pipeline
