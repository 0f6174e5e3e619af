#include "pipeline/run_metrics.hpp"

#include <array>
#include <string_view>

#include <spdlog/spdlog.h>

#include "pipeline/compat_metrics.hpp"

namespace tollgate::pipeline {
namespace {

/// Circuit states as gauges, read at scrape time: 0 closed, 1 half-open, 2 open.
/// The circuits are the latest snapshot's (config hot reload replaces them). The collector holds
/// the snapshot weakly: the circuits' transition logger holds the registry, so a strong reference
/// here would be a cycle that keeps Services alive forever (found by LeakSanitizer).
void watch_circuits(telemetry::Registry& metrics, const std::shared_ptr<const Services::Latest>& snapshot) {
  metrics.on_collect([weak = std::weak_ptr<const Services::Latest>(snapshot)](telemetry::Exposition& out) {
    const auto latest = weak.lock();
    if (!latest) return;
    std::shared_ptr<policy::Circuits> circuits;
    {
      std::lock_guard lk(latest->mu);
      circuits = latest->circuits;
    }
    if (!circuits) return;
    for (const auto& c : circuits->snapshot()) {
      const double v = c.state == policy::CircuitState::closed ? 0 : c.state == policy::CircuitState::half_open ? 1 : 2;
      out.gauge("tollgate_circuit_state", "Circuit state: 0 closed, 1 half-open, 2 open", {{"scope", c.scope}, {"id", c.id}}, v);
    }
  });
}

}  // namespace

std::function<void(const policy::CircuitTransition&)> circuit_logger(std::shared_ptr<telemetry::Registry> metrics,
                                                                     std::shared_ptr<telemetry::Alerts> alerts) {
  return [metrics, alerts](const policy::CircuitTransition& t) {
    spdlog::warn("circuit {} {}: {} -> {} ({})", t.scope, t.id, policy::to_string(t.from), policy::to_string(t.to),
                 t.reason);
    metrics->counter("tollgate_circuit_transitions_total", "Circuit state changes", {"scope", "id", "to"})
        .inc({t.scope, t.id, std::string(policy::to_string(t.to))});
    if (t.scope == "provider" && t.to == policy::CircuitState::open)
      alerts->raise("provider_circuit_open", t.id, "provider " + t.id + " circuit opened: " + t.reason);
    if (t.scope == "provider" && t.to == policy::CircuitState::closed && t.from != policy::CircuitState::closed)
      alerts->raise("provider_circuit_closed", t.id, "provider " + t.id + " circuit closed: " + t.reason);
  };
}

void register_loop_metrics(Services& s) {
  watch_circuits(*s.metrics, s.latest);
  auto& m = *s.metrics;
  s.loop_metrics.requests = &m.counter("tollgate_requests_total", "Model requests by requested model group and result",
                                        {"model_group", "result", "degradation"});
  s.loop_metrics.duration = &m.histogram("tollgate_request_duration_seconds",
                                         "Whole-request latency in seconds, all attempts included", {"model_group"},
                                         {0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60});
  s.loop_metrics.overruns = &m.counter("tollgate_deadline_overruns_total",
                                        "Requests that ended later than their deadline plus deadline_slack_ms",
                                        {"model_group"});
  s.loop_metrics.retries = &m.counter("tollgate_retries_total", "Retries spent", {"model_group"});
  s.loop_metrics.fallbacks = &m.counter("tollgate_fallbacks_total", "Fallback targets attempted", {"model_group"});
  register_compat_metrics(s);
  s.loop_metrics.attempts = &m.counter("tollgate_upstream_attempts_total",
                                        "Upstream attempts by deployment and outcome (ok or failure class)",
                                        {"model_group", "deployment", "provider", "outcome"});
}

void count_request(const RunState& st, bool ok, int status) {
  const auto& m = st.svc->loop_metrics;
  // Label values as views (the families copy them only when a child is made).
  using One = std::array<std::string_view, 1>;
  const One group{st.metric_group};
  const std::string code = ok ? std::string() : std::to_string(status);
  const std::string_view result = st.trace.outcome == "deferred" ? std::string_view("deferred")
                                  : ok                           ? std::string_view("served")
                                                                 : std::string_view(code);
  m.requests->inc(std::array<std::string_view, 3>{
      st.metric_group, result, st.trace.degradation.empty() ? std::string_view("none") : std::string_view(st.trace.degradation)});
  m.duration->observe(group, static_cast<double>(st.trace.elapsed_ms) / 1000.0);
  const auto limit = st.trace.budget.deadline + st.cfg.fallback_policy.deadline_slack;
  if (st.trace.elapsed_ms > limit.count()) m.overruns->inc(group);
  if (st.trace.retries_used > 0) m.retries->add(group, st.trace.retries_used);
  if (st.trace.fallbacks_used > 0) m.fallbacks->add(group, st.trace.fallbacks_used);
  count_compat_request(st, ok, status);
}

void count_attempt(const RunState& st, const std::string& group, const config::Deployment& d,
                   std::optional<FailureClass> failure) {
  const std::string canonical = st.svc->groups ? st.svc->groups->canonical(group) : group;
  st.svc->loop_metrics.attempts->inc(std::array<std::string_view, 4>{
      canonical, d.id, d.provider_prefix, failure ? policy::to_string(*failure) : std::string_view("ok")});
}

}  // namespace tollgate::pipeline
