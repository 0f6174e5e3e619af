// Cohere v2 chat wire format: POST /v2/chat, JSON answers, typed SSE streams (message-start,
// content-start, content-delta, content-end, tool-plan-delta, tool-call-start, tool-call-delta,
// tool-call-end, message-end {finish_reason, usage}), errors {"id", "message"}.
// Shapes: docs.cohere.com/reference/chat, /reference/chat-stream, /reference/errors. The bill is
// usage.billed_units; usage.tokens also counts Cohere's prompt template (kTemplateTokens more).
#include "mock.hpp"

namespace tollgate::mock {

namespace json = boost::json;

namespace {

/// Tokens of the prompt template Cohere adds (reported in usage.tokens, not billed).
constexpr std::int64_t kTemplateTokens = 64;

std::string call_arguments(const Completion& c) { return R"({"text":)" + json_quote(c.text(c.tokens)) + "}"; }

std::string event(std::string_view type, const std::string& data) {
  return "event: " + std::string(type) + "\ndata: " + data + "\n\n";
}

class Cohere final : public Api {
 public:
  std::string new_request_id() const override { return random_token(8) + "-" + random_token(4) + "-" + random_token(12); }
  std::string new_completion_id() const override { return random_token(8) + "-" + random_token(4) + "-" + random_token(12); }
  std::string base_headers(std::string_view rid) const override { return "x-request-id: " + std::string(rid) + "\r\n"; }
  std::string success_headers(const Completion& c, std::string_view rid) const override {
    return base_headers(rid) + "num_tokens: " + std::to_string(c.full_counts().total()) + "\r\n";
  }

  std::optional<json::object> request_view(const json::object& body) const override {
    json::object v;
    for (const char* k : {"model", "messages", "tools", "max_tokens", "stream"})
      if (const auto* x = body.if_contains(k)) v[k] = *x;
    return v;
  }

  std::string tool_to_call(const json::object& view) const override {
    const auto* tools = view.if_contains("tools");
    if (!tools || !tools->is_array()) return {};
    for (const auto& t : tools->get_array()) {
      const auto* f = t.is_object() ? t.get_object().if_contains("function") : nullptr;
      const auto* n = f && f->is_object() ? f->get_object().if_contains("name") : nullptr;
      if (n && n->is_string()) return std::string(n->get_string());
    }
    return {};
  }

  std::string body(const Completion& c) const override {
    std::string out = R"({"id":")" + c.id + R"(","message":{"role":"assistant",)";
    if (c.tool_name.empty()) {
      out += R"("content":[{"type":"text","text":)" + json_quote(c.text(c.tokens)) + "}]}";
    } else {
      out += R"("tool_plan":"I will call the tool.","tool_calls":[{"id":)" + json_quote(call_id(c)) +
             R"(,"type":"function","function":{"name":)" + json_quote(c.tool_name) + R"(,"arguments":)" +
             json_quote(call_arguments(c)) + "}}]}";
    }
    out += R"(,"finish_reason":")" + finish(c) + "\"";
    if (const auto u = usage(c); !u.empty()) out += R"(,"usage":)" + u;
    return out + "}";
  }

