#pragma once
/// The attempt loop's Prometheus metrics (telemetry/metrics.hpp): the families registered once
/// per process, and a run's counts rendered from its state (an observer of the decision trace):
/// tollgate_requests_total, _request_duration_ms, _deadline_overruns_total, _retries_total,
/// _fallbacks_total, _upstream_attempts_total, _circuit_transitions_total, _circuit_state.
/// Internal to pipeline/.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// Registers the loop's metric families in `s.metrics` (s.loop_metrics) and the circuit-state
/// gauges read from `s.circuits` at scrape time. `s.metrics` and `s.circuits` must be set.
void register_loop_metrics(Services& s);

/// Every circuit transition: a log line, a counter, and an alert when a provider opens.
std::function<void(const policy::CircuitTransition&)> circuit_logger(std::shared_ptr<telemetry::Registry> metrics,
                                                                     std::shared_ptr<telemetry::Alerts> alerts);

/// Counts a finished request (after finish_run set the trace's totals); `status` is the
/// client's status when it was not served.
void count_request(const RunState& st, bool ok, int status);

/// Counts one upstream attempt on `d` of `group`: ok, or its failure class.
void count_attempt(const RunState& st, const std::string& group, const config::Deployment& d,
                   std::optional<FailureClass> failure);

}  // namespace tollgate::pipeline
