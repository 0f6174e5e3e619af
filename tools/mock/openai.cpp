// OpenAI chat completions wire format (also Azure OpenAI): bodies, SSE chunks, errors, headers.
// Shapes: OpenAI API reference (chat object, chunk object, error codes); Azure content filter
// error per Azure OpenAI docs ("innererror.content_filter_result").
#include "mock.hpp"

namespace tollgate::mock {

namespace {

// The usage object once `visible` tokens per choice were generated.
std::string usage_object(const Completion& c, std::int64_t visible) {
  if (!c.usage_verbatim.empty()) return c.usage_verbatim;
  Counts k = c.counts(visible);
  bool q = c.usage_style == UsageStyle::string_counts;
  return R"({"prompt_tokens":)" + count_json(k.prompt, q) + R"(,"completion_tokens":)" +
         count_json(k.completion, q) + R"(,"total_tokens":)" + count_json(k.total(), q) +
         R"(,"prompt_tokens_details":{"cached_tokens":)" + count_json(k.cached, q) + R"(,"audio_tokens":)" +
         count_json(k.audio_input, q) + R"(},"completion_tokens_details":{"reasoning_tokens":)" +
         count_json(k.reasoning, q) + R"(,"audio_tokens":)" + count_json(k.audio_output, q) +
         R"(,"accepted_prediction_tokens":)" + count_json(k.accepted_prediction, q) +
         R"(,"rejected_prediction_tokens":)" + count_json(k.rejected_prediction, q) + "}}";
}

std::string chunk_prefix(const Completion& c) {
  return R"(data: {"id":")" + c.id + R"(","object":"chat.completion.chunk","created":)" +
         std::to_string(c.created) + R"(,"model":)" + json_quote(c.model) + R"(,"service_tier":)" +
         json_quote(c.service_tier) + R"(,"system_fingerprint":"fp_mock","choices":[)";
}

// The end of a content chunk, `visible` tokens per choice into the answer.
std::string chunk_suffix(const Completion& c, std::int64_t visible) {
  switch (c.usage_style) {
    case UsageStyle::omit: return "]}\n\n";
    case UsageStyle::null: return "],\"usage\":null}\n\n";
    case UsageStyle::every_chunk: return "],\"usage\":" + usage_object(c, visible) + "}\n\n";
    default: return c.include_usage ? std::string("],\"usage\":null}\n\n") : std::string("]}\n\n");
  }
}

// Whether a usage-only chunk ends the stream.
bool usage_chunk_due(const Completion& c) {
  return c.include_usage && (c.usage_style == UsageStyle::normal || c.usage_style == UsageStyle::every_chunk ||
                             c.usage_style == UsageStyle::string_counts);
}

// x-ratelimit-reset-* are durations ("1s"); an HTTP-date Retry-After has no duration form here.
std::string reset_duration(const std::optional<std::string>& retry_after) {
  std::string v = retry_after_value(retry_after);
  bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
  return (digits ? v : std::string("1")) + "s";
}

struct OpenAiError {
  int status = 500;
  const char* type = "server_error";  // nullptr → null
  const char* code = nullptr;         // nullptr → null
  const char* param = nullptr;
  std::string message;
  bool rate_limited = false;
  bool content_filter = false;
};

OpenAiError describe(const ErrorSpec& e) {
  OpenAiError o;
  const std::string& n = e.name;
  if (n == "rate_limit_exceeded") {
    o = {429, "requests", "rate_limit_exceeded", nullptr,
         "Rate limit reached for " + e.model +
             " in organization org-tollgatemock on requests per min (RPM): Limit 500, Used 500, "
             "Requested 1. Please try again in " +
             reset_duration(e.retry_after) +
             ". Visit https://platform.openai.com/account/rate-limits to learn more.",
         true, false};
  } else if (n == "insufficient_quota") {
    o = {429, "insufficient_quota", "insufficient_quota", nullptr,
         "You exceeded your current quota, please check your plan and billing details. For more "
         "information on this error, read the docs: "
         "https://platform.openai.com/docs/guides/error-codes/api-errors.",
         false, false};
  } else if (n == "context_length_exceeded") {
    o = {400, "invalid_request_error", "context_length_exceeded", "messages",
         "This model's maximum context length is 128000 tokens. However, your messages resulted "
         "in " +
             std::to_string(e.prompt_tokens > 128000 ? e.prompt_tokens : 128001) +
             " tokens. Please reduce the length of the messages.",
         false, false};
  } else if (n == "content_filter") {
    o = {400, "invalid_request_error", "content_filter", "prompt",
         "The response was filtered due to the prompt triggering Azure OpenAI's content management "
         "policy. Please modify your prompt and retry. To learn more about our content filtering "
         "policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
         false, true};
  } else if (n == "invalid_api_key") {
    o = {401, "invalid_request_error", "invalid_api_key", nullptr,
         "Incorrect API key provided: sk-mock****. You can find your API key at "
         "https://platform.openai.com/account/api-keys.",
         false, false};
  } else if (n == "permission") {
    o = {403, "request_forbidden", "unsupported_country_region_territory", nullptr,
         "Country, region, or territory not supported", false, false};
  } else if (n == "not_found") {
    o = {404, "invalid_request_error", "model_not_found", nullptr,
         "The model `" + e.model + "` does not exist or you do not have access to it.", false,
         false};
  } else if (n == "invalid_request") {
    o = {400, "invalid_request_error", nullptr, nullptr,
         "Invalid request: the mock was told to reject this request.", false, false};
  } else if (n == "server_error") {
    o = {500, "server_error", nullptr, nullptr,
         "The server had an error while processing your request. Sorry about that!", false, false};
  } else if (n == "overloaded") {
    o = {503, "server_error", nullptr, nullptr,
         "The engine is currently overloaded, please try again later", false, false};
  } else if (n == "overloaded_529") {
    o = {529, "overloaded_error", nullptr, nullptr, "Overloaded", false, false};
  } else if (n == "timeout") {
    o = {504, "timeout", nullptr, nullptr, "Request timed out.", false, false};
  } else if (n == "request_too_large") {
    o = {413, "invalid_request_error", "request_too_large", nullptr, "Request too large.", false,
         false};
  } else if (n.empty()) {
    int s = e.status ? e.status : 500;
    o.status = s;
    o.type = s >= 500 ? "server_error" : "invalid_request_error";
    o.code = s == 429 ? "rate_limit_exceeded" : nullptr;
    o.message = "The mock returned status " + std::to_string(s) + ".";
    o.rate_limited = s == 429;
  } else {
    // Unknown names are passed through as type and code, so tests can invent new ones.
    o.status = 400;
    o.type = nullptr;
    o.message = "Mock error '" + n + "'.";
  }
  if (e.status) o.status = e.status;
  if (!e.message.empty()) o.message = e.message;
  return o;
}

std::string nullable(const char* s) { return s ? json_quote(s) : std::string("null"); }

// ---- tool answers (README "Tool calls and quirks") ----

std::string tool_call_id(const Completion& c, int k) { return "call_" + std::to_string(k) + "_" + c.id.substr(c.id.size() - 8); }

// Which call and piece token event `i` carries.
std::pair<int, std::size_t> tool_piece_of(const Completion& c, std::int64_t i) {
  std::int64_t left = i;
  for (int k = 0; k < c.tool_calls; ++k) {
    auto n = static_cast<std::int64_t>(c.tool_pieces(k).size());
    if (left < n) return {k, static_cast<std::size_t>(left)};
    left -= n;
  }
  return {c.tool_calls - 1, 0};
}

std::string tool_arguments(const Completion& c, int k) {
  std::string out;
  for (const auto& p : c.tool_pieces(k)) out += p;
  return out;
}

const char* tool_finish(const Completion& c) { return c.has_quirk("finish_stop") ? "stop" : "tool_calls"; }

// The role chunk's delta: `"role":"assistant"` unless no_role; the content null of a tool answer.
std::string open_delta(const Completion& c) {
  std::string d = c.has_quirk("no_role") ? std::string() : std::string(R"("role":"assistant",)");
  if (c.tool_calls) return "{" + d + R"("content":null})";
  return "{" + d + R"("content":"","refusal":null)" + (c.has_quirk("nulls") ? R"(,"tool_calls":null})" : "}");
}

// One tool-call delta: the first piece of a call carries its id, type and name (OpenAI).
std::string tool_delta(const Completion& c, std::int64_t i) {
  auto [k, j] = tool_piece_of(c, i);
  std::string call = "{";
  if (!c.has_quirk("no_index")) call += R"("index":)" + std::to_string(c.has_quirk("same_index") ? 0 : k) + ",";
  if (j == 0)
    call += R"("id":)" + json_quote(tool_call_id(c, k)) + R"(,"type":"function","function":{"name":"get_weather","arguments":)";
  else
    call += R"("function":{"arguments":)";
  call += json_quote(c.tool_pieces(k)[j]) + "}}";
  return std::string("{") + (c.has_quirk("nulls") ? R"("content":null,)" : "") + R"("tool_calls":[)" + call + "]}";
}

class OpenAi final : public Api {
 public:
  std::string new_request_id() const override { return "req_" + random_token(32); }
  std::string new_completion_id() const override { return "chatcmpl-" + random_token(29); }

