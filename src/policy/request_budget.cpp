#include "policy/request_budget.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <tuple>

#include <boost/json.hpp>

namespace tollgate::policy {
namespace {

const config::GroupPolicyConfig* find_group(const config::FallbackPolicyConfig& fp, std::string_view group) {
  if (group.empty()) return nullptr;
  for (const config::GroupPolicyConfig& g : fp.model_groups)
    if (g.group == group) return &g;
  return nullptr;
}

void apply(RequestBudget& b, const config::RequestBudgetConfig& c) {
  if (c.max_retries) b.max_retries = std::max(0, *c.max_retries);
  if (c.max_fallbacks) b.max_fallbacks = std::max(0, *c.max_fallbacks);
  if (c.deadline) b.deadline = *c.deadline;
  if (c.min_time_left) b.min_time_left = std::max(milliseconds{0}, *c.min_time_left);
  if (c.first_token_timeout) b.first_token_timeout = *c.first_token_timeout;
  if (c.stream_idle_timeout) b.stream_idle_timeout = *c.stream_idle_timeout;
  if (c.stream_holdback) b.stream_holdback = std::max<std::int64_t>(0, *c.stream_holdback);
  if (c.max_request_cost) {
    // A value that does not parse is ignored here: the loader reports it with its YAML path.
    if (auto n = budget::parse_dollars(*c.max_request_cost)) b.max_request_cost = *n;
  }
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool equals_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trim(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

/// A plain non-negative decimal integer: digits only, no sign, no exponent, fits in `long long`.
std::optional<long long> parse_plain_int(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string field_error(std::string_view name, std::string_view value, std::string_view expected) {
  std::string out(name);
  out += ": invalid value \"";
  out += value.substr(0, 64);
  out += "\": expected ";
  out += expected;
  return out;
}

}  // namespace

RequestBudget configured_budget(const config::Config& cfg, std::string_view group) {
  RequestBudget b;
  b.max_retries = std::max(0, cfg.effective_num_retries);
  b.max_fallbacks = std::max(0, cfg.router_settings.max_fallbacks);
  b.deadline = cfg.effective_timeout;
  b.min_time_left = milliseconds{0};
  b.max_request_cost = budget::kMaxNanos;
  apply(b, cfg.fallback_policy.defaults.budgets);
  if (const config::GroupPolicyConfig* g = find_group(cfg.fallback_policy, group)) apply(b, g->budgets);
  return b;
}

RequestBudget tighten(RequestBudget b, const BudgetOverride& o, std::vector<std::string>* ignored) {
  auto note = [&](const char* header, const std::string& asked, const std::string& have) {
    if (ignored) ignored->push_back(std::string(header) + ": " + asked + " > " + have);
  };
  if (o.max_retries) {
    const int v = std::max(0, *o.max_retries);
    if (v <= b.max_retries)
      b.max_retries = v;
    else
      note(kHeaderMaxRetries, std::to_string(v), std::to_string(b.max_retries));
  }
  if (o.max_fallbacks) {
    const int v = std::max(0, *o.max_fallbacks);
    if (v <= b.max_fallbacks)
      b.max_fallbacks = v;
    else
      note(kHeaderMaxFallbacks, std::to_string(v), std::to_string(b.max_fallbacks));
  }
  if (o.deadline) {
    if (*o.deadline <= b.deadline)
      b.deadline = *o.deadline;
    else
      note(kHeaderDeadlineMs, std::to_string(o.deadline->count()), std::to_string(b.deadline.count()));
  }
  // A stream limit the group does not set is set by the override (no limit is the loosest).
  auto limit = [&](const char* header, const std::optional<milliseconds>& asked, std::optional<milliseconds>& have) {
    if (!asked) return;
    if (!have || *asked <= *have)
      have = *asked;
    else
      note(header, std::to_string(asked->count()), std::to_string(have->count()));
  };
  limit(kHeaderFirstTokenTimeoutMs, o.first_token_timeout, b.first_token_timeout);
  limit(kHeaderStreamIdleTimeoutMs, o.stream_idle_timeout, b.stream_idle_timeout);
  if (o.stream_holdback) {
    if (*o.stream_holdback >= b.stream_holdback)
      b.stream_holdback = *o.stream_holdback;
    else if (ignored)  // a hold-back lower than the group's is the loosening here
      ignored->push_back(std::string(kHeaderStreamHoldback) + ": " + std::to_string(*o.stream_holdback) + " < " +
                         std::to_string(b.stream_holdback));
  }
  if (o.max_request_cost) {
    const budget::Nanos v = std::max<budget::Nanos>(0, *o.max_request_cost);
    if (v <= b.max_request_cost)
      b.max_request_cost = v;
    else
      note(kHeaderMaxRequestCost, budget::format_dollars(v), budget::format_dollars(b.max_request_cost));
  }
  return b;
}

std::optional<std::string> parse_override_field(std::string_view name, std::string_view value, BudgetOverride& o) {
  // Header names (case-insensitive, as HTTP header names are); the bare field names are accepted
  // too for key metadata (`tollgate_request_budget: {max_retries: 1, deadline_ms: 5000}`).
  auto is = [&](const char* header) { return equals_ci(name, header); };
  auto is_field = [&](std::string_view field) { return equals_ci(name, field); };
  const std::string_view v = trim(value);
  constexpr long long kIntMax = std::numeric_limits<int>::max();

  if (is(kHeaderMaxRetries) || is_field("max_retries")) {
    auto n = parse_plain_int(v);
    if (!n || *n > kIntMax) return field_error(name, value, "a non-negative integer");
    o.max_retries = static_cast<int>(*n);
    return std::nullopt;
  }
  if (is(kHeaderMaxFallbacks) || is_field("max_fallbacks")) {
    auto n = parse_plain_int(v);
    if (!n || *n > kIntMax) return field_error(name, value, "a non-negative integer");
    o.max_fallbacks = static_cast<int>(*n);
    return std::nullopt;
  }
  if (is(kHeaderDeadlineMs) || is_field("deadline_ms")) {
    auto n = parse_plain_int(v);
    if (!n || *n <= 0) return field_error(name, value, "a positive integer number of milliseconds");
    o.deadline = milliseconds{*n};
    return std::nullopt;
  }
  for (auto [header, field, slot] : {std::tuple{kHeaderFirstTokenTimeoutMs, "first_token_timeout_ms", &o.first_token_timeout},
                                     std::tuple{kHeaderStreamIdleTimeoutMs, "stream_idle_timeout_ms", &o.stream_idle_timeout}}) {
    if (!is(header) && !is_field(field)) continue;
    auto n = parse_plain_int(v);
    if (!n || *n <= 0) return field_error(name, value, "a positive integer number of milliseconds");
    *slot = milliseconds{*n};
    return std::nullopt;
  }
  if (is(kHeaderStreamHoldback) || is_field("stream_holdback_tokens")) {
    if (equals_ci(v, "all")) {
      o.stream_holdback = kHoldWholeAnswer;
      return std::nullopt;
    }
    auto n = parse_plain_int(v);
    if (!n) return field_error(name, value, "a non-negative integer number of output events, or \"all\"");
    o.stream_holdback = *n;
    return std::nullopt;
  }
  if (is(kHeaderMaxRequestCost) || is_field("max_request_cost")) {
    auto n = budget::parse_dollars(v);
    if (!n) return field_error(name, value, "a non-negative decimal dollar amount (" + n.error() + ")");
    o.max_request_cost = *n;
    return std::nullopt;
  }
  return std::string(name) + ": unknown request budget field";
}

std::vector<std::string> read_key_budget(std::string_view metadata_json, BudgetOverride& o) {
  std::vector<std::string> problems;
  if (metadata_json.empty()) return problems;
  boost::system::error_code ec;
  auto md = boost::json::parse(metadata_json, ec);
  const boost::json::value* rb =
      !ec && md.is_object() ? md.as_object().if_contains("tollgate_request_budget") : nullptr;
  if (rb == nullptr || !rb->is_object()) return problems;
  for (const char* field : {"max_retries", "max_fallbacks", "deadline_ms", "max_request_cost", "first_token_timeout_ms",
                            "stream_idle_timeout_ms", "stream_holdback_tokens"}) {
    const auto* v = rb->as_object().if_contains(field);
    if (v == nullptr || v->is_null()) continue;
    const std::string text = v->is_string() ? std::string(v->as_string()) : boost::json::serialize(*v);
    if (auto bad = parse_override_field(field, text, o))
      problems.push_back("tollgate_request_budget." + std::string(field) + ": " + *bad);
  }
  return problems;
}

}  // namespace tollgate::policy