  std::string stream_open(const Completion& c) const override {
    std::string out = event("message-start", R"({"id":")" + c.id +
                                                 R"(","type":"message-start","delta":{"message":{"role":"assistant","content":[],"tool_plan":"","tool_calls":[],"citations":[]}}})");
    if (c.tool_name.empty()) {
      out += event("content-start", R"({"type":"content-start","index":0,"delta":{"message":{"content":{"type":"text","text":""}}}})");
    } else {
      out += event("tool-plan-delta", R"({"type":"tool-plan-delta","delta":{"message":{"tool_plan":"I will call the tool."}}})");
      out += event("tool-call-start", R"({"type":"tool-call-start","index":0,"delta":{"message":{"tool_calls":{"id":)" +
                                          json_quote(call_id(c)) + R"(,"type":"function","function":{"name":)" +
                                          json_quote(c.tool_name) + R"(,"arguments":""}}}}})");
    }
    return out;
  }

  std::string stream_token(const Completion& c, std::int64_t i) const override {
    if (c.tool_name.empty())
      return event("content-delta", R"({"type":"content-delta","index":0,"delta":{"message":{"content":{"text":)" +
                                        json_quote(c.piece(i)) + "}}}}");
    std::string piece = json_quote(c.piece(i));
    piece = piece.substr(1, piece.size() - 2);
    if (i == 0) piece = R"({"text":")" + piece;
    if (i + 1 == c.tokens) piece += "\"}";
    return event("tool-call-delta", R"({"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":)" +
                                        json_quote(piece) + "}}}}}");
  }

  std::string stream_finish(const Completion& c) const override {
    if (c.tool_name.empty()) return event("content-end", R"({"type":"content-end","index":0})");
    return event("tool-call-end", R"({"type":"tool-call-end","index":0})");
  }

  std::string stream_usage(const Completion&) const override { return {}; }

  std::string stream_done(const Completion& c) const override {
    std::string d = R"({"type":"message-end","delta":{"finish_reason":")" + finish(c) + "\"";
    if (const auto u = usage(c); !u.empty()) d += R"(,"usage":)" + u;
    return event("message-end", d + "}}");
  }

  std::string stream_malformed() const override { return "event: content-delta\ndata: {not json\n\n"; }

  Reply error(const ErrorSpec& e) const override {
    if (e.name == "bad_gateway_html") {
      Reply r = bad_gateway_html(base_headers(e.request_id));
      if (e.status) r.status = e.status;
      return r;
    }
    int status = 400;
    std::string message;
    const std::string& n = e.name;
    if (n == "rate_limit_exceeded") {
      status = 429;
      message = "You are past the per minute request limit, please wait and try again later.";
    } else if (n == "context_length_exceeded") {
      message = "too many tokens: size limit exceeded by " + std::to_string(e.prompt_tokens > 0 ? e.prompt_tokens : 1) +
                " tokens. Try using shorter or fewer inputs, or setting prompt_truncation='AUTO'.";
    } else if (n == "invalid_api_key") {
      status = 401;
      message = "invalid api token";
    } else if (n == "not_found") {
      status = 404;
      message = "model '" + e.model + "' not found, make sure the correct model ID was used and that you have access to the model.";
    } else if (n == "server_error") {
      status = 500;
      message = "internal server error, this has been reported to our developers. id " + e.request_id;
    } else if (n == "overloaded") {
      status = 503;
      message = "service unavailable";
    } else if (n == "invalid_request") {
      message = "invalid request: the mock was told to reject this request";
    } else if (n.empty()) {
      status = e.status ? e.status : 500;
      message = "the mock returned status " + std::to_string(status);
    } else {
      message = "mock error '" + n + "'";
    }
    if (e.status) status = e.status;
    if (!e.message.empty()) message = e.message;
    Reply r;
    r.status = status;
    r.headers = base_headers(e.request_id);
    if (status == 429 || e.retry_after || e.retry_after_ms) r.headers += "retry-after: " + retry_after_value(e.retry_after) + "\r\n";
    r.body = R"({"id":")" + e.request_id + R"(","message":)" + json_quote(message) + "}";
    return r;
  }

 private:
  static std::string call_id(const Completion& c) { return c.tool_name + "_" + c.id.substr(0, 8); }

  static std::string finish(const Completion& c) {
    if (c.capped) return "MAX_TOKENS";
    return c.tool_name.empty() ? "COMPLETE" : "TOOL_CALL";
  }

  /// {billed_units, tokens}; "" with usage_style omit, "null" with null.
  static std::string usage(const Completion& c) {
    if (c.usage_style == UsageStyle::omit) return {};
    if (c.usage_style == UsageStyle::null) return "null";
    const Counts k = c.full_counts();
    const bool q = c.usage_style == UsageStyle::string_counts;
    return R"({"billed_units":{"input_tokens":)" + count_json(k.prompt, q) + R"(,"output_tokens":)" +
           count_json(k.billed_output(), q) + R"(},"tokens":{"input_tokens":)" + count_json(k.prompt + kTemplateTokens, q) +
           R"(,"output_tokens":)" + count_json(k.billed_output(), q) + "}}";
  }
};

}  // namespace

const Api& cohere_api() {
  static const Cohere api;
  return api;
}

}  // namespace tollgate::mock
