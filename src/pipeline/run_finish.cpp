#include "pipeline/run_finish.hpp"

#include "pipeline/access_line.hpp"
#include "pipeline/budget_alerts.hpp"
#include "pipeline/cache_step.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/run_metrics.hpp"
#include "pipeline/run_spans.hpp"
#include "pipeline/spend_log_row.hpp"

namespace tollgate::pipeline {

void finish_run(RunState& st, bool ok, std::optional<int> status) {
  st.finished = true;
  st.outcome.served = ok;
  st.outcome.status = ok ? 200 : status.value_or(0);
  if (!ok && !st.attempts.empty() && st.attempts.back().failure) {
    const auto c = *st.attempts.back().failure;
    st.outcome.retryable = c == FailureClass::retryable_capacity || c == FailureClass::transient_provider_error ||
                         c == FailureClass::unknown_outcome;
  } else if (!ok && st.attempts.empty()) {
    st.outcome.retryable = status.value_or(0) == 429 || status.value_or(0) >= 500;
  }
  st.trace.elapsed_ms = ms_between(st.call.start, st.svc->clock->now());
  st.trace.charged_total = st.cost;
  if (st.trace.outcome.empty()) st.trace.outcome = ok ? (st.trace.degradation.empty() ? "served" : "degraded") : st.gone ? "client_gone" : "failed";
  if (ok && st.served_dep) st.trace.served_by = st.deployment(*st.served_dep).model_name + "/" + st.deployment(*st.served_dep).id;
  if (ok && st.trace.degradation == "stale_cache") st.trace.served_by = "stale_cache";
  if (ok && st.cache_hit) st.trace.served_by = "cache";
  store_in_cache(st, ok, st.charge.total);
  if (st.svc->metrics) count_request(st, ok, st.outcome.status);
  // Parent-based sampling: a caller that did not sample its trace gets no spans from us either.
  if (st.svc->spans && (!st.call.parent_trace || st.call.parent_trace->sampled)) {
    thread_local std::vector<telemetry::Span> spans;  // reused: no allocation per request
    run_spans(st, ok, status, spans);
    st.svc->spans->submit(spans);
  }
  if (st.svc->access_log) st.svc->access_log->write(access_line(st, ok, status));
  if (st.svc->budget_alerts && st.cost > 0) st.svc->budget_alerts->check(st);
  if (!st.svc->store || st.cfg.general_settings.disable_spend_logs) return;
  st.svc->store->append_spend_log(spend_log_row(st, ok, status));
}

net::awaitable<void> fail_run(RunState& st, std::optional<core::Error> error) {
  core::Error err = error ? *error
                          : core::Error::gateway(503, "api_error",
                                                 "no deployment of model group '" + st.call.model + "' is available",
                                                 "no_deployments_available");
  st.trace.outcome = "failed";
  if (st.client && st.client->open()) {
    // The client's stream began and was cut, and nothing continued it (issue 13 §3): it ends
    // with the cut's own error event (a shutdown's), never a later target's refusal.
    st.stream_status = "unknown_outcome";
    const core::Error& cut = st.cut ? err : st.client->cut_error();
    finish_run(st, false, cut.status);
    co_await st.sink.end_stream(cut);
    co_return;
  }
  auto headers = response_headers(st, std::nullopt);
  for (const auto& h : err.headers) headers.push_back(h);
  // Accounted before the answer leaves: a caller that reads /metrics or its spend right after
  // the error sees this request in them.
  finish_run(st, false, err.status);
  co_await st.sink.send_error(err, headers);
}

}  // namespace tollgate::pipeline