  std::string base_headers(std::string_view request_id) const override {
    return "x-request-id: " + std::string(request_id) + "\r\nopenai-version: 2020-10-01\r\n";
  }

  std::string success_headers(const Completion& c, std::string_view request_id) const override {
    std::int64_t used = c.full_counts().total();
    std::int64_t remaining = used > 2000000 ? 0 : 2000000 - used;
    return base_headers(request_id) +
           "openai-organization: org-tollgatemock\r\nopenai-processing-ms: 1\r\n"
           "x-ratelimit-limit-requests: 10000\r\nx-ratelimit-remaining-requests: 9999\r\n"
           "x-ratelimit-reset-requests: 6ms\r\nx-ratelimit-limit-tokens: 2000000\r\n"
           "x-ratelimit-remaining-tokens: " +
           std::to_string(remaining) + "\r\nx-ratelimit-reset-tokens: 0s\r\n";
  }

  std::string body(const Completion& c) const override {
    std::string text = json_quote(c.text(c.tokens));
    const char* finish = c.capped ? "length" : "stop";
    std::string message = R"({"role":"assistant","content":)" + text + R"(,"refusal":null,"annotations":[]})";
    if (c.tool_calls) {
      finish = tool_finish(c);
      message = R"({"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[)";
      for (int k = 0; k < c.tool_calls; ++k)
        message += std::string(k ? "," : "") + R"({"id":)" + json_quote(tool_call_id(c, k)) +
                   R"(,"type":"function","function":{"name":"get_weather","arguments":)" +
                   json_quote(tool_arguments(c, k)) + "}}";
      message += "]}";
    }
    std::string out = R"({"id":")" + c.id + R"(","object":"chat.completion","created":)" +
                      std::to_string(c.created) + R"(,"model":)" + json_quote(c.model) +
                      R"(,"choices":[)";
    for (int k = 0; k < c.n; ++k) {
      if (k) out += ',';
      out += R"({"index":)" + std::to_string(k) +
             R"(,"message":)" + message + R"(,"logprobs":null,"finish_reason":")" + finish + "\"}";
    }
    out += "]";
    if (c.usage_style == UsageStyle::null) {
      out += R"(,"usage":null)";
    } else if (c.usage_style != UsageStyle::omit) {
      out += R"(,"usage":)" + usage_object(c, c.tokens);
    }
    out += R"(,"service_tier":)" + json_quote(c.service_tier) + R"(,"system_fingerprint":"fp_mock"})";
    return out;
  }

