#include "pipeline/run_state.hpp"
#include "pipeline/route_constraints.hpp"

#include "config/wildcard.hpp"

#include <spdlog/spdlog.h>

namespace tollgate::pipeline {

RunState::RunState(std::shared_ptr<Services> services, ChatCall c, ResponseSink& s)
    : svc(std::move(services)), cfg(*svc->config), call(std::move(c)), sink(s) {
  deadline = call.start + cfg.effective_timeout;
  principal_ptr = call.principal ? call.principal : std::make_shared<const auth::Principal>();
  table = &svc->policies->for_group(call.model).classes;
  metric_group = svc->groups ? svc->groups->canonical(call.model) : call.model;
  constraints = route_constraints(*principal_ptr, cfg);
  trace_id = call.parent_trace ? call.parent_trace->trace_id : telemetry::new_trace_id();
  span_id = telemetry::new_span_id();
  // The request was accepted at call.start (steady clock): the span starts there.
  start_unix_nano = wall_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(svc->clock->now() - call.start).count();
}

const config::Deployment& RunState::deployment(std::size_t dep) const {
  if (auto it = bound_deployments.find(dep); it != bound_deployments.end()) return it->second;
  return cfg.model_list[dep];
}

void RunState::bind_deployment(std::size_t dep, std::string_view group) {
  const auto& d = cfg.model_list[dep];
  if (!config::is_wildcard(d.model_name)) return;
  config::Deployment copy = d;
  if (config::is_wildcard(d.upstream_model)) {
    const auto capture = config::wildcard_capture(d.model_name, group).value_or(std::string());
    copy.upstream_model = config::resolve_wildcard_model(d.upstream_model, capture, d.provider_prefix);
  }
  copy.model_name = std::string(group);  // the group it serves as: what logs, headers and metrics name
  budget::ResolvedPrice price = svc->prices[dep];
  if (price.how != "config override" && svc->price_table) price = budget::resolve_deployment_price(copy, *svc->price_table);
  bound_prices.insert_or_assign(dep, std::move(price));
  bound_deployments.insert_or_assign(dep, std::move(copy));
}

const budget::ResolvedPrice& RunState::price_of(std::size_t dep) const {
  if (auto it = bound_prices.find(dep); it != bound_prices.end()) return it->second;
  return svc->prices[dep];
}

milliseconds RunState::time_left() const {
  return std::chrono::duration_cast<milliseconds>(deadline - svc->clock->now());
}

bool RunState::time_for_an_attempt() const {
  const auto left = time_left();
  return left.count() > 0 && left >= trace.budget.min_time_left;
}

void RunState::step_skip(const std::string& group, const std::string& reason) {
  TraceStep s;
  s.kind = TraceStep::Kind::skip;
  s.group = group;
  s.reason = reason;
  trace.steps.push_back(std::move(s));
}

void RunState::step_stop(const std::string& reason) {
  TraceStep s;
  s.kind = TraceStep::Kind::stop;
  s.reason = reason;
  trace.steps.push_back(std::move(s));
}

void RunState::decide(const std::string& decision) {
  for (auto it = trace.steps.rbegin(); it != trace.steps.rend(); ++it)
    if (it->kind == TraceStep::Kind::attempt) {
      if (it->decision.empty()) it->decision = decision;
      return;
    }
}

std::string RunState::last_failure_class() const {
  for (auto it = trace.steps.rbegin(); it != trace.steps.rend(); ++it)
    if (it->kind == TraceStep::Kind::attempt && !it->failure_class.empty()) return it->failure_class;
  return {};
}

void RunState::alert(const std::string& kind, const std::string& subject, const std::string& message) {
  if (svc->alerts) svc->alerts->raise(kind, subject, message);
  else spdlog::error("ALERT {} {}: {}", kind, subject, message);
}

void RunState::cancel_in_flight() {
  if (exchange) exchange->cancel();
  if (token) token->cancel();
  if (timer) timer->cancel();
}

}  // namespace tollgate::pipeline
