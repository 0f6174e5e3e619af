#include "pipeline/spend_log_row.hpp"

#include "pipeline/admission.hpp"

namespace tollgate::pipeline {

store::SpendLogRow spend_log_row(const RunState& st, bool ok, std::optional<int> status) {
  const auto& p = st.principal();
  store::SpendLogRow row;
  row.request_id = st.call.call_id;
  row.call_type = st.call.call_type;
  if (p.key) {
    row.api_key = p.key->token_hash;
    row.key_alias = p.key->key_alias;
    row.user = p.key->user_id;
    row.team_id = p.key->team_id;
    row.organization_id = p.key->organization_id;
  }
  row.end_user = p.end_user;
  row.request_tags = p.tags;
  row.requested_model = st.call.requested_as.empty() ? st.call.model : st.call.requested_as;
  row.model_group = st.call.model;
  const auto served = ok ? st.served_dep : std::nullopt;
  if (served) {
    const auto& d = st.deployment(*served);
    row.model_group = d.model_name;
    row.model = d.upstream_model;
    row.model_id = d.id;
    row.custom_llm_provider = d.provider_prefix;
    row.api_base = d.api_base;
  }
  json::array attempts;
  for (const auto& a : st.attempts) {
    json::object o;
    o["model_group"] = a.group;
    o["deployment"] = st.deployment(a.deployment).id;
    o["status"] = a.status;
    o["outcome"] = a.failure ? std::string(policy::to_string(*a.failure)) : std::string("ok");
    o["duration_ms"] = a.duration_ms;
    attempts.push_back(std::move(o));
  }
  row.attempts = json::serialize(attempts);
  json::array skipped;
  for (const auto& [g, why] : st.skipped) {
    json::object o;
    o["target"] = g;
    o["reason"] = why;
    skipped.push_back(std::move(o));
  }
  row.skipped_fallbacks = json::serialize(skipped);
  row.prompt_tokens = st.usage.prompt_tokens;
  row.completion_tokens = st.usage.completion_tokens;
  row.cached_tokens = st.usage.cached_tokens;
  row.total_tokens = st.usage.prompt_tokens + st.usage.completion_tokens;
  row.spend_nanos = st.cost;
  row.priced = !st.unpriced;
  row.unknown_outcome = st.unknown;
  const auto now_sys = std::chrono::system_clock::now();
  const auto elapsed = ms_between(st.call.start, st.svc->clock->now());
  row.end_ms = std::chrono::duration_cast<milliseconds>(now_sys.time_since_epoch()).count();
  row.start_ms = row.end_ms - elapsed;
  row.request_duration_ms = elapsed;
  row.status = !ok ? "failure" : st.stream_status.empty() ? "success" : st.stream_status;
  if (st.first_byte_ms != 0) row.completion_start_ms = st.first_byte_ms;
  if (ok && !st.charge.items.empty()) row.line_items = json::serialize(line_items_json(st.charge));
  if (status) row.error_status = std::to_string(*status);
  row.degradation = st.trace.degradation;
  row.cache_hit = st.cache_hit;
  row.cache_key = st.cache_key;
  row.cache_saved_nanos = st.cache_hit ? st.cache_saved : 0;
  row.decision = json::serialize(st.trace.to_json());
  row.metadata = json::serialize(json::object{{"trace_id", st.trace_id}, {"span_id", st.span_id}});
  return row;
}

}  // namespace tollgate::pipeline
