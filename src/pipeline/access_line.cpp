#include "pipeline/access_line.hpp"

#include "budget/money.hpp"
#include "core/json_out.hpp"

namespace tollgate::pipeline {

std::string access_line(const RunState& st, bool ok, std::optional<int> status) {
  const auto& p = st.principal();
  std::string out;
  out.reserve(768);
  core::JsonOut o(out);
  o.begin_object();
  o.key("time_ms").value(static_cast<std::int64_t>(wall_ms()));
  o.key("request_id").value(st.call.call_id);
  o.key("trace_id").value(st.trace_id);
  o.key("hashed_api_key").value(p.key ? std::string_view(p.key->token_hash) : std::string_view());
  o.key("key_alias").value(p.key ? std::string_view(p.key->key_alias) : std::string_view());
  o.key("team_id").value(p.key ? std::string_view(p.key->team_id) : std::string_view());
  o.key("call_type").value(st.call.call_type);
  o.key("model_requested").value(st.call.requested_as.empty() ? st.call.model : st.call.requested_as);
  const auto served = ok ? st.served_dep : std::nullopt;
  if (served) {
    const auto& d = st.deployment(*served);
    o.key("model_group_served").value(d.model_name);
    o.key("model_served").value(d.upstream_model);
    o.key("deployment").value(d.id);
    o.key("provider").value(d.provider_prefix);
  }
  o.key("stream").value(st.call.stream);
  o.key("status").value(ok ? 200 : status.value_or(0));
  o.key("outcome").value(st.trace.outcome);
  if (const auto failure = st.last_failure_class(); !failure.empty()) o.key("failure_class").value(failure);
  if (!st.trace.degradation.empty()) o.key("degradation").value(st.trace.degradation);
  o.key("attempts").value(static_cast<std::int64_t>(st.attempts.size()));
  o.key("retries").value(st.trace.retries_used);
  o.key("fallbacks").value(st.trace.fallbacks_used);
  o.key("tokens").begin_object();
  o.key("input").value(static_cast<std::int64_t>(st.usage.prompt_tokens));
  o.key("output").value(static_cast<std::int64_t>(st.usage.completion_tokens));
  o.key("cached").value(static_cast<std::int64_t>(st.usage.cached_tokens));
  o.end_object();
  o.key("cost").value(budget::format_dollars(st.cost));
  o.key("reserved").value(budget::format_dollars(st.trace.reserved_total));
  if (st.unknown) o.key("unknown_outcome").value(true);
  o.key("duration_ms").value(st.trace.elapsed_ms);
  o.key("overhead_ms").value(static_cast<std::int64_t>(std::max<long long>(0, st.trace.elapsed_ms - st.upstream_ms)));
  if (st.first_byte_ms > 0)
    o.key("time_to_first_token_ms").value(std::max<std::int64_t>(0, st.first_byte_ms - st.start_unix_nano / 1'000'000));
  o.end_object();
  return out;
}

}  // namespace tollgate::pipeline
