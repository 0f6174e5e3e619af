// GET /tollgate/overview (docs/admin_api.md): the admin UI's first page. Every figure is one SQL
// aggregate over the spend log (store::Store::query_spend_totals): sums stay integer nano-dollars
// until rendered; no row is loaded.
#include <algorithm>
#include <unordered_map>

#include <boost/json.hpp>

#include "api/admin_ui.hpp"
#include "api/ops.hpp"
#include "auth/identities.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::api::admin {
namespace json = boost::json;

namespace {

constexpr std::int64_t kHourMs = 3'600'000;
constexpr std::int64_t kDayMs = 24 * kHourMs;
constexpr std::int64_t kTopN = 10;

std::int64_t floor_to(std::int64_t ms, std::int64_t unit) {
  const auto q = ms / unit;
  return (ms % unit < 0 ? q - 1 : q) * unit;
}

/// 00:00 UTC of the first day of `ms`'s month.
std::int64_t month_start_ms(std::int64_t ms) {
  using namespace std::chrono;
  const sys_days day{floor<days>(sys_time<milliseconds>(milliseconds(ms)))};
  const year_month_day ymd{day};
  return duration_cast<milliseconds>(sys_days{ymd.year() / ymd.month() / 1}.time_since_epoch()).count();
}

json::value text_or_null(const std::string* s) { return s && !s->empty() ? json::value(*s) : json::value(nullptr); }

}  // namespace

std::expected<BucketPlan, core::Error> plan_buckets(std::int64_t start_ms, std::int64_t end_ms, std::int64_t bucket_ms,
                                                   std::int64_t max_buckets) {
  BucketPlan p;
  p.bucket_ms = bucket_ms;
  p.origin_ms = floor_to(start_ms, bucket_ms);
  // Overflow-checked: a range of the whole int64 line must not wrap into a small count.
  std::int64_t span = 0;
  const bool huge = __builtin_sub_overflow(end_ms, p.origin_ms, &span);
  const std::int64_t count = huge ? max_buckets + 1 : span / bucket_ms + (span % bucket_ms != 0 ? 1 : 0);
  if (count > max_buckets) {
    const std::string n = huge ? "more than " + std::to_string(max_buckets) : std::to_string(count);
    return std::unexpected(bad_field("bucket", "the range holds " + n + " buckets; at most " +
                                                   std::to_string(max_buckets) +
                                                   ": use bucket=day or a shorter range"));
  }
  p.count = count;
  return p;
}

json::array series_json(const BucketPlan& plan, const std::vector<store::SpendTotals>& totals) {
  json::array out;
  out.reserve(static_cast<std::size_t>(plan.count));
  auto it = totals.begin();
  for (std::int64_t b = 0; b < plan.count; ++b) {
    while (it != totals.end() && it->bucket < b) ++it;
    const bool hit = it != totals.end() && it->bucket == b;
    json::object o;
    o["t"] = auth::iso8601_utc(plan.origin_ms + b * plan.bucket_ms);
    o["spend"] = dollars_json(hit ? it->spend_nanos : 0);
    o["requests"] = hit ? it->requests : 0;
    o["errors"] = hit ? it->errors : 0;
    out.push_back(std::move(o));
  }
  return out;
}

