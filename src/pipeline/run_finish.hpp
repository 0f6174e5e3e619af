#pragma once
/// The end of a run: its outcome set once, then rendered by every observer (the metrics, the
/// spend-log row); and the final error of a request nothing could serve. Internal to pipeline/.

#include <optional>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// Ends the run: `ok` (served, degraded included) or failed with `status` (0 = none: 499 for a
/// client that left). Sets the outcome and the trace's totals, counts the request
/// (run_metrics.hpp) and queues its spend-log row (spend_log_row.hpp; off the request path: the
/// store's writer batches it). Runs once per request.
void finish_run(RunState& st, bool ok, std::optional<int> status);

/// Sends `error` (or 503 no_deployments_available when none) to the client and ends the run.
/// A client stream that already began (a cut no target continued, pipeline/continuation.hpp)
/// is ended with the cut's error event instead (`error` when the gateway is shutting down).
net::awaitable<void> fail_run(RunState& st, std::optional<core::Error> error);

}  // namespace tollgate::pipeline
