// Anthropic Messages API wire format: bodies, SSE events, errors, headers.
// Shapes: Anthropic API docs ("Messages", "Streaming messages", "Errors", "Rate limits").
#include "mock.hpp"

namespace tollgate::mock {

namespace {

// The message usage object (body, message_start) with `output_tokens` as given.
std::string usage_object(const Completion& c, std::int64_t output_tokens) {
  if (!c.usage_verbatim.empty()) return c.usage_verbatim;
  Counts k = c.full_counts();
  bool q = c.usage_style == UsageStyle::string_counts;
  std::string out = R"({"input_tokens":)" + count_json(k.uncached_input(), q) +
                    R"(,"cache_creation_input_tokens":)" + count_json(k.cache_write + k.cache_write_1h, q) +
                    R"(,"cache_read_input_tokens":)" + count_json(k.cached, q) +
                    R"(,"cache_creation":{"ephemeral_5m_input_tokens":)" + count_json(k.cache_write, q) +
                    R"(,"ephemeral_1h_input_tokens":)" + count_json(k.cache_write_1h, q) +
                    R"(},"output_tokens":)" + count_json(output_tokens, q) + R"(,"service_tier":)" +
                    json_quote(c.service_tier);
  if (k.web_search_calls > 0)
    out += R"(,"server_tool_use":{"web_search_requests":)" + count_json(k.web_search_calls, q) + "}";
  return out + "}";
}

// The message_delta usage: the output so far (and the server tool use).
std::string delta_usage_object(const Completion& c) {
  if (!c.usage_verbatim.empty()) return c.usage_verbatim;
  Counts k = c.full_counts();
  bool q = c.usage_style == UsageStyle::string_counts;
  std::string out = R"({"output_tokens":)" + count_json(k.completion, q);
  if (k.web_search_calls > 0)
    out += R"(,"server_tool_use":{"web_search_requests":)" + count_json(k.web_search_calls, q) + "}";
  return out + "}";
}

// `,"usage":…` as the usage style wants it (nothing for omit).
std::string usage_member(const Completion& c, const std::string& object) {
  if (c.usage_style == UsageStyle::omit) return {};
  if (c.usage_style == UsageStyle::null) return R"(,"usage":null)";
  return R"(,"usage":)" + object;
}

std::string event(std::string_view name, std::string_view data) {
  std::string out;
  out.reserve(name.size() + data.size() + 16);
  out += "event: ";
  out += name;
  out += "\ndata: ";
  out += data;
  out += "\n\n";
  return out;
}

// Behaviour tool_call: the tool_use block's id, derived from the message id.
std::string tool_id(const Completion& c) { return "toolu_01" + c.id.substr(c.id.size() > 22 ? c.id.size() - 22 : 0); }

// `,{"type":"tool_use",…}` after the text block, or nothing.
std::string tool_block(const Completion& c) {
  if (c.tool_name.empty()) return {};
  return R"(,{"type":"tool_use","id":)" + json_quote(tool_id(c)) + R"(,"name":)" + json_quote(c.tool_name) +
         R"(,"input":)" + c.tool_arguments + "}";
}

std::string stop_reason(const Completion& c) {
  if (c.capped) return R"("max_tokens")";
  return c.tool_name.empty() ? R"("end_turn")" : R"("tool_use")";
}

struct AnthropicError {
  int status = 500;
  std::string type = "api_error";
  std::string message;
  bool rate_limited = false;
};

std::string type_for_status(int s) {
  switch (s) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 504: return "timeout_error";
    case 529: return "overloaded_error";
    default: return s >= 500 ? "api_error" : "invalid_request_error";
  }
}

AnthropicError describe(const ErrorSpec& e) {
  AnthropicError o;
  const std::string& n = e.name;
  if (n == "rate_limit_exceeded") {
    o = {429, "rate_limit_error",
         "This request would exceed the rate limit for your organization (tollgate-mock) of 50 "
         "requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. "
         "You can see the response headers for current usage. Please reduce the prompt length or "
         "the maximum tokens requested, or try again later.",
         true};
  } else if (n == "insufficient_quota") {
    o = {400, "billing_error",
         "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
         "Billing to upgrade or purchase credits.",
         false};
  } else if (n == "context_length_exceeded") {
    o = {400, "invalid_request_error",
         "prompt is too long: " + std::to_string(e.prompt_tokens > 200000 ? e.prompt_tokens : 200001) +
             " tokens > 200000 maximum",
         false};
  } else if (n == "content_filter") {
    o = {400, "invalid_request_error",
         "Output blocked by content filtering policy: the request violates the usage policy.",
         false};
  } else if (n == "invalid_api_key") {
    o = {401, "authentication_error", "invalid x-api-key", false};
  } else if (n == "permission") {
    o = {403, "permission_error",
         "Your API key does not have permission to use the specified resource.", false};
  } else if (n == "not_found") {
    o = {404, "not_found_error", "model: " + e.model, false};
  } else if (n == "invalid_request") {
    o = {400, "invalid_request_error", "Invalid request: the mock was told to reject this request.",
         false};
  } else if (n == "server_error") {
    o = {500, "api_error", "Internal server error", false};
  } else if (n == "overloaded") {
    o = {503, "overloaded_error", "Overloaded", false};
  } else if (n == "overloaded_529") {
    o = {529, "overloaded_error", "Overloaded", false};
  } else if (n == "timeout") {
    o = {504, "timeout_error", "Request timed out", false};
  } else if (n == "request_too_large") {
    o = {413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", false};
  } else if (n.empty()) {
    int s = e.status ? e.status : 500;
    o = {s, type_for_status(s), "The mock returned status " + std::to_string(s) + ".", s == 429};
  } else {
    o = {400, n, "Mock error '" + n + "'.", false};
  }
  if (e.status) o.status = e.status;
  if (!e.message.empty()) o.message = e.message;
  return o;
}

class Anthropic final : public Api {
 public:
  std::string new_request_id() const override { return "req_011C" + random_token(20); }
  std::string new_completion_id() const override { return "msg_01" + random_token(22); }

  std::string base_headers(std::string_view request_id) const override {
    return "request-id: " + std::string(request_id) +
           "\r\nanthropic-organization-id: 00000000-0000-4000-8000-000000000000\r\n";
  }

  std::string success_headers(const Completion& c, std::string_view request_id) const override {
    std::string reset = rfc3339_after(1);
    std::int64_t out_tokens = c.full_counts().completion;
    std::int64_t in_rem = c.prompt_tokens > 400000 ? 0 : 400000 - c.prompt_tokens;
    std::int64_t out_rem = out_tokens > 80000 ? 0 : 80000 - out_tokens;
    return base_headers(request_id) +
           "anthropic-ratelimit-requests-limit: 4000\r\nanthropic-ratelimit-requests-remaining: "
           "3999\r\nanthropic-ratelimit-requests-reset: " +
           reset +
           "\r\nanthropic-ratelimit-tokens-limit: 480000\r\nanthropic-ratelimit-tokens-remaining: " +
           std::to_string(in_rem + out_rem) + "\r\nanthropic-ratelimit-tokens-reset: " + reset +
           "\r\nanthropic-ratelimit-input-tokens-limit: 400000\r\n"
           "anthropic-ratelimit-input-tokens-remaining: " +
           std::to_string(in_rem) + "\r\nanthropic-ratelimit-input-tokens-reset: " + reset +
           "\r\nanthropic-ratelimit-output-tokens-limit: 80000\r\n"
           "anthropic-ratelimit-output-tokens-remaining: " +
           std::to_string(out_rem) + "\r\nanthropic-ratelimit-output-tokens-reset: " + reset +
           "\r\n";
  }

  std::string body(const Completion& c) const override {
    return R"({"id":")" + c.id + R"(","type":"message","role":"assistant","model":)" +
           json_quote(c.model) + R"(,"content":[{"type":"text","text":)" +
           json_quote(c.text(c.tokens)) + "}" + tool_block(c) + R"(],"stop_reason":)" + stop_reason(c) +
           R"(,"stop_sequence":null)" + usage_member(c, usage_object(c, c.full_counts().completion)) + "}";
  }

  std::string stream_open(const Completion& c) const override {
    std::string start = R"({"type":"message_start","message":{"id":")" + c.id +
                        R"(","type":"message","role":"assistant","model":)" + json_quote(c.model) +
                        R"(,"content":[],"stop_reason":null,"stop_sequence":null)" +
                        usage_member(c, usage_object(c, 1)) + "}}";
    return event("message_start", start) +
           event("content_block_start",
                 R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
           event("ping", R"({"type": "ping"})");
  }

  std::string stream_token(const Completion& c, std::int64_t i) const override {
    return event("content_block_delta",
                 R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":)" +
                     json_quote(c.piece(i)) + "}}");
  }

  std::string stream_finish(const Completion& c) const override {
    std::string out = event("content_block_stop", R"({"type":"content_block_stop","index":0})");
    if (c.tool_name.empty()) return out;
    out += event("content_block_start",
                 R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":)" +
                     json_quote(tool_id(c)) + R"(,"name":)" + json_quote(c.tool_name) + R"(,"input":{}}})");
    out += event("content_block_delta",
                 R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":)" +
                     json_quote(c.tool_arguments) + "}}");
    return out + event("content_block_stop", R"({"type":"content_block_stop","index":1})");
  }

  std::string stream_usage(const Completion& c) const override {
    std::string delta = R"({"type":"message_delta","delta":{"stop_reason":)" + stop_reason(c) +
                        R"(,"stop_sequence":null})" + usage_member(c, delta_usage_object(c)) + "}";
    return event("message_delta", delta);
  }

  std::string stream_done(const Completion&) const override {
    return event("message_stop", R"({"type":"message_stop"})");
  }

  std::string stream_malformed() const override { return "event: content_block_delta\ndata: {not json\n\n"; }

  Reply error(const ErrorSpec& e) const override {
    if (e.name == "bad_gateway_html") {
      Reply r = bad_gateway_html(base_headers(e.request_id));
      if (e.status) r.status = e.status;
      return r;
    }
    AnthropicError o = describe(e);
    Reply r;
    r.status = o.status;
    r.headers = base_headers(e.request_id);
    bool send_retry = (o.rate_limited && o.status == 429) || e.retry_after || e.retry_after_ms;
    if (send_retry) {
      r.headers += "retry-after: " + retry_after_value(e.retry_after) + "\r\n";
      if (e.retry_after_ms) r.headers += "retry-after-ms: " + std::to_string(*e.retry_after_ms) + "\r\n";
    }
    if (o.rate_limited) {
      std::string reset = rfc3339_after(1);
      r.headers +=
          "anthropic-ratelimit-requests-limit: 50\r\nanthropic-ratelimit-requests-remaining: 0\r\n"
          "anthropic-ratelimit-requests-reset: " +
          reset +
          "\r\nanthropic-ratelimit-tokens-limit: 480000\r\nanthropic-ratelimit-tokens-remaining: 0\r\n"
          "anthropic-ratelimit-tokens-reset: " +
          reset + "\r\n";
    }
    r.body = R"({"type":"error","error":{"type":)" + json_quote(o.type) + R"(,"message":)" +
             json_quote(o.message) + R"(},"request_id":)" + json_quote(e.request_id) + "}";
    return r;
  }
};

}  // namespace

const Api& anthropic_api() {
  static const Anthropic api;
  return api;
}

}  // namespace tollgate::mock