  std::string stream_open(const Completion& c) const override {
    std::string prefix = chunk_prefix(c), suffix = chunk_suffix(c, 0), out;
    for (int k = 0; k < c.n; ++k) {
      out += prefix + R"({"index":)" + std::to_string(k) +
             R"(,"delta":)" + open_delta(c) + R"(,"logprobs":null,"finish_reason":null})" +
             suffix;
    }
    return out;
  }

  std::string stream_token(const Completion& c, std::int64_t i) const override {
    std::string prefix = chunk_prefix(c), suffix = chunk_suffix(c, i + 1), out;
    std::string delta = c.tool_calls ? tool_delta(c, i)
                                     : R"({"content":)" + json_quote(c.piece(i)) +
                                           (c.has_quirk("nulls") ? R"(,"tool_calls":null})" : "}");
    for (int k = 0; k < c.n; ++k) {
      out += prefix + R"({"index":)" + std::to_string(k) + R"(,"delta":)" + delta +
             R"(,"logprobs":null,"finish_reason":null})" + suffix;
    }
    return out;
  }

  std::string stream_finish(const Completion& c) const override {
    std::string prefix = chunk_prefix(c), suffix = chunk_suffix(c, c.tokens), out;
    const char* finish = c.tool_calls ? tool_finish(c) : c.capped ? "length" : "stop";
    for (int k = 0; k < c.n; ++k) {
      // with_finish: the usage rides on the last finish_reason chunk.
      bool last = k + 1 == c.n;
      out += prefix + R"({"index":)" + std::to_string(k) +
             R"(,"delta":{},"logprobs":null,"finish_reason":")" + finish + "\"" +
             (last && c.usage_style == UsageStyle::with_finish ? "}],\"usage\":" + usage_object(c, c.tokens) + "}\n\n"
                                                                : "}" + suffix);
    }
    return out;
  }

