#include "pipeline/access_line.hpp"

#include "budget/money.hpp"

namespace tollgate::pipeline {

std::string access_line(const RunState& st, bool ok, std::optional<int> status) {
  const auto& p = st.principal();
  json::object o;
  const auto end_ms = wall_ms();
  o["time_ms"] = end_ms;
  o["request_id"] = st.call.call_id;
  o["trace_id"] = st.trace_id;
  o["hashed_api_key"] = p.key ? p.key->token_hash : std::string();
  o["key_alias"] = p.key ? p.key->key_alias : std::string();
  o["team_id"] = p.key ? p.key->team_id : std::string();
  o["call_type"] = st.call.call_type;
  o["model_requested"] = st.call.model;
  const auto served = ok ? st.served_dep : std::nullopt;
  if (served) {
    const auto& d = st.cfg.model_list[*served];
    o["model_group_served"] = d.model_name;
    o["model_served"] = d.upstream_model;
    o["deployment"] = d.id;
    o["provider"] = d.provider_prefix;
  }
  o["stream"] = st.call.stream;
  o["status"] = ok ? 200 : status.value_or(0);
  o["outcome"] = st.trace.outcome;
  if (const auto failure = st.last_failure_class(); !failure.empty()) o["failure_class"] = failure;
  if (!st.trace.degradation.empty()) o["degradation"] = st.trace.degradation;
  o["attempts"] = st.attempts.size();
  o["retries"] = st.trace.retries_used;
  o["fallbacks"] = st.trace.fallbacks_used;
  json::object tokens;
  tokens["input"] = st.usage.prompt_tokens;
  tokens["output"] = st.usage.completion_tokens;
  tokens["cached"] = st.usage.cached_tokens;
  o["tokens"] = std::move(tokens);
  o["cost"] = budget::format_dollars(st.cost);
  o["reserved"] = budget::format_dollars(st.trace.reserved_total);
  if (st.unknown) o["unknown_outcome"] = true;
  o["duration_ms"] = st.trace.elapsed_ms;
  o["overhead_ms"] = std::max<long long>(0, st.trace.elapsed_ms - st.upstream_ms);
  if (st.first_byte_ms > 0) o["time_to_first_token_ms"] = std::max<std::int64_t>(0, st.first_byte_ms - st.start_unix_nano / 1'000'000);
  return json::serialize(o);
}

}  // namespace tollgate::pipeline
