#include "api/admin_fields.hpp"

#include <charconv>
#include <cmath>
#include <ctime>
#include <set>

#include <boost/json.hpp>

#include "core/json_kind.hpp"

#include "auth/caller_names.hpp"
#include "budget/money.hpp"
#include "budget/window.hpp"

namespace tollgate::api::admin {
namespace json = boost::json;

namespace {


const json::value* present(const json::object& body, std::string_view field) {
  const auto* v = body.if_contains(field);
  return (v == nullptr || v->is_null()) ? nullptr : v;
}

}  // namespace

core::Error bad_field(std::string_view field, std::string message) {
  return core::Error::caller(400, "invalid_request_error", std::move(message), std::string(field), "400");
}

std::optional<core::Error> check_fields(const json::object& body, std::initializer_list<std::string_view> known,
                                        std::initializer_list<std::string_view> tolerated) {
  std::vector<std::string> unknown;
  for (const auto& kv : body) {
    const std::string_view k = kv.key();
    bool ok = false;
    for (auto n : known) ok = ok || n == k;
    for (auto n : tolerated) ok = ok || n == k;
    if (!ok) unknown.emplace_back(k);
  }
  if (unknown.empty()) return std::nullopt;
  std::string list;
  for (const auto& u : unknown) list += (list.empty() ? "" : ", ") + u;
  return bad_field(unknown.front(), "unknown field(s): " + list);
}

Field<std::optional<std::string>> get_string(const json::object& body, std::string_view field) {
  const auto* v = present(body, field);
  if (!v) return std::optional<std::string>{};
  if (!v->is_string()) return std::unexpected(bad_field(field, std::string(field) + " must be a string, got " + core::json_kind_name(*v)));
  return std::optional<std::string>(std::string(v->as_string()));
}

Field<std::string> require_string(const json::object& body, std::string_view field) {
  auto s = get_string(body, field);
  if (!s) return std::unexpected(s.error());
  if (!*s || (*s)->empty()) return std::unexpected(bad_field(field, "missing required field: " + std::string(field)));
  return **s;
}

Field<std::optional<std::string>> get_name(const json::object& body, std::string_view field) {
  auto s = get_string(body, field);
  if (!s || !*s) return s;
  if (auto p = auth::name_problem(field, **s)) return std::unexpected(bad_field(field, std::move(p->message)));
  return s;
}

Field<std::string> require_name(const json::object& body, std::string_view field) {
  auto s = require_string(body, field);
  if (!s) return s;
  if (auto p = auth::name_problem(field, *s)) return std::unexpected(bad_field(field, std::move(p->message)));
  return s;
}

Field<std::optional<std::vector<std::string>>> get_name_list(const json::object& body, std::string_view field,
                                                             std::size_t max_items) {
  auto list = get_string_list(body, field);
  if (!list || !*list) return list;
  if ((*list)->size() > max_items)
    return std::unexpected(bad_field(field, std::string(field) + " has " + std::to_string((*list)->size()) +
                                                " entries; the limit is " + std::to_string(max_items)));
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    const std::string at = std::string(field) + "[" + std::to_string(i) + "]";
    if (auto p = auth::name_problem(at, (**list)[i])) return std::unexpected(bad_field(at, std::move(p->message)));
  }
  return list;
}

Field<std::optional<bool>> get_bool(const json::object& body, std::string_view field) {
  const auto* v = present(body, field);
  if (!v) return std::optional<bool>{};
  if (!v->is_bool()) return std::unexpected(bad_field(field, std::string(field) + " must be a boolean, got " + core::json_kind_name(*v)));
  return std::optional<bool>(v->as_bool());
}

Field<std::optional<std::int64_t>> get_count(const json::object& body, std::string_view field) {
  const auto* v = present(body, field);
  if (!v) return std::optional<std::int64_t>{};
  std::int64_t n = 0;
  if (v->is_int64()) n = v->as_int64();
  else if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) n = static_cast<std::int64_t>(v->as_uint64());
  else if (v->is_double() && std::isfinite(v->as_double()) && std::trunc(v->as_double()) == v->as_double() &&
           std::fabs(v->as_double()) < 9e15)
    n = static_cast<std::int64_t>(v->as_double());
  else
    return std::unexpected(bad_field(field, std::string(field) + " must be a non-negative integer, got " + core::json_kind_name(*v)));
  if (n < 0) return std::unexpected(bad_field(field, std::string(field) + " must be >= 0"));
  return std::optional<std::int64_t>(n);
}