Reply overview(const Context& c, const Call& q) {
  const auto& target = q.target;
  const std::int64_t now = c.now();
  const auto bucket_name = query_param(target, "bucket").value_or("hour");
  std::int64_t bucket_ms = 0;
  if (bucket_name == "hour") bucket_ms = kHourMs;
  else if (bucket_name == "day") bucket_ms = kDayMs;
  else return std::unexpected(bad_field("bucket", "bucket must be hour or day (got \"" + bucket_name + "\")"));

  std::optional<std::int64_t> start, end;
  if (auto v = query_param(target, "start_date"); v && !v->empty()) {
    auto ms = parse_iso_time_ms(*v);
    if (!ms) return std::unexpected(bad_field("start_date", "start_date: " + ms.error()));
    start = *ms;
  }
  if (auto v = query_param(target, "end_date"); v && !v->empty()) {
    auto ms = parse_iso_time_ms(*v);
    if (!ms) return std::unexpected(bad_field("end_date", "end_date: " + ms.error()));
    end = v->size() == 10 ? *ms + kDayMs : *ms;  // a bare date includes that whole day
  }
  if (!end) end = start ? std::max(now, *start + 1) : now;
  if (!start) start = *end - kDayMs;
  if (*end <= *start) return std::unexpected(bad_field("end_date", "end_date must be after start_date"));
  auto plan = plan_buckets(*start, *end, bucket_ms);
  if (!plan) return std::unexpected(plan.error());

  store::SpendLogFilter base;
  if (!q.is_master()) base.api_key = q.caller_token();
  auto totals = [&](store::SpendGroupBy by, std::optional<std::int64_t> from, std::optional<std::int64_t> to,
                    std::int64_t limit) -> Field<std::vector<store::SpendTotals>> {
    store::SpendTotalsQuery tq;
    tq.filter = base;
    tq.filter.start_ms = from;
    tq.filter.end_ms = to;
    tq.by = by;
    tq.limit = limit;
    if (by == store::SpendGroupBy::time_bucket) {
      tq.origin_ms = plan->origin_ms;
      tq.bucket_ms = plan->bucket_ms;
    }
    auto r = c.store().query_spend_totals(tq);
    if (!r) return std::unexpected(store_error(r.error(), "spend totals"));
    return std::move(*r);
  };
  auto sum = [&](std::optional<std::int64_t> from, std::optional<std::int64_t> to) -> Field<std::int64_t> {
    auto r = totals(store::SpendGroupBy::none, from, to, 0);
    if (!r) return std::unexpected(r.error());
    return r->empty() ? 0 : r->front().spend_nanos;
  };

  json::object spend;
  auto today = sum(floor_to(now, kDayMs), std::nullopt);
  if (!today) return std::unexpected(today.error());
  auto month = sum(month_start_ms(now), std::nullopt);
  if (!month) return std::unexpected(month.error());
  auto range = sum(*start, *end);
  if (!range) return std::unexpected(range.error());
  spend["today"] = dollars_json(*today);
  spend["month"] = dollars_json(*month);
  spend["range"] = dollars_json(*range);

  auto series = totals(store::SpendGroupBy::time_bucket, *start, *end, 0);
  if (!series) return std::unexpected(series.error());
  auto groups = totals(store::SpendGroupBy::model_group, *start, *end, 0);
  if (!groups) return std::unexpected(groups.error());
  auto keys = totals(store::SpendGroupBy::api_key, *start, *end, kTopN);
  if (!keys) return std::unexpected(keys.error());
  auto teams = totals(store::SpendGroupBy::team_id, *start, *end, kTopN);
  if (!teams) return std::unexpected(teams.error());
  auto models = totals(store::SpendGroupBy::model, *start, *end, kTopN);
  if (!models) return std::unexpected(models.error());

  std::stable_sort(groups->begin(), groups->end(), [](const store::SpendTotals& a, const store::SpendTotals& b) {
    return a.requests != b.requests ? a.requests > b.requests : a.name < b.name;
  });
  json::array by_group;
  for (const auto& g : *groups) {
    json::object o;
    o["model_group"] = g.name;
    o["requests"] = g.requests;
    o["errors"] = g.errors;
    o["error_rate"] = g.requests ? static_cast<double>(g.errors) / static_cast<double>(g.requests) : 0.0;
    o["spend"] = dollars_json(g.spend_nanos);
    by_group.push_back(std::move(o));
  }
  const auto index = c.deps().identities->current();
  // One entry per top spender, its alias (or null) read from the identity index.
  const auto top = [](const std::vector<store::SpendTotals>& rows, std::string_view id_field, std::string_view alias_field,
                      const auto& alias_of) {
    json::array out;
    for (const auto& r : rows) {
      json::object o;
      o[id_field] = r.name;
      o[alias_field] = text_or_null(alias_of(r.name));
      o["spend"] = dollars_json(r.spend_nanos);
      out.push_back(std::move(o));
    }
    return out;
  };
  json::array top_keys = top(*keys, "token", "key_alias", [&](const std::string& id) -> const std::string* {
    const auto rec = index->key(id);
    return rec ? &rec->key_alias : nullptr;
  });
  json::array top_teams = top(*teams, "team_id", "team_alias", [&](const std::string& id) -> const std::string* {
    const auto rec = index->team(id);
    return rec ? &rec->team_alias : nullptr;
  });
  json::array top_models;
  for (const auto& m : *models)
    top_models.push_back(json::object{{"model", m.name}, {"spend", dollars_json(m.spend_nanos)}});

  json::array alerts;
  if (q.is_master() && c.deps().services)
    if (auto s = c.deps().services()) alerts = alerts_json(*s);

  json::object o;
  o["start"] = auth::iso8601_utc(*start);
  o["end"] = auth::iso8601_utc(*end);
  o["bucket"] = bucket_name;
  o["spend"] = std::move(spend);
  o["series"] = series_json(*plan, *series);
  o["by_model_group"] = std::move(by_group);
  o["top_keys"] = std::move(top_keys);
  o["top_teams"] = std::move(top_teams);
  o["top_models"] = std::move(top_models);
  o["alerts"] = std::move(alerts);
  return json::value(std::move(o));
}

}  // namespace tollgate::api::admin
