#include "pipeline/response_headers.hpp"

#include <spdlog/spdlog.h>

#include "budget/money.hpp"

namespace tollgate::pipeline {

Headers response_headers(const RunState& st, std::optional<std::size_t> dep) {
  Headers h;
  h.reserve(20);
  const auto now = st.svc->clock->now();
  const long long total = ms_between(st.call.start, now);
  h.emplace_back("x-litellm-call-id", st.call.call_id);
  h.emplace_back("x-tollgate-trace-id", st.trace_id);
  h.emplace_back("x-litellm-attempted-retries", std::to_string(st.trace.retries_used));
  h.emplace_back("x-litellm-max-retries", std::to_string(st.trace.budget.max_retries));
  h.emplace_back("x-litellm-attempted-fallbacks", std::to_string(st.trace.fallbacks_used));
  h.emplace_back("x-litellm-response-duration-ms", std::to_string(total));
  h.emplace_back("x-litellm-overhead-duration-ms", std::to_string(std::max(0LL, total - st.upstream_ms)));
  const auto served = dep ? dep : st.last_dep;
  if (served) {
    const auto& d = st.deployment(*served);
    h.emplace_back("x-litellm-model-id", d.id);
    h.emplace_back("x-litellm-model-group", d.model_name);
    h.emplace_back("x-litellm-model-api-base", d.api_base);
  } else {
    h.emplace_back("x-litellm-model-group", st.call.model);
  }
  std::string path;
  for (const auto& a : st.attempts) {
    if (!path.empty()) path += ", ";
    path.append(a.group).append("/").append(st.deployment(a.deployment).id).append(":");
    path.append(a.failure ? policy::to_string(*a.failure) : std::string_view("ok"));
    if (a.status) path.append("(").append(std::to_string(a.status)).append(")");
  }
  // A stream's headers go out before its attempt is recorded: add the serving attempt.
  if (dep && (st.attempts.empty() || st.attempts.back().failure || st.attempts.back().deployment != *dep)) {
    if (!path.empty()) path += ", ";
    path += st.deployment(*dep).model_name + "/" + st.deployment(*dep).id + ":ok(200)";
  }
  if (!path.empty()) h.emplace_back("x-tollgate-attempts", path);
  if (!st.skipped.empty()) {
    std::string s;
    for (const auto& [g, why] : st.skipped) s += (s.empty() ? "" : ", ") + g + " (" + why + ")";
    h.emplace_back("x-tollgate-skipped-fallbacks", s);
  }
  if (dep && !st.call.stream) h.emplace_back("x-litellm-response-cost", budget::format_dollars(st.cost_preview));
  // LiteLLM's cache header: on a hit, and on a full answer the cache will keep.
  if (!st.cache_key.empty() && (st.cache_hit || (st.cache_store && dep && st.degradation.empty())))
    h.emplace_back("x-litellm-cache-key", st.cache_key);
  if (st.cache_hit) {
    h.emplace_back("x-litellm-response-cost", "0");
    h.emplace_back("x-tollgate-cache", "hit; age=" + std::to_string(st.cache_age.count() / 1000) + "s");
  }
  // The serving attempt was sent with a smaller output bound than asked: what the budget paid for.
  if (dep && st.bound.reduced && st.bound.tokens) h.emplace_back("x-tollgate-output-capped", std::to_string(*st.bound.tokens));
  {
    // A stream's serving attempt is not recorded yet when its headers go out.
    std::optional<TraceStep> serving;
    const auto& steps = st.trace.steps;
    if (dep && (steps.empty() || steps.back().kind != TraceStep::Kind::attempt ||
                !steps.back().failure_class.empty() || steps.back().deployment != st.deployment(*dep).id)) {
      serving.emplace();
      serving->kind = TraceStep::Kind::attempt;
      serving->group = st.deployment(*dep).model_name;
      serving->deployment = st.deployment(*dep).id;
    }
    // The sink makes header values safe.
    h.emplace_back("x-tollgate-decision", st.trace.compact(total, serving ? &*serving : nullptr));
  }
  if (!st.degradation.empty()) {
    std::string label = st.degradation;
    if (st.degradation == "stale_cache") {
      label += "; age=" + std::to_string(st.cache_age.count() / 1000) + "s";
      h.emplace_back("age", std::to_string(st.cache_age.count() / 1000));
    }
    h.emplace_back("x-tollgate-degradation", label);
    if (!st.caveat.empty()) h.emplace_back("x-tollgate-degradation-caveat", st.caveat);
  }
  if (const auto& k = st.principal().key) {
    if (auto key_state = st.svc->ledger->state(budget::ScopeId{budget::ScopeKind::key, k->token_hash}, std::chrono::system_clock::now())) {
      const budget::Nanos spent = budget::saturating_add(key_state->spent, dep ? st.cost_preview : 0);
      h.emplace_back("x-litellm-key-spend", budget::format_dollars(spent));
      // soft_budget only warns: a header for the caller and a log line for the operator.
      if (k->soft_budget_nanos && spent >= *k->soft_budget_nanos) {
        h.emplace_back("x-tollgate-soft-budget-exceeded", budget::format_dollars(*k->soft_budget_nanos));
        spdlog::warn("key {} ({}) is over its soft budget: spent ${} of soft budget ${}", k->key_name, k->key_alias,
                     budget::format_dollars(spent), budget::format_dollars(*k->soft_budget_nanos));
      }
    }
    if (k->max_budget_nanos) h.emplace_back("x-litellm-key-max-budget", budget::format_dollars(*k->max_budget_nanos));
  }
  return h;
}

}  // namespace tollgate::pipeline