Field<std::int64_t> money_of(const json::value& v, std::string_view field) {
  std::string text;
  if (v.is_string()) text = std::string(v.as_string());
  else if (v.is_number()) text = json::serialize(v);  // shortest round-trip decimal text
  else return std::unexpected(bad_field(field, std::string(field) + " must be a number of dollars, got " + core::json_kind_name(v)));
  if (!text.empty() && text.front() == '-')
    return std::unexpected(bad_field(field, std::string(field) + " must be >= 0 (dollars), got " + text));
  auto n = budget::parse_dollars(text);
  if (!n) return std::unexpected(bad_field(field, std::string(field) + ": " + n.error()));
  return *n;
}

Field<std::optional<std::int64_t>> get_money(const json::object& body, std::string_view field) {
  const auto* v = present(body, field);
  if (!v) return std::optional<std::int64_t>{};
  auto n = money_of(*v, field);
  if (!n) return std::unexpected(n.error());
  return std::optional<std::int64_t>(*n);
}

Field<std::optional<std::vector<std::string>>> get_string_list(const json::object& body, std::string_view field) {
  const auto* v = present(body, field);
  if (!v) return std::optional<std::vector<std::string>>{};
  if (!v->is_array())
    return std::unexpected(bad_field(field, std::string(field) + " must be an array of strings, got " + core::json_kind_name(*v)));
  std::vector<std::string> out;
  for (const auto& item : v->as_array()) {
    if (!item.is_string())
      return std::unexpected(bad_field(field, std::string(field) + " must be an array of strings; found " + core::json_kind_name(item)));
    out.emplace_back(item.as_string());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Field<std::optional<std::string>> get_object_text(const json::object& body, std::string_view field) {
  const auto* v = present(body, field);
  if (!v) return std::optional<std::string>{};
  if (!v->is_object()) return std::unexpected(bad_field(field, std::string(field) + " must be an object, got " + core::json_kind_name(*v)));
  return std::optional<std::string>(json::serialize(*v));
}

Field<std::optional<std::string>> get_budget_duration(const json::object& body, std::string_view field) {
  auto s = get_string(body, field);
  if (!s || !*s) return s;
  if (auto p = budget::parse_budget_duration(**s); !p)
    return std::unexpected(bad_field(field, std::string(field) + ": " + p.error() + " (e.g. \"30s\", \"1h\", \"1d\", \"30d\", \"1mo\")"));
  return s;
}

std::expected<std::int64_t, std::string> parse_duration_ms(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0 || i > 9) return std::unexpected(std::string("expected <number><unit>, e.g. \"30s\", \"1h\", \"30d\""));
  std::int64_t n = 0;
  std::from_chars(text.data(), text.data() + i, n);
  const auto unit = text.substr(i);
  std::int64_t mult = 0;
  if (unit == "s") mult = 1000;
  else if (unit == "m") mult = 60'000;
  else if (unit == "h") mult = 3'600'000;
  else if (unit == "d") mult = 86'400'000;
  else if (unit == "w") mult = 7 * 86'400'000LL;
  else if (unit == "mo") mult = 30 * 86'400'000LL;
  else return std::unexpected("unknown unit \"" + std::string(unit) + "\" (s, m, h, d, w, mo)");
  if (n <= 0) return std::unexpected(std::string("duration must be positive"));
  return n * mult;
}

Field<std::optional<std::string>> get_budget_limits(const json::object& body) {
  constexpr std::string_view field = "budget_limits";
  const auto* v = present(body, field);
  if (!v) return std::optional<std::string>{};
  if (!v->is_array())
    return std::unexpected(bad_field(field, "budget_limits must be an array of {budget_duration, max_budget}"));
  json::array out;
  std::set<std::string> seen;
  std::size_t i = 0;
  for (const auto& item : v->as_array()) {
    const std::string at = "budget_limits[" + std::to_string(i++) + "]";
    if (!item.is_object()) return std::unexpected(bad_field(at, at + " must be an object"));
    const auto& o = item.as_object();
    if (auto e = check_fields(o, {"budget_duration", "max_budget"})) {
      e->param = at + "." + e->param;
      return std::unexpected(*e);
    }
    auto d = get_budget_duration(o, "budget_duration");
    if (!d) return std::unexpected(bad_field(at + ".budget_duration", d.error().message));
    if (!*d) return std::unexpected(bad_field(at + ".budget_duration", at + ".budget_duration is required"));
    auto m = get_money(o, "max_budget");
    if (!m) return std::unexpected(bad_field(at + ".max_budget", m.error().message));
    if (!*m) return std::unexpected(bad_field(at + ".max_budget", at + ".max_budget is required"));
    if (!seen.insert(**d).second)
      return std::unexpected(bad_field(at + ".budget_duration", "duplicate budget_duration " + **d + " in budget_limits"));
    json::object w;
    w["budget_duration"] = **d;
    w["max_budget"] = dollars_json(**m);
    out.push_back(std::move(w));
  }
  return std::optional<std::string>(json::serialize(out));
}

Field<std::optional<std::string>> get_model_max_budget(const json::object& body) {
  constexpr std::string_view field = "model_max_budget";
  const auto* v = present(body, field);
  if (!v) return std::optional<std::string>{};
  if (!v->is_object())
    return std::unexpected(bad_field(field, "model_max_budget must be an object {model_group: {max_budget, budget_duration?}}"));
  json::object out;
  for (const auto& kv : v->as_object()) {
    const std::string at = "model_max_budget." + std::string(kv.key());
    if (!kv.value().is_object()) return std::unexpected(bad_field(at, at + " must be an object {max_budget, budget_duration?}"));
    const auto& o = kv.value().as_object();
    if (auto e = check_fields(o, {"budget_duration", "max_budget"}, {"tpm_limit", "rpm_limit"})) {
      e->param = at + "." + e->param;
      return std::unexpected(*e);
    }
    auto d = get_budget_duration(o, "budget_duration");
    if (!d) return std::unexpected(bad_field(at + ".budget_duration", d.error().message));
    auto m = get_money(o, "max_budget");
    if (!m) return std::unexpected(bad_field(at + ".max_budget", m.error().message));
    if (!*m) return std::unexpected(bad_field(at + ".max_budget", at + ".max_budget is required"));
    json::object w;
    if (*d) w["budget_duration"] = **d;
    w["max_budget"] = dollars_json(**m);
    out[kv.key()] = std::move(w);
  }
  return std::optional<std::string>(json::serialize(out));
}

json::value dollars_json(std::int64_t nanos) {
  boost::system::error_code ec;
  auto v = json::parse(budget::format_dollars(nanos), ec);
  if (ec) return json::value(budget::to_dollars_for_display(nanos));
  return v;
}

json::value dollars_json(const std::optional<std::int64_t>& nanos) {
  return nanos ? dollars_json(*nanos) : json::value(nullptr);
}

json::value json_text(const std::string& text, json::value fallback) {
  if (text.empty()) return fallback;
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return ec ? fallback : v;
}

std::string url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') out.push_back(' ');
    else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::optional<std::string> query_param(std::string_view target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const auto part = rest.substr(0, amp);
    const auto eq = part.find('=');
    const auto k = url_decode(part.substr(0, eq));
    if (k == name) return eq == std::string_view::npos ? std::string() : url_decode(part.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::expected<std::int64_t, std::string> parse_iso_time_ms(std::string_view t) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  auto num = [&t](std::size_t pos, std::size_t len, int& out) {
    if (pos + len > t.size()) return false;
    for (std::size_t i = pos; i < pos + len; ++i)
      if (t[i] < '0' || t[i] > '9') return false;
    std::from_chars(t.data() + pos, t.data() + pos + len, out);
    return true;
  };
  const std::string bad = "expected an ISO 8601 date (2025-01-31) or date-time (2025-01-31T12:00:00Z)";
  if (!num(0, 4, y) || t.size() < 10 || t[4] != '-' || !num(5, 2, mo) || t[7] != '-' || !num(8, 2, d))
    return std::unexpected(bad);
  std::size_t pos = 10;
  std::int64_t frac_ms = 0, offset_s = 0;
  if (pos < t.size() && (t[pos] == 'T' || t[pos] == ' ')) {
    if (!num(pos + 1, 2, h) || t.size() < pos + 6 || t[pos + 3] != ':' || !num(pos + 4, 2, mi)) return std::unexpected(bad);
    pos += 6;
    if (pos < t.size() && t[pos] == ':') {
      if (!num(pos + 1, 2, s)) return std::unexpected(bad);
      pos += 3;
    }
    if (pos < t.size() && t[pos] == '.') {
      ++pos;
      int digits = 0;
      while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
        if (digits < 3) frac_ms = frac_ms * 10 + (t[pos] - '0');
        ++digits;
        ++pos;
      }
      for (int k = digits; k < 3; ++k) frac_ms *= 10;
    }
    if (pos < t.size() && (t[pos] == 'Z' || t[pos] == 'z')) ++pos;
    else if (pos < t.size() && (t[pos] == '+' || t[pos] == '-')) {
      int oh = 0, om = 0;
      const int sign = t[pos] == '-' ? -1 : 1;
      if (!num(pos + 1, 2, oh)) return std::unexpected(bad);
      pos += 3;
      if (pos < t.size() && t[pos] == ':') ++pos;
      if (!num(pos, 2, om)) return std::unexpected(bad);
      pos += 2;
      offset_s = sign * (oh * 3600 + om * 60);
    }
  }
  if (pos != t.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::unexpected(bad);
  // days_from_civil (Howard Hinnant), exact for the proleptic Gregorian calendar.
  const int yy = y - (mo <= 2);
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(yy - era * 400);
  const unsigned doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + static_cast<std::int64_t>(doe) - 719468;
  return ((days * 86400 + h * 3600 + mi * 60 + s) - offset_s) * 1000 + frac_ms;
}

}  // namespace tollgate::api::admin

namespace tollgate::api::admin {

std::optional<core::Error> apply_money(const json::object& body, std::string_view f, std::optional<std::int64_t>& out) {
  return apply(body, f, get_money, [&](auto v) { out = v; });
}
std::optional<core::Error> apply_count(const json::object& body, std::string_view f, std::optional<std::int64_t>& out) {
  return apply(body, f, get_count, [&](auto v) { out = v; });
}
std::optional<core::Error> apply_string(const json::object& body, std::string_view f, std::string& out) {
  return apply(body, f, get_string, [&](auto v) { out = v.value_or(""); });
}
std::optional<core::Error> apply_name(const json::object& body, std::string_view f, std::string& out) {
  return apply(body, f, get_name, [&](auto v) { out = v.value_or(""); });
}
std::optional<core::Error> apply_tags(const json::object& body, std::string_view f, std::vector<std::string>& out) {
  auto get = [](const json::object& b, std::string_view field) { return get_name_list(b, field, auth::kMaxRequestTags); };
  return apply(body, f, get, [&](auto v) { out = v.value_or(std::vector<std::string>{}); });
}
std::optional<core::Error> apply_list(const json::object& body, std::string_view f, std::vector<std::string>& out) {
  return apply(body, f, get_string_list, [&](auto v) { out = v.value_or(std::vector<std::string>{}); });
}
std::optional<core::Error> apply_object(const json::object& body, std::string_view f, std::string& out) {
  return apply(body, f, get_object_text, [&](auto v) { out = v.value_or(""); });
}
std::optional<core::Error> apply_duration(const json::object& body, std::string_view f, std::optional<std::string>& out) {
  return apply(body, f, get_budget_duration, [&](auto v) { out = v; });
}
std::optional<core::Error> apply_flag(const json::object& body, std::string_view f, bool& out) {
  return apply(body, f, get_bool, [&](auto v) { out = v.value_or(false); });
}

}  // namespace tollgate::api::admin
