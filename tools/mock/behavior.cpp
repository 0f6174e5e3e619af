// Behaviour objects: parsing (JSON and query-string directives), merging, scripted queues.
#include "mock.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse_query.hpp>

#include <charconv>
#include <cmath>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace tollgate::mock {

namespace {

bool to_int(const boost::json::value& v, std::int64_t& out) {
  if (v.is_int64()) {
    out = v.get_int64();
    return true;
  }
  if (v.is_uint64()) {
    auto u = v.get_uint64();
    out = u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
    return true;
  }
  if (v.is_double()) {
    double d = v.get_double();
    if (!std::isfinite(d)) return false;
    if (d > 9e18) d = 9e18;
    if (d < -9e18) d = -9e18;
    out = static_cast<std::int64_t>(d);
    return true;
  }
  return false;
}

bool to_double(const boost::json::value& v, double& out) {
  if (v.is_number()) {
    boost::system::error_code ec;
    out = v.to_number<double>(ec);
    return !ec && std::isfinite(out);
  }
  return false;
}

// A JSON object, or a string holding one's text, serialized; nullopt for anything else.
std::optional<std::string> object_text(const boost::json::value& v) {
  if (v.is_object()) return boost::json::serialize(v);
  if (!v.is_string()) return std::nullopt;
  boost::system::error_code ec;
  auto parsed = boost::json::parse(v.get_string(), ec);
  if (ec || !parsed.is_object()) return std::nullopt;
  return boost::json::serialize(parsed);
}

std::int64_t clamp64(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// The boolean fields, by name (null when `key` is not one).
std::optional<bool>* bool_field(Behavior& b, std::string_view key) {
  if (key == "ignore_max_tokens") return &b.ignore_max_tokens;
  if (key == "fill_max_tokens") return &b.fill_max_tokens;
  if (key == "reasoning_outside") return &b.reasoning_outside;
  if (key == "bill_on_cancel") return &b.bill_on_cancel;
  if (key == "echo_params") return &b.echo_params;
  if (key == "reject_prefill") return &b.reject_prefill;
  return nullptr;
}

// The non-negative count fields added with the billing kinds (null when `key` is not one).
// Out-of-range values are rejected rather than clamped.
std::optional<std::int64_t>* count_field(Behavior& b, std::string_view key) {
  if (key == "reasoning_tokens") return &b.reasoning_tokens;
  if (key == "cache_write_tokens") return &b.cache_write_tokens;
  if (key == "cache_write_1h_tokens") return &b.cache_write_1h_tokens;
  if (key == "audio_input_tokens") return &b.audio_input_tokens;
  if (key == "audio_output_tokens") return &b.audio_output_tokens;
  if (key == "rejected_prediction_tokens") return &b.rejected_prediction_tokens;
  if (key == "accepted_prediction_tokens") return &b.accepted_prediction_tokens;
  if (key == "web_search_calls") return &b.web_search_calls;
  if (key == "image_tokens") return &b.image_tokens;
  if (key == "pdf_tokens_per_page") return &b.pdf_tokens_per_page;
  if (key == "stall_after_tokens") return &b.stall_after_tokens;
  if (key == "truncate_after_tokens") return &b.truncate_after_tokens;
  return nullptr;
}

// Prompt-side counts may be as large as kMaxPromptCount, the others kMaxCompletionTokens.
bool prompt_side(std::string_view key) {
  return key == "cache_write_tokens" || key == "cache_write_1h_tokens" || key == "audio_input_tokens";
}

std::optional<UsageStyle> usage_style_of(std::string_view s) {
  if (s == "normal") return UsageStyle::normal;
  if (s == "omit") return UsageStyle::omit;
  if (s == "null") return UsageStyle::null;
  if (s == "every_chunk") return UsageStyle::every_chunk;
  if (s == "with_finish") return UsageStyle::with_finish;
  if (s == "string_counts") return UsageStyle::string_counts;
  return std::nullopt;
}

template <class T>
void override_with(std::optional<T>& low, const std::optional<T>& high) {
  if (high) low = high;
}

bool set_field(Behavior& b, std::string_view key, const boost::json::value& v, std::string& err) {
  auto bad = [&](std::string_view what) {
    err = "behavior field '" + std::string(key) + "' must be " + std::string(what);
    return false;
  };
  std::int64_t i = 0;
  if (key == "status") {
    if (!to_int(v, i)) return bad("an integer");
    if (i < 100 || i > 999) return bad("an HTTP status (100-999)");
    b.status = static_cast<int>(i);
  } else if (key == "error") {
    if (!v.is_string()) return bad("a string");
    b.error = std::string(v.get_string());
  } else if (key == "fault") {
    if (!v.is_string()) return bad("a string");
    std::string f(v.get_string());
    if (f != "reset" && f != "hang" && f != "truncate" && f != "garbage" && f != "oversized" &&
        f != "empty" && f != "no_done" && f != "truncate_before_usage" && f != "malformed_event" &&
        f != "stall" && f != "conflicting_framing" && f != "extra_bytes" && f != "none" && !f.empty())
      return bad(
          "one of reset, hang, truncate, garbage, oversized, empty, no_done, "
          "truncate_before_usage, malformed_event, stall, conflicting_framing, extra_bytes, none");
    b.fault = f == "none" ? std::string() : f;
  } else if (key == "retry_after") {
    if (v.is_string()) {
      b.retry_after = std::string(v.get_string());
    } else {
      double d = 0;
      if (!to_double(v, d) || d < 0) return bad("a non-negative number or a string");
      b.retry_after = std::to_string(static_cast<std::int64_t>(std::ceil(d)));
    }
  } else if (key == "retry_after_ms") {
    if (!to_int(v, i) || i < 0) return bad("a non-negative integer");
    b.retry_after_ms = i;
  } else if (key == "latency_ms") {
    if (!to_int(v, i)) return bad("an integer");
    b.latency_ms = clamp64(i, 0, kMaxDelayMs);
  } else if (key == "first_token_ms") {
    if (!to_int(v, i)) return bad("an integer");
    b.first_token_ms = clamp64(i, 0, kMaxDelayMs);
  } else if (key == "tokens_per_second") {
    double d = 0;
    if (!to_double(v, d) || d < 0) return bad("a non-negative number");
    b.tokens_per_second = d;
  } else if (key == "completion_tokens") {
    if (!to_int(v, i)) return bad("an integer");
    b.completion_tokens = clamp64(i, 0, kMaxCompletionTokens);
  } else if (key == "prompt_tokens") {
    if (!to_int(v, i)) return bad("an integer");
    b.prompt_tokens = clamp64(i, 0, INT64_MAX / 4);
  } else if (key == "cached_tokens") {
    if (!to_int(v, i)) return bad("an integer");
    b.cached_tokens = clamp64(i, 0, INT64_MAX / 4);
  } else if (key == "content") {
    if (!v.is_string()) return bad("a string");
    b.content = std::string(v.get_string());
  } else if (key == "block_reason") {
    if (!v.is_string() || v.get_string().empty() || v.get_string().size() > 64)
      return bad("a non-empty string of at most 64 characters");
    b.block_reason = std::string(v.get_string());
  } else if (key == "tool_call") {
    if (!v.is_string() || v.get_string().empty() || v.get_string().size() > 64)
      return bad("a non-empty function name of at most 64 characters");
    b.tool_call = std::string(v.get_string());
  } else if (key == "tool_arguments" || key == "usage") {
    auto text = object_text(v);
    if (!text) return bad("a JSON object (or its text)");
    (key == "usage" ? b.usage : b.tool_arguments) = std::move(*text);
  } else if (auto* flag = bool_field(b, key)) {
    if (!v.is_bool()) return bad("a boolean");
    *flag = v.get_bool();
  } else if (auto* count = count_field(b, key)) {
    std::int64_t hi = prompt_side(key) ? kMaxPromptCount : kMaxCompletionTokens;
    if (!to_int(v, i) || i < 0 || i > hi || (v.is_double() && v.get_double() != std::floor(v.get_double())))
      return bad("an integer from 0 to " + std::to_string(hi));
    *count = i;
  } else if (key == "service_tier") {
    if (!v.is_string() || v.get_string().empty() || v.get_string().size() > 64)
      return bad("a non-empty string of at most 64 characters");
    b.service_tier = std::string(v.get_string());
  } else if (key == "tool_calls") {
    if (!to_int(v, i) || i < 1 || i > 8 || (v.is_double() && v.get_double() != std::floor(v.get_double())))
      return bad("an integer from 1 to 8");
    b.tool_calls = i;
  } else if (key == "quirks") {
    std::string names;
    for (auto q : kQuirks) names += (names.empty() ? "" : ", ") + std::string(q);
    std::vector<std::string> list;
    auto add = [&](std::string_view q) {
      for (auto k : kQuirks)
        if (k == q) {
          list.emplace_back(q);
          return true;
        }
      return false;
    };
    if (v.is_string()) {  // a directive: comma-separated
      std::string_view rest = v.get_string();
      while (!rest.empty()) {
        auto comma = rest.find(',');
        if (!add(rest.substr(0, comma))) return bad("a list of: " + names);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else if (v.is_array()) {
      for (const auto& q : v.get_array())
        if (!q.is_string() || !add(q.get_string())) return bad("a list of: " + names);
    } else {
      return bad("a list of: " + names);
    }
    b.quirks = std::move(list);
  } else if (key == "usage_style") {
    auto style = v.is_string() ? usage_style_of(v.get_string()) : std::nullopt;
    if (!style) return bad("one of normal, omit, null, every_chunk, with_finish, string_counts");
    b.usage_style = style;
  } else {
    err = "unknown behavior field '" + std::string(key) + "'";
    return false;
  }
  return true;
}

// Query values are text; numbers are recognised so numeric fields accept them.
boost::json::value query_value(std::string_view key, std::string_view text) {
  if (key == "error" || key == "fault" || key == "content" || key == "service_tier" ||
      key == "usage_style" || key == "tool_call" || key == "tool_arguments" || key == "quirks" ||
      key == "block_reason" || key == "usage")
    return boost::json::value(text);
  if (key == "retry_after") {
    double d = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec == std::errc() && p == text.data() + text.size()) return boost::json::value(d);
    return boost::json::value(text);
  }
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec || !(v.is_number() || v.is_bool())) return boost::json::value(text);
  return v;
}

struct Scripts {
  std::mutex mu;
  std::unordered_map<std::string, std::deque<Behavior>> queues;
};
Scripts& scripts() {
  static Scripts s;
  return s;
}

}  // namespace

bool parse_behavior(const boost::json::value& v, Behavior& out, std::string& err) {
  if (!v.is_object()) {
    err = "a behavior must be a JSON object";
    return false;
  }
  Behavior b;
  for (const auto& kv : v.get_object()) {
    if (!set_field(b, kv.key(), kv.value(), err)) return false;
  }
  out = std::move(b);
  return true;
}

bool parse_behavior_query(std::string_view query, Behavior& out, std::string& err) {
  Behavior b;
  const std::string owned(query);  // NUL-terminated: Boost.URL 1.81's parse_query runs strlen over it
  auto params = boost::urls::parse_query(owned);
  if (!params) {
    err = "invalid model directives";
    return false;
  }
  for (auto p : *params) {
    std::string key = p.key.decode();
    if (key.empty()) continue;
    std::string value = p.has_value ? p.value.decode() : std::string();
    if (!set_field(b, key, query_value(key, value), err)) return false;
  }
  out = std::move(b);
  return true;
}

Behavior merge_behavior(const Behavior& low, const Behavior& high) {
  Behavior m = low;
  if (high.has_outcome()) {
    m.status = high.status;
    m.error = high.error;
    m.fault = high.fault;
    m.retry_after = high.retry_after;
    m.retry_after_ms = high.retry_after_ms;
  }
  override_with(m.latency_ms, high.latency_ms);
  override_with(m.first_token_ms, high.first_token_ms);
  override_with(m.tokens_per_second, high.tokens_per_second);
  override_with(m.completion_tokens, high.completion_tokens);
  override_with(m.content, high.content);
  override_with(m.prompt_tokens, high.prompt_tokens);
  override_with(m.cached_tokens, high.cached_tokens);
  override_with(m.ignore_max_tokens, high.ignore_max_tokens);
  override_with(m.fill_max_tokens, high.fill_max_tokens);
  override_with(m.echo_params, high.echo_params);
  override_with(m.reject_prefill, high.reject_prefill);
  override_with(m.tool_call, high.tool_call);
  override_with(m.block_reason, high.block_reason);
  override_with(m.tool_arguments, high.tool_arguments);
  override_with(m.tool_calls, high.tool_calls);
  override_with(m.quirks, high.quirks);
  override_with(m.reasoning_tokens, high.reasoning_tokens);
  override_with(m.reasoning_outside, high.reasoning_outside);
  override_with(m.cache_write_tokens, high.cache_write_tokens);
  override_with(m.cache_write_1h_tokens, high.cache_write_1h_tokens);
  override_with(m.service_tier, high.service_tier);
  override_with(m.audio_input_tokens, high.audio_input_tokens);
  override_with(m.audio_output_tokens, high.audio_output_tokens);
  override_with(m.rejected_prediction_tokens, high.rejected_prediction_tokens);
  override_with(m.accepted_prediction_tokens, high.accepted_prediction_tokens);
  override_with(m.web_search_calls, high.web_search_calls);
  override_with(m.image_tokens, high.image_tokens);
  override_with(m.pdf_tokens_per_page, high.pdf_tokens_per_page);
  override_with(m.usage_style, high.usage_style);
  override_with(m.usage, high.usage);
  override_with(m.stall_after_tokens, high.stall_after_tokens);
  override_with(m.truncate_after_tokens, high.truncate_after_tokens);
  override_with(m.bill_on_cancel, high.bill_on_cancel);
  return m;
}

void script_set(const std::string& model, std::vector<Behavior> queue) {
  auto& s = scripts();
  std::lock_guard lock(s.mu);
  if (queue.empty()) {
    s.queues.erase(model);
    return;
  }
  s.queues[model] = std::deque<Behavior>(std::make_move_iterator(queue.begin()),
                                         std::make_move_iterator(queue.end()));
}

std::optional<Behavior> script_next(const std::string& model) {
  auto& s = scripts();
  std::lock_guard lock(s.mu);
  auto it = s.queues.find(model);
  if (it == s.queues.end() || it->second.empty()) return std::nullopt;
  auto& q = it->second;
  if (q.size() == 1) return q.front();
  Behavior b = std::move(q.front());
  q.pop_front();
  return b;
}

void script_reset() {
  auto& s = scripts();
  std::lock_guard lock(s.mu);
  s.queues.clear();
}

}  // namespace tollgate::mock
