#include "simulate/catalogue.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

namespace tollgate::simulate {

namespace json = boost::json;

namespace {

/// A fixed `created` time: simulation output must not depend on the wall clock.
constexpr std::int64_t kCreated = 1'700'000'000;

std::int64_t text_bytes(const json::value& v) {
  if (v.is_string()) return static_cast<std::int64_t>(v.as_string().size());
  std::int64_t n = 0;
  if (v.is_array()) {
    for (const auto& part : v.as_array()) {
      if (!part.is_object()) continue;
      const auto& o = part.as_object();
      if (auto* t = o.if_contains("text"); t && t->is_string()) n += static_cast<std::int64_t>(t->as_string().size());
      if (auto* c = o.if_contains("content")) n += text_bytes(*c);
    }
  }
  return n;
}

std::int64_t message_tokens(const json::value& content) { return (text_bytes(content) + 3) / 4 + 4; }

std::string words(std::int64_t n) {
  static constexpr std::string_view kWords[] = {"lorem", "ipsum", "dolor", "sit", "amet", "consectetur",
                                                "adipiscing", "elit", "sed", "do", "eiusmod", "tempor"};
  std::string out;
  const std::int64_t shown = std::min<std::int64_t>(n, 1000);  // usage says n; the text stays small
  for (std::int64_t i = 0; i < shown; ++i) {
    if (i) out += ' ';
    out += kWords[static_cast<std::size_t>(i) % std::size(kWords)];
  }
  return out;
}

struct ErrorShape {
  int status = 500;
  std::string type;     ///< OpenAI error.type / Anthropic error.type; empty = null (OpenAI)
  std::string code;     ///< OpenAI error.code; empty = null
  std::string param;    ///< OpenAI error.param; empty = null
  std::string message;
  bool rate_limited = false;
  bool content_filter = false;
};

std::string anthropic_type_for_status(int s) {
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

/// tools/mock/openai.cpp `describe`, same texts.
ErrorShape openai_shape(const std::string& n, const RequestFacts& req, int bare_status) {
  if (n == "rate_limit_exceeded")
    return {429, "requests", "rate_limit_exceeded", "",
            "Rate limit reached for " + req.model +
                " in organization org-tollgatesim on requests per min (RPM): Limit 500, Used 500, Requested 1. "
                "Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.",
            true, false};
  if (n == "insufficient_quota")
    return {429, "insufficient_quota", "insufficient_quota", "",
            "You exceeded your current quota, please check your plan and billing details. For more information on this "
            "error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
            false, false};
  if (n == "context_length_exceeded")
    return {400, "invalid_request_error", "context_length_exceeded", "messages",
            "This model's maximum context length is 128000 tokens. However, your messages resulted in " +
                std::to_string(std::max<std::int64_t>(req.prompt_tokens, 128001)) +
                " tokens. Please reduce the length of the messages.",
            false, false};
  if (n == "content_filter")
    return {400, "invalid_request_error", "content_filter", "prompt",
            "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please "
            "modify your prompt and retry. To learn more about our content filtering policies please read our "
            "documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
            false, true};
  if (n == "invalid_api_key")
    return {401, "invalid_request_error", "invalid_api_key", "",
            "Incorrect API key provided: sk-sim****. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            false, false};
  if (n == "permission")
    return {403, "request_forbidden", "unsupported_country_region_territory", "",
            "Country, region, or territory not supported", false, false};
  if (n == "not_found")
    return {404, "invalid_request_error", "model_not_found", "",
            "The model `" + req.model + "` does not exist or you do not have access to it.", false, false};
  if (n == "invalid_request")
    return {400, "invalid_request_error", "", "", "Invalid request: the simulator was told to reject this request.",
            false, false};
  if (n == "server_error")
    return {500, "server_error", "", "", "The server had an error while processing your request. Sorry about that!",
            false, false};
  if (n == "overloaded")
    return {503, "server_error", "", "", "The engine is currently overloaded, please try again later", false, false};
  if (n == "overloaded_529") return {529, "overloaded_error", "", "", "Overloaded", false, false};
  if (n == "timeout") return {504, "timeout", "", "", "Request timed out.", false, false};
  if (n == "request_too_large")
    return {413, "invalid_request_error", "request_too_large", "", "Request too large.", false, false};
  const int s = bare_status;
  return {s, s >= 500 ? "server_error" : "invalid_request_error", s == 429 ? "rate_limit_exceeded" : "", "",
          "The simulated upstream returned status " + std::to_string(s) + ".", s == 429, false};
}

/// tools/mock/anthropic.cpp `describe`, same texts.
ErrorShape anthropic_shape(const std::string& n, const RequestFacts& req, int bare_status) {
  if (n == "rate_limit_exceeded")
    return {429, "rate_limit_error", "", "",
            "This request would exceed the rate limit for your organization (tollgate-sim) of 50 requests per minute. "
            "For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for "
            "current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
            true, false};
  if (n == "insufficient_quota")
    return {400, "billing_error", "", "",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or "
            "purchase credits.",
            false, false};
  if (n == "context_length_exceeded")
    return {400, "invalid_request_error", "", "",
            "prompt is too long: " + std::to_string(std::max<std::int64_t>(req.prompt_tokens, 200001)) +
                " tokens > 200000 maximum",
            false, false};
  if (n == "content_filter")
    return {400, "invalid_request_error", "", "",
            "Output blocked by content filtering policy: the request violates the usage policy.", false, false};
  if (n == "invalid_api_key") return {401, "authentication_error", "", "", "invalid x-api-key", false, false};
  if (n == "permission")
    return {403, "permission_error", "", "", "Your API key does not have permission to use the specified resource.",
            false, false};
  if (n == "not_found") return {404, "not_found_error", "", "", "model: " + req.model, false, false};
  if (n == "invalid_request")
    return {400, "invalid_request_error", "", "", "Invalid request: the simulator was told to reject this request.",
            false, false};
  if (n == "server_error") return {500, "api_error", "", "", "Internal server error", false, false};
  if (n == "overloaded") return {503, "overloaded_error", "", "", "Overloaded", false, false};
  if (n == "overloaded_529") return {529, "overloaded_error", "", "", "Overloaded", false, false};
  if (n == "timeout") return {504, "timeout_error", "", "", "Request timed out", false, false};
  if (n == "request_too_large")
    return {413, "request_too_large", "", "", "Request exceeds the maximum allowed number of bytes.", false, false};
  const int s = bare_status;
  return {s, anthropic_type_for_status(s), "", "", "The simulated upstream returned status " + std::to_string(s) + ".",
          s == 429, false};
}

json::value nullable(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }

}  // namespace

RequestFacts read_request(std::string_view body, const config::Deployment& d) {
  RequestFacts f;
  f.model = d.upstream_model;
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return f;
  const auto& o = v.as_object();
  if (auto* m = o.if_contains("messages"); m && m->is_array())
    for (const auto& msg : m->as_array())
      if (msg.is_object())
        if (auto* c = msg.as_object().if_contains("content")) f.prompt_tokens += message_tokens(*c);
  if (auto* s = o.if_contains("system")) f.prompt_tokens += message_tokens(*s);
  for (const char* k : {"max_completion_tokens", "max_tokens"})
    if (auto* t = o.if_contains(k); t && t->is_int64() && !f.max_tokens) f.max_tokens = t->as_int64();
  if (auto* s = o.if_contains("stream"); s && s->is_bool()) f.stream = s->as_bool();
  if (auto* so = o.if_contains("stream_options"); so && so->is_object())
    if (auto* iu = so->as_object().if_contains("include_usage"); iu && iu->is_bool()) f.include_usage = iu->as_bool();
  return f;
}

ScriptedResponse error_response(config::ProviderKind kind, const Outcome& o, const RequestFacts& req,
                                const std::string& request_id) {
  ScriptedResponse r;
  const bool anthropic = kind == config::ProviderKind::anthropic;
  if (anthropic) r.headers.emplace_back("request-id", request_id);
  else r.headers.emplace_back("x-request-id", request_id);
  if (o.error == "bad_gateway_html") {
    r.status = o.status.value_or(502);
    r.headers.emplace_back("content-type", "text/html");
    r.body =
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
        "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n";
    for (const auto& h : o.headers) r.headers.push_back(h);
    return r;
  }
  const int bare = o.status.value_or(500);
  ErrorShape e = anthropic ? anthropic_shape(o.error, req, bare) : openai_shape(o.error, req, bare);
  if (o.status) e.status = *o.status;
  if (!o.message.empty()) e.message = o.message;
  r.status = e.status;
  r.headers.emplace_back("content-type", "application/json");
  const bool send_retry = (e.rate_limited && e.status == 429) || o.retry_after || o.retry_after_ms;
  if (send_retry) {
    r.headers.emplace_back("retry-after", o.retry_after.value_or("1"));
    if (o.retry_after_ms) r.headers.emplace_back("retry-after-ms", std::to_string(*o.retry_after_ms));
  }
  if (e.rate_limited) {
    if (anthropic) {
      r.headers.emplace_back("anthropic-ratelimit-requests-limit", "50");
      r.headers.emplace_back("anthropic-ratelimit-requests-remaining", "0");
    } else {
      r.headers.emplace_back("x-ratelimit-limit-requests", "500");
      r.headers.emplace_back("x-ratelimit-remaining-requests", "0");
    }
  }
  json::object err;
  if (anthropic) {
    err["type"] = e.type;
    err["message"] = e.message;
    json::object body;
    body["type"] = "error";
    body["error"] = std::move(err);
    body["request_id"] = request_id;
    r.body = json::serialize(body);
  } else {
    err["message"] = e.message;
    err["type"] = nullable(e.type);
    err["param"] = nullable(e.param);
    err["code"] = nullable(e.code);
    if (e.content_filter) {
      err["status"] = 400;
      json::object inner;
      inner["code"] = "ResponsibleAIPolicyViolation";
      json::object hate;
      hate["filtered"] = true;
      hate["severity"] = "high";
      json::object result;
      result["hate"] = std::move(hate);
      inner["content_filter_result"] = std::move(result);
      err["innererror"] = std::move(inner);
    }
    json::object body;
    body["error"] = std::move(err);
    r.body = json::serialize(body);
  }
  for (const auto& h : o.headers) r.headers.push_back(h);
  return r;
}

ScriptedResponse success_response(config::ProviderKind kind, const Outcome& o, const RequestFacts& req,
                                  const std::string& id) {
  ScriptedResponse r;
  r.status = o.status.value_or(200);
  const std::int64_t prompt = o.prompt_tokens.value_or(req.prompt_tokens);
  std::int64_t completion = o.completion_tokens.value_or(16);
  bool capped = false;
  if (req.max_tokens && completion > *req.max_tokens) {
    completion = *req.max_tokens;
    capped = true;
  }
  const std::string text = words(completion);
  const bool anthropic = kind == config::ProviderKind::anthropic;
  r.headers.emplace_back(anthropic ? "request-id" : "x-request-id", "req_" + id);
  r.headers.emplace_back("content-type", req.stream ? "text/event-stream; charset=utf-8" : "application/json");
  if (anthropic) {
    json::object usage;
    usage["input_tokens"] = prompt;
    usage["cache_creation_input_tokens"] = 0;
    usage["cache_read_input_tokens"] = 0;
    usage["output_tokens"] = completion;
    const char* stop = capped ? "max_tokens" : "end_turn";
    if (!req.stream) {
      json::object block;
      block["type"] = "text";
      block["text"] = text;
      json::array content;
      content.push_back(std::move(block));
      json::object b;
      b["id"] = "msg_" + id;
      b["type"] = "message";
      b["role"] = "assistant";
      b["model"] = req.model;
      b["content"] = std::move(content);
      b["stop_reason"] = stop;
      b["stop_sequence"] = nullptr;
      b["usage"] = std::move(usage);
      r.body = json::serialize(b);
    } else {
      auto event = [&r](std::string_view name, const json::object& data) {
        r.body += "event: ";
        r.body += name;
        r.body += "\ndata: ";
        r.body += json::serialize(data);
        r.body += "\n\n";
      };
      json::object start_usage = usage;
      start_usage["output_tokens"] = 1;
      json::object msg;
      msg["id"] = "msg_" + id;
      msg["type"] = "message";
      msg["role"] = "assistant";
      msg["model"] = req.model;
      msg["content"] = json::array();
      msg["stop_reason"] = nullptr;
      msg["stop_sequence"] = nullptr;
      msg["usage"] = std::move(start_usage);
      json::object e1;
      e1["type"] = "message_start";
      e1["message"] = std::move(msg);
      event("message_start", e1);
      json::object cb;
      cb["type"] = "text";
      cb["text"] = "";
      json::object e2;
      e2["type"] = "content_block_start";
      e2["index"] = 0;
      e2["content_block"] = std::move(cb);
      event("content_block_start", e2);
      json::object delta;
      delta["type"] = "text_delta";
      delta["text"] = text;
      json::object e3;
      e3["type"] = "content_block_delta";
      e3["index"] = 0;
      e3["delta"] = std::move(delta);
      event("content_block_delta", e3);
      json::object e4;
      e4["type"] = "content_block_stop";
      e4["index"] = 0;
      event("content_block_stop", e4);
      json::object md;
      md["stop_reason"] = stop;
      md["stop_sequence"] = nullptr;
      json::object mu;
      mu["output_tokens"] = completion;
      json::object e5;
      e5["type"] = "message_delta";
      e5["delta"] = std::move(md);
      e5["usage"] = std::move(mu);
      event("message_delta", e5);
      json::object e6;
      e6["type"] = "message_stop";
      event("message_stop", e6);
    }
    for (const auto& h : o.headers) r.headers.push_back(h);
    return r;
  }
  json::object usage;
  usage["prompt_tokens"] = prompt;
  usage["completion_tokens"] = completion;
  usage["total_tokens"] = prompt + completion;
  json::object details;
  details["cached_tokens"] = 0;
  usage["prompt_tokens_details"] = std::move(details);
  const char* finish = capped ? "length" : "stop";
  if (!req.stream) {
    json::object message;
    message["role"] = "assistant";
    message["content"] = text;
    message["refusal"] = nullptr;
    json::object choice;
    choice["index"] = 0;
    choice["message"] = std::move(message);
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = finish;
    json::array choices;
    choices.push_back(std::move(choice));
    json::object b;
    b["id"] = "chatcmpl-" + id;
    b["object"] = "chat.completion";
    b["created"] = kCreated;
    b["model"] = req.model;
    b["choices"] = std::move(choices);
    b["usage"] = std::move(usage);
    r.body = json::serialize(b);
  } else {
    auto chunk = [&](json::object delta, const char* finish_reason) {
      json::object choice;
      choice["index"] = 0;
      choice["delta"] = std::move(delta);
      choice["logprobs"] = nullptr;
      choice["finish_reason"] = finish_reason ? json::value(finish_reason) : json::value(nullptr);
      json::array choices;
      choices.push_back(std::move(choice));
      json::object c;
      c["id"] = "chatcmpl-" + id;
      c["object"] = "chat.completion.chunk";
      c["created"] = kCreated;
      c["model"] = req.model;
      c["choices"] = std::move(choices);
      r.body += "data: " + json::serialize(c) + "\n\n";
    };
    json::object d1;
    d1["role"] = "assistant";
    d1["content"] = "";
    chunk(std::move(d1), nullptr);
    json::object d2;
    d2["content"] = text;
    chunk(std::move(d2), nullptr);
    chunk(json::object(), finish);
    if (req.include_usage) {
      json::object c;
      c["id"] = "chatcmpl-" + id;
      c["object"] = "chat.completion.chunk";
      c["created"] = kCreated;
      c["model"] = req.model;
      c["choices"] = json::array();
      c["usage"] = std::move(usage);
      r.body += "data: " + json::serialize(c) + "\n\n";
    }
    r.body += "data: [DONE]\n\n";
  }
  for (const auto& h : o.headers) r.headers.push_back(h);
  return r;
}

ScriptedResponse garbage_response() {
  ScriptedResponse r;
  r.status = 200;
  r.headers.emplace_back("content-type", "application/json");
  r.body = "<!-- not JSON -->\x01\x02 garbage from a simulated upstream";
  return r;
}

}  // namespace tollgate::simulate
