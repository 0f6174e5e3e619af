// Ollama's native API wire format: POST /api/chat and /api/generate, JSON answers and NDJSON
// streams (one object per line, the last with done: true and the counts), errors {"error": "..."}.
// Shapes: https://github.com/ollama/ollama/blob/main/docs/api.md. Usage quirk: usage_style
// "omit"/"null" drops prompt_eval_count, as Ollama does when the prompt came from its cache
// (ollama/ollama#2068, #3427).
#include "mock.hpp"

#include <boost/json/serialize.hpp>

namespace tollgate::mock {

namespace json = boost::json;

namespace {

std::string str_of(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::string created_at() { return rfc3339_after(0); }

/// The arguments of the call: {"text": <text>}, as a JSON object text.
std::string call_arguments(const Completion& c) { return R"({"text":)" + json_quote(c.text(c.tokens)) + "}"; }

class Ollama final : public Api {
 public:
  explicit Ollama(bool generate) : generate_(generate) {}

  std::string new_request_id() const override { return "ollama-" + random_token(16); }
  std::string new_completion_id() const override { return "ollama-" + random_token(16); }
  std::string base_headers(std::string_view) const override { return {}; }
  std::string success_headers(const Completion&, std::string_view rid) const override { return base_headers(rid); }
  std::string_view stream_content_type() const override { return "application/x-ndjson"; }

  std::optional<json::object> request_view(const json::object& body) const override {
    json::object v;
    if (const auto* m = body.if_contains("model")) v["model"] = *m;
    if (generate_) {
      json::array msgs;
      for (const char* k : {"system", "prompt"})
        if (const auto* p = body.if_contains(k); p && p->is_string()) msgs.push_back(json::object{{"role", "user"}, {"content", *p}});
      v["messages"] = std::move(msgs);
    } else if (const auto* m = body.if_contains("messages")) {
      v["messages"] = *m;
    }
    if (const auto* t = body.if_contains("tools")) v["tools"] = *t;
    if (const auto* f = body.if_contains("format")) v["format"] = *f;
    if (const auto* o = body.if_contains("options"); o && o->is_object())
      if (const auto* np = o->get_object().if_contains("num_predict"); np && !(np->is_int64() && np->get_int64() < 0))
        v["max_tokens"] = *np;  // -1: unbounded
    const auto* st = body.if_contains("stream");
    v["stream"] = st && st->is_bool() ? st->get_bool() : true;  // Ollama streams unless told not to
    return v;
  }

  std::string tool_to_call(const json::object& view) const override {
    if (!generate_) {
      const auto* tools = view.if_contains("tools");
      if (!tools || !tools->is_array()) return {};
      for (const auto& t : tools->get_array()) {
        const auto* f = t.is_object() ? t.get_object().if_contains("function") : nullptr;
        if (f && f->is_object()) return str_of(f->get_object(), "name");
      }
      return {};
    }
    // /api/generate has no tools: a JSON-format request whose prompt lists functions (LiteLLM's
    // tool prompt) is answered with {"name": <the first one>, "arguments": {...}}.
    const auto* f = view.if_contains("format");
    if (!f || !f->is_string() || f->get_string() != "json") return {};
    const auto* msgs = view.if_contains("messages");
    if (!msgs || !msgs->is_array()) return {};
    for (const auto& m : msgs->get_array()) {
      const std::string p = m.is_object() ? str_of(m.get_object(), "content") : std::string();
      const auto at = p.find("\"name\":\"");
      if (at == std::string::npos) continue;
      const auto start = at + 8, end = p.find('"', start);
      if (end != std::string::npos) return p.substr(start, end - start);
    }
    return {};
  }

  std::string body(const Completion& c) const override {
    std::string out = R"({"model":)" + json_quote(c.model) + R"(,"created_at":")" + created_at() + "\",";
    out += generate_ ? R"("response":)" + json_quote(answer_text(c)) : message(c, c.text(c.tokens), true);
    out += "," + final_fields(c) + "}";
    return out;
  }

  std::string stream_open(const Completion&) const override { return {}; }

  std::string stream_token(const Completion& c, std::int64_t i) const override {
    std::string piece = c.piece(i);
    if (generate_ && !c.tool_name.empty()) {
      // The JSON call text, streamed piece by piece like any generated text.
      std::string whole = json_quote(piece);
      piece = whole.substr(1, whole.size() - 2);
      if (i == 0) piece = R"({"name":)" + json_quote(c.tool_name) + R"(,"arguments":{"text":")" + piece;
      if (i + 1 == c.tokens) piece += "\"}}";
    }
    std::string line = R"({"model":)" + json_quote(c.model) + R"(,"created_at":")" + created_at() + "\",";
    if (generate_) {
      line += R"("response":)" + json_quote(piece);
    } else if (!c.tool_name.empty()) {
      // Ollama sends a call whole, in one message, once generated.
      if (i + 1 < c.tokens) return {};
      line += message(c, "", true);
    } else {
      line += message(c, piece, false);
    }
    return line + ",\"done\":false}\n";
  }