  std::string stream_usage(const Completion& c) const override {
    if (!usage_chunk_due(c)) return {};
    return chunk_prefix(c) + "],\"usage\":" + usage_object(c, c.tokens) + "}\n\n";
  }

  std::string stream_done(const Completion&) const override { return "data: [DONE]\n\n"; }

  std::string stream_malformed() const override { return "data: {not json\n\n"; }

  Reply error(const ErrorSpec& e) const override {
    if (e.name == "bad_gateway_html") {
      Reply r = bad_gateway_html(base_headers(e.request_id));
      if (e.status) r.status = e.status;
      return r;
    }
    OpenAiError o = describe(e);
    Reply r;
    r.status = o.status;
    r.headers = base_headers(e.request_id);
    bool send_retry = (o.rate_limited && o.status == 429) || e.retry_after || e.retry_after_ms;
    if (send_retry) {
      r.headers += "retry-after: " + retry_after_value(e.retry_after) + "\r\n";
      if (e.retry_after_ms) r.headers += "retry-after-ms: " + std::to_string(*e.retry_after_ms) + "\r\n";
    }
    if (o.rate_limited) {
      r.headers +=
          "x-ratelimit-limit-requests: 500\r\nx-ratelimit-remaining-requests: 0\r\n"
          "x-ratelimit-reset-requests: " +
          reset_duration(e.retry_after) +
          "\r\nx-ratelimit-limit-tokens: 30000\r\nx-ratelimit-remaining-tokens: 0\r\n"
          "x-ratelimit-reset-tokens: " +
          reset_duration(e.retry_after) + "\r\n";
    }
    std::string code = o.code ? json_quote(o.code) : (o.type ? std::string("null") : json_quote(e.name));
    std::string type = o.type ? json_quote(o.type) : (e.name.empty() ? std::string("null") : json_quote(e.name));
    r.body = R"({"error":{"message":)" + json_quote(o.message) + R"(,"type":)" + type +
             R"(,"param":)" + nullable(o.param) + R"(,"code":)" + code;
    if (o.content_filter) {
      r.body += R"(,"status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}})";
    }
    r.body += "}}";
    return r;
  }
};

}  // namespace

bool Completion::has_quirk(std::string_view q) const {
  for (const auto& x : quirks)
    if (x == q) return true;
  return false;
}

std::vector<std::string> Completion::tool_pieces(int k) const {
  // Multibyte characters on purpose: ü (2 bytes), ☀ (3), 晴 (3), 🌤 (4).
  std::vector<std::string> p{R"({"city": "Z)", "\xC3\xBC" "rich", R"(", "sky": ")" "\xE2\x98\x80 \xE6\x99\xB4 \xF0\x9F\x8C\xA4",
                             R"(", "n": )" + std::to_string(k) + "}"};
  if (has_quirk("args_one_chunk")) return {p[0] + p[1] + p[2] + p[3]};
  return p;
}

void make_tool_answer(Completion& c, int calls) {
  c.tool_calls = calls;
  c.capped = false;
  std::int64_t tokens = 0;
  for (int k = 0; k < calls; ++k) tokens += static_cast<std::int64_t>(c.tool_pieces(k).size());
  c.tokens = tokens;
  c.accepted_prediction_tokens = 0;
}

const Api& openai_api() {
  static const OpenAi api;
  return api;
}

}  // namespace tollgate::mock
