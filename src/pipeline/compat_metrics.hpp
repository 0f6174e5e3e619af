#pragma once
/// LiteLLM's Prometheus metric names and labels (docs: proxy/prometheus; litellm
/// types/integrations/prometheus.py), and the OpenTelemetry GenAI client histograms, rendered
/// from a run's state (an observer of the decision trace), so that dashboards built for either
/// work unchanged. Label values are bounded: hashed key ids, key aliases, team and user ids, model
/// group and deployment names from the config; the caller's free-form end-user id is never a
/// label. Internal to pipeline/.

#include <optional>
#include <string>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// Registers the families in `s.metrics` (s.compat_metrics) and the litellm_deployment_state
/// gauges read from `s.circuits` at scrape time.
void register_compat_metrics(Services& s);

/// Counts a finished request: requests, spend, tokens, latencies, fallbacks, remaining budgets
/// and the GenAI histograms. Call after finish_run set the trace's totals.
void count_compat_request(const RunState& st, bool ok, int status);

/// Counts one upstream attempt on `d` (failure: its class; `status` 0 for a transport failure).
void count_compat_attempt(const RunState& st, const config::Deployment& d, std::optional<FailureClass> failure,
                          int status, long long duration_ms);

}  // namespace tollgate::pipeline