  std::string stream_finish(const Completion&) const override { return {}; }
  std::string stream_usage(const Completion&) const override { return {}; }

  std::string stream_done(const Completion& c) const override {
    std::string line = R"({"model":)" + json_quote(c.model) + R"(,"created_at":")" + created_at() + "\",";
    line += generate_ ? std::string(R"("response":"")") : message(c, "", false);
    return line + "," + final_fields(c) + "}\n";
  }

  std::string stream_malformed() const override { return "{not json\n"; }

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
      message = "too many requests, please try again later";
    } else if (n == "overloaded") {
      status = 503;
      message = "server busy, please try again.  maximum pending requests exceeded";
    } else if (n == "not_found") {
      status = 404;
      message = "model \"" + e.model + "\" not found, try pulling it first";
    } else if (n == "context_length_exceeded") {
      message = "the input length exceeds the context length";
    } else if (n == "invalid_api_key") {
      status = 401;
      message = "unauthorized";
    } else if (n == "server_error") {
      status = 500;
      message = "llama runner process has terminated: exit status 2";
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
    if (status == 429 || e.retry_after || e.retry_after_ms) r.headers = "retry-after: " + retry_after_value(e.retry_after) + "\r\n";
    r.body = R"({"error":)" + json_quote(message) + "}";
    return r;
  }

 private:
  /// /api/generate's text: the call as JSON text when one is due, else the words.
  std::string answer_text(const Completion& c) const {
    if (c.tool_name.empty()) return c.text(c.tokens);
    return R"({"name":)" + json_quote(c.tool_name) + R"(,"arguments":)" + call_arguments(c) + "}";
  }

  /// `"message":{...}`: the text, or (with_call and a tool due) the call with empty content.
  static std::string message(const Completion& c, std::string_view text, bool with_call) {
    if (with_call && !c.tool_name.empty()) {
      return R"("message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":)" + json_quote(c.tool_name) +
             R"(,"arguments":)" + call_arguments(c) + "}}]}";
    }
    return R"("message":{"role":"assistant","content":)" + json_quote(text) + "}";
  }

  /// done, done_reason, durations and the counts (prompt_eval_count absent with usage_style omit/null).
  static std::string final_fields(const Completion& c) {
    const Counts k = c.full_counts();
    const bool q = c.usage_style == UsageStyle::string_counts;
    std::string out = R"("done":true,"done_reason":")" + std::string(c.capped ? "length" : "stop") +
                      R"(","total_duration":1000000,"load_duration":1000,)";
    if (c.usage_style != UsageStyle::omit && c.usage_style != UsageStyle::null)
      out += R"("prompt_eval_count":)" + count_json(k.prompt, q) + ",";
    out += R"("prompt_eval_duration":1000,"eval_count":)" + count_json(k.billed_output(), q) + R"(,"eval_duration":1000)";
    return out;
  }

  bool generate_;
};

}  // namespace

const Api& ollama_chat_api() {
  static const Ollama api(false);
  return api;
}

const Api& ollama_generate_api() {
  static const Ollama api(true);
  return api;
}

}  // namespace tollgate::mock
