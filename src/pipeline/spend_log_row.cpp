#include "pipeline/spend_log_row.hpp"

#include "budget/cost.hpp"
#include "budget/money.hpp"
#include "core/json_out.hpp"
#include "pipeline/admission.hpp"

namespace tollgate::pipeline {

namespace {

/// LiteLLM's session id: `litellm_session_id` at the top of the body, else in its `metadata`
/// (also as `session_id`). Only a string counts.
std::string session_of(const json::object& body) {
  auto str = [](const json::object& o, std::string_view k) -> std::string {
    const auto* v = o.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  if (auto s = str(body, "litellm_session_id"); !s.empty()) return s;
  if (const auto* m = body.if_contains("metadata"); m && m->is_object()) {
    if (auto s = str(m->as_object(), "litellm_session_id"); !s.empty()) return s;
    return str(m->as_object(), "session_id");
  }
  return {};
}

// A bill's line items: `[{"kind","count","price","cost"}]`, price per token (per call for
// web_search) and cost as exact decimal dollar strings.
std::string line_items_json(const budget::Charge& charge) {
  std::string out;
  core::JsonOut j(out);
  j.begin_array();
  for (const auto& i : charge.items)
    j.begin_object()
        .key("kind")
        .value(budget::to_string(i.kind))
        .key("count")
        .value(i.count)
        .key("price")
        .value(budget::format_price_per_token(i.price))
        .key("cost")
        .value(budget::format_price_per_token(budget::PerTokenPrice{i.picos}))
        .end_object();
  j.end_array();
  return out;
}

}  // namespace

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
  {
    core::JsonOut j(row.attempts);
    j.begin_array();
    for (const auto& a : st.attempts)
      j.begin_object()
          .key("model_group")
          .value(a.group)
          .key("deployment")
          .value(st.deployment(a.deployment).id)
          .key("status")
          .value(a.status)
          .key("outcome")
          .value(a.failure ? policy::to_string(*a.failure) : std::string_view("ok"))
          .key("duration_ms")
          .value(static_cast<std::int64_t>(a.duration_ms))
          .end_object();
    j.end_array();
  }
  {
    core::JsonOut j(row.skipped_fallbacks);
    j.begin_array();
    for (const auto& [g, why] : st.skipped) j.begin_object().key("target").value(g).key("reason").value(why).end_object();
    j.end_array();
  }
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
  // LiteLLM's completionStartTime: the first token of a stream, else the end of the call.
  row.completion_start_ms = st.call.stream && st.first_byte_ms != 0 ? st.first_byte_ms : row.end_ms;
  if (ok && !st.charge.items.empty()) row.line_items = line_items_json(st.charge);
  if (status) row.error_status = std::to_string(*status);
  row.degradation = st.trace.degradation;
  row.cache_hit = st.cache_hit;
  row.cache_key = st.cache_key;
  row.cache_saved_nanos = st.cache_hit ? st.cache_saved : 0;
  row.decision = st.trace.to_json();
  row.requester_ip_address = st.call.requester_ip;
  row.session_id = session_of(st.call.body);
  // LiteLLM's StandardLoggingMetadata names of the caller, then Tollgate's trace ids.
  core::JsonOut meta(row.metadata);
  meta.begin_object()
      .key("user_api_key")  // LiteLLM's SpendLogsMetadata name
      .value(row.api_key)
      .key("user_api_key_hash")  // and its StandardLoggingMetadata name
      .value(row.api_key)
      .key("user_api_key_alias")
      .value(row.key_alias)
      .key("user_api_key_user_id")
      .value(row.user)
      .key("user_api_key_team_id")
      .value(row.team_id)
      .key("user_api_key_team_alias")
      .value(p.team ? std::string_view(p.team->team_alias) : std::string_view())
      .key("user_api_key_org_id")
      .value(row.organization_id)
      .key("user_api_key_end_user_id")
      .value(row.end_user)
      .key("requester_ip_address")
      .value(row.requester_ip_address)
      .key("trace_id")
      .value(st.trace_id)
      .key("span_id")
      .value(st.span_id)
      .end_object();
  return row;
}

}  // namespace tollgate::pipeline
