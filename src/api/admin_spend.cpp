// The spend endpoints: /spend/logs, /spend/keys, /global/spend, /global/spend/report (LiteLLM
// proxy/cost_tracking). Sums are integer nano-dollars, turned into dollars once, for output.
#include "api/admin_context.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <boost/json.hpp>

#include "api/admin_json.hpp"
#include "auth/caller_names.hpp"
#include "auth/keys.hpp"
#include "core/ids.hpp"
#include "budget/money.hpp"
#include "config/policy.hpp"

namespace tollgate::api::admin {
namespace json = boost::json;

namespace {

/// start_date / end_date of `target` into `f` (ISO 8601; a bare end date includes that day).
std::optional<core::Error> read_dates(const std::string& target, store::SpendLogFilter& f) {
  if (auto v = query_param(target, "start_date"); v && !v->empty()) {
    auto ms = parse_iso_time_ms(*v);
    if (!ms) return bad_field("start_date", "start_date: " + ms.error());
    f.start_ms = *ms;
  }
  if (auto v = query_param(target, "end_date"); v && !v->empty()) {
    auto ms = parse_iso_time_ms(*v);
    if (!ms) return bad_field("end_date", "end_date: " + ms.error());
    // A bare date includes that whole day (LiteLLM's UI sends dates).
    f.end_ms = v->size() == 10 ? *ms + 86'400'000 : *ms;
  }
  if (f.start_ms && f.end_ms && *f.end_ms <= *f.start_ms)
    return bad_field("end_date", "end_date must be after start_date");
  return std::nullopt;
}

/// An api_key query value (the secret or its hash) as the stored hash.
std::string key_hash_of(const std::string& given) { return auth::is_token_hash(given) ? given : auth::sha256_hex(given); }

/// The spend log filters a query names (docs/admin_api.md "GET /spend/logs"): api_key (the secret or
/// its hash), user_id, team_id, request_id, start_date, end_date, model, status, degradation.
std::optional<core::Error> read_spend_filter(const std::string& target, store::SpendLogFilter& f) {
  if (auto k = query_param(target, "api_key"); k && !k->empty()) f.api_key = key_hash_of(*k);
  if (auto v = query_param(target, "user_id"); v && !v->empty()) f.user = *v;
  if (auto v = query_param(target, "team_id"); v && !v->empty()) f.team_id = *v;
  if (auto v = query_param(target, "request_id"); v && !v->empty()) f.request_id = *v;
  if (auto v = query_param(target, "model"); v && !v->empty()) f.model = *v;
  if (auto v = query_param(target, "status"); v && !v->empty()) {
    if (*v != "success" && *v != "failure")
      return bad_field("status", "status must be success or failure (got \"" + *v + "\")");
    f.status = *v;
  }
  if (auto v = query_param(target, "degradation"); v && !v->empty()) {
    if (*v == "none") f.degradation = "";
    else if (*v == "any") f.degraded = true;
    else if (auto mode = config::parse_degradation_mode(*v); mode && *mode != config::DegradationMode::none)
      f.degradation = std::string(config::to_string(*mode));
    else
      return bad_field("degradation", "degradation must be none, any or a degradation mode (equivalent, reduced, "
                                      "stale_cache, deferred, fail_fast), got \"" + *v + "\"");
  }
  return read_dates(target, f);
}

/// GET /spend/logs. A virtual key reads its own rows only: api_key is forced to its own.
Reply spend_logs(const Context& c, const Call& q) {
  const auto& target = q.target;
  store::SpendLogFilter f;
  TG_TRY_R(read_spend_filter(target, f));
  if (!q.is_master()) f.api_key = q.caller_token();
  auto limit = positive_query_int(target, "limit", f.limit);
  if (!limit) return std::unexpected(limit.error());
  f.limit = *limit;
  if (auto v = query_param(target, "offset"); v && *v != "0") {
    auto offset = positive_query_int(target, "offset", 0);
    if (!offset) return std::unexpected(bad_field("offset", "offset must be a non-negative integer"));
    f.offset = *offset;
  }
  auto rows = c.store().query_spend_logs(f);
  if (!rows) return std::unexpected(store_error(rows.error(), "spend logs"));
  json::array a;
  for (const auto& r : *rows) a.push_back(spend_log_object(r));
  return json::value(std::move(a));
}

Reply global_spend(const Context& c) {
  auto g = c.store().global_spend(std::nullopt, std::nullopt);
  if (!g) return std::unexpected(store_error(g.error(), "global spend"));
  json::object o;
  o["spend"] = dollars_json(g->total_spend_nanos);
  json::value max = nullptr;
  if (const auto& mb = c.deps().config->litellm_settings.max_budget)
    if (auto n = budget::parse_dollars(*mb)) max = dollars_json(*n);
  o["max_budget"] = max;
  o["requests"] = g->requests;
  o["total_tokens"] = g->total_tokens;
  return json::value(std::move(o));
}


/// GET /spend/keys[?limit=N]: every key object (with its ledger figures), the most spent first
/// (by the spend log's totals per key, exact nano-dollars; ties by token).
Reply spend_keys(const Context& c, const std::string& target) {
  auto limit = positive_query_int(target, "limit", 1000);
  if (!limit) return std::unexpected(limit.error());
  store::KeyFilter kf;
  kf.limit = 1'000'000;
  auto keys = c.store().list_keys(kf);
  if (!keys) return std::unexpected(store_error(keys.error(), "keys"));
  auto g = c.store().global_spend(std::nullopt, std::nullopt);
  if (!g) return std::unexpected(store_error(g.error(), "global spend"));
  std::unordered_map<std::string, std::int64_t> spent;
  for (const auto& b : g->by_key) spent[b.name] = b.spend_nanos;
  auto nanos = [&](const store::KeyRecord& k) {
    auto it = spent.find(k.token_hash);
    return it == spent.end() ? std::int64_t{0} : it->second;
  };
  std::ranges::sort(*keys, [&](const store::KeyRecord& a, const store::KeyRecord& b) {
    const auto x = nanos(a), y = nanos(b);
    return x != y ? x > y : a.token_hash < b.token_hash;
  });
  json::array out;
  for (const auto& k : *keys) {
    if (static_cast<std::int64_t>(out.size()) >= *limit) break;
    out.push_back(c.key_with_spend(k));
  }
  return json::value(std::move(out));
}

/// Per-model totals inside one report group.
struct ModelTotals {
  std::int64_t spend_nanos = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
};
struct GroupTotals {
  std::int64_t spend_nanos = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::map<std::string, ModelTotals> models;
  void add(const store::SpendLogRow& r) {
    // Saturating: rows of absurd usage (10^15 tokens, charges at kMaxNanos) must not wrap.
    auto add_to = [&r](auto& t) {
      t.spend_nanos = budget::saturating_add(t.spend_nanos, r.spend_nanos);
      t.prompt_tokens = budget::saturating_add(t.prompt_tokens, r.prompt_tokens);
      t.completion_tokens = budget::saturating_add(t.completion_tokens, r.completion_tokens);
    };
    add_to(*this);
    add_to(models[r.model_group.empty() ? r.requested_model : r.model_group]);
  }
};

/// GET /global/spend/report?start_date=&end_date=&group_by=team|customer|api_key[&api_key=
/// &team_id=&customer_id=&internal_user_id=]: LiteLLM's spend report. team / customer: one entry
/// per UTC day, [{"group_by_day": "YYYY-MM-DD", "teams"|"customers": [{"team_name"|"customer",
/// "total_spend", "metadata": [{"model", "spend", "total_tokens"}]}]}]; api_key: [{"api_key",
/// "total_cost", "total_input_tokens", "total_output_tokens", "model_details": [{"model",
/// "total_cost", "prompt_tokens", "completion_tokens"}]}]. Both dates are required (as in LiteLLM).
Reply global_spend_report(const Context& c, const std::string& target) {
  store::SpendLogFilter f;
  for (const char* name : {"start_date", "end_date"})
    if (auto v = query_param(target, name); !v || v->empty())
      return std::unexpected(bad_field(name, std::string("missing required query parameter: ") + name + " (YYYY-MM-DD)"));
  TG_TRY_R(read_dates(target, f));
  const auto group_by = query_param(target, "group_by").value_or("team");
  if (group_by != "team" && group_by != "customer" && group_by != "api_key")
    return std::unexpected(bad_field("group_by", "group_by must be team, customer or api_key (got \"" + group_by + "\")"));
  if (auto v = query_param(target, "api_key"); v && !v->empty()) f.api_key = key_hash_of(*v);
  if (auto v = query_param(target, "team_id"); v && !v->empty()) f.team_id = *v;
  if (auto v = query_param(target, "internal_user_id"); v && !v->empty()) f.user = *v;
  const auto customer = query_param(target, "customer_id").value_or("");
  f.limit = 10'000'000;
  auto rows = c.store().query_spend_logs(f);
  if (!rows) return std::unexpected(store_error(rows.error(), "spend logs"));
  if (group_by == "api_key") {
    std::map<std::string, GroupTotals> by_key;
    for (const auto& r : *rows)
      if (customer.empty() || r.end_user == customer) by_key[r.api_key].add(r);
    json::array out;
    for (const auto& [key, g] : by_key) {
      json::object o;
      o["api_key"] = key;
      o["total_cost"] = dollars_json(g.spend_nanos);
      o["total_input_tokens"] = g.prompt_tokens;
      o["total_output_tokens"] = g.completion_tokens;
      json::array details;
      for (const auto& [model, m] : g.models)
        details.push_back(json::object{{"model", model},
                                       {"total_cost", dollars_json(m.spend_nanos)},
                                       {"prompt_tokens", m.prompt_tokens},
                                       {"completion_tokens", m.completion_tokens}});
      o["model_details"] = std::move(details);
      out.push_back(std::move(o));
    }
    return json::value(std::move(out));
  }
  const bool teams = group_by == "team";
  // Team names as LiteLLM shows them: the alias, else the id; no team → "Unassigned".
  std::unordered_map<std::string, std::string> alias;
  if (teams)
    if (auto all = c.store().list_teams(); all)
      for (const auto& t : *all) alias[t.team_id] = t.team_alias.empty() ? t.team_id : t.team_alias;
  std::map<std::string, std::map<std::string, GroupTotals>> by_day;  // day → group → totals
  for (const auto& r : *rows) {
    if (!customer.empty() && r.end_user != customer) continue;
    const std::string day = auth::iso8601_utc(r.start_ms).substr(0, 10);
    std::string name = teams ? r.team_id : r.end_user;
    if (teams) name = name.empty() ? "Unassigned" : (alias.contains(name) ? alias[name] : name);
    by_day[day][name].add(r);
  }
  json::array out;
  for (const auto& [day, groups] : by_day) {
    json::array ga;
    for (const auto& [name, g] : groups) {
      json::object o;
      o[teams ? "team_name" : "customer"] = name;
      o["total_spend"] = dollars_json(g.spend_nanos);
      json::array meta;
      for (const auto& [model, m] : g.models)
        meta.push_back(json::object{{"model", model},
                                    {"spend", dollars_json(m.spend_nanos)},
                                    {"total_tokens", budget::saturating_add(m.prompt_tokens, m.completion_tokens)}});
      o["metadata"] = std::move(meta);
      ga.push_back(std::move(o));
    }
    out.push_back(json::object{{"group_by_day", day}, {teams ? "teams" : "customers", std::move(ga)}});
  }
  return json::value(std::move(out));
}

}  // namespace

std::span<const Route> spend_routes() {
  static constexpr Route routes[] = {
      {"/spend/logs", Method::get, [](const Context& c, const Call& q) { return spend_logs(c, q); }, Access::key_read},
      {"/spend/keys", Method::get, [](const Context& c, const Call& q) { return spend_keys(c, q.target); }},
      {"/global/spend", Method::get, [](const Context& c, const Call&) { return global_spend(c); }},
      {"/global/spend/report", Method::get,
       [](const Context& c, const Call& q) { return global_spend_report(c, q.target); }},
  };
  return routes;
}

}  // namespace tollgate::api::admin
