// Amazon Bedrock Converse / ConverseStream wire format: bodies, AWS event-stream frames, errors.
// Shapes: Bedrock API reference "Converse", "ConverseStream" (ConverseStreamOutput events),
// "Common Errors"; the event-stream framing of src/http/aws_eventstream.hpp (one codec).
#include "mock.hpp"
#include "operations.hpp"

#include <boost/json.hpp>

#include "http/aws_eventstream.hpp"

namespace tollgate::mock {

namespace json = boost::json;

namespace {

std::string frame(std::string_view event_type, std::string_view payload) {
  return http::encode_event_stream_message(
      {{":event-type", std::string(event_type)}, {":content-type", "application/json"}, {":message-type", "event"}},
      payload);
}

// TokenUsage: inputTokens is the prompt without cache reads and writes (as Anthropic's).
std::string usage_object(const Completion& c) {
  const Counts k = c.full_counts();
  const bool q = c.usage_style == UsageStyle::string_counts;
  std::string out = R"({"inputTokens":)" + count_json(k.uncached_input(), q) + R"(,"outputTokens":)" +
                    count_json(k.completion, q) + R"(,"totalTokens":)" + count_json(k.prompt + k.completion, q);
  if (k.cached > 0) out += R"(,"cacheReadInputTokens":)" + count_json(k.cached, q);
  const auto writes = k.cache_write + k.cache_write_1h;
  if (writes > 0) out += R"(,"cacheWriteInputTokens":)" + count_json(writes, q);
  return out + "}";
}

std::string usage_member(const Completion& c) {
  if (c.usage_style == UsageStyle::omit) return {};
  if (c.usage_style == UsageStyle::null) return R"(,"usage":null)";
  return R"(,"usage":)" + usage_object(c);
}

std::string stop_reason(const Completion& c) {
  if (c.capped) return "max_tokens";
  return c.tool_name.empty() ? "end_turn" : "tool_use";
}

struct AwsError {
  int status = 500;
  std::string type = "InternalServerException";
  std::string message = "The server encountered an internal error while processing the request.";
};

int status_of_exception(std::string_view n) {
  if (n == "ThrottlingException" || n == "ModelNotReadyException") return 429;
  if (n == "ValidationException" || n == "ServiceQuotaExceededException") return 400;
  if (n == "ModelTimeoutException") return 408;
  if (n == "ModelErrorException") return 424;
  if (n == "ServiceUnavailableException") return 503;
  if (n == "AccessDeniedException" || n == "UnrecognizedClientException" || n == "InvalidSignatureException" ||
      n == "ExpiredTokenException")
    return 403;
  if (n == "ResourceNotFoundException") return 404;
  return 500;
}

AwsError describe(const ErrorSpec& e) {
  AwsError o;
  const std::string& n = e.name;
  if (n == "rate_limit_exceeded") {
    o = {429, "ThrottlingException", "Too many requests, please wait before trying again."};
  } else if (n == "context_length_exceeded") {
    o = {400, "ValidationException", "Input is too long for requested model."};
  } else if (n == "invalid_api_key") {
    o = {403, "UnrecognizedClientException", "The security token included in the request is invalid."};
  } else if (n == "expired_token") {
    o = {403, "ExpiredTokenException", "The security token included in the request is expired"};
  } else if (n == "permission") {
    o = {403, "AccessDeniedException", "You don't have access to the model with the specified model ID."};
  } else if (n == "not_found") {
    o = {404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier."};
  } else if (n == "server_error") {
    o = {500, "InternalServerException", "The server encountered an internal error while processing the request."};
  } else if (n == "overloaded") {
    o = {503, "ServiceUnavailableException", "Bedrock is unable to process your request."};
  } else if (n == "timeout") {
    o = {408, "ModelTimeoutException", "Model has timed out in processing the request."};
  } else if (n == "invalid_request") {
    o = {400, "ValidationException", "Malformed input request, please reformat your input and try again."};
  } else if (n.ends_with("Exception")) {
    o = {status_of_exception(n), n, n + " (tollgate-mock)"};
  } else if (!n.empty()) {
    o = {400, "ValidationException", n};
  } else {  // a bare status
    const int st = e.status ? e.status : 500;
    o.status = st;
    o.type = st == 429 ? "ThrottlingException" : st == 503 ? "ServiceUnavailableException" : st == 403 ? "AccessDeniedException"
           : st == 404 ? "ResourceNotFoundException" : st == 408 ? "ModelTimeoutException"
           : st >= 500 ? "InternalServerException" : "ValidationException";
    o.message = "tollgate-mock: status " + std::to_string(st);
  }
  if (e.status) o.status = e.status;
  if (!e.message.empty()) o.message = e.message;
  return o;
}

class Bedrock final : public Api {
 public:
  std::string new_request_id() const override {
    const std::string r = random_token(32);
    return r.substr(0, 8) + "-" + r.substr(8, 4) + "-" + r.substr(12, 4) + "-" + r.substr(16, 4) + "-" + r.substr(20, 12);
  }
  std::string new_completion_id() const override { return "bedrock-" + random_token(20); }
  std::string base_headers(std::string_view rid) const override { return "x-amzn-requestid: " + std::string(rid) + "\r\n"; }
  std::string success_headers(const Completion&, std::string_view rid) const override { return base_headers(rid); }
  std::string_view family() const override { return "bedrock"; }
  std::string_view stream_content_type() const override { return "application/vnd.amazon.eventstream"; }

  std::string body(const Completion& c) const override {
    std::string content = R"([{"text":)" + json_quote(c.text(c.tokens)) + "}";
    if (!c.tool_name.empty())
      content += R"(,{"toolUse":{"toolUseId":"tooluse_)" + c.id + R"(","name":)" + json_quote(c.tool_name) +
                 R"(,"input":)" + c.tool_arguments + "}}";
    content += "]";
    return R"({"output":{"message":{"role":"assistant","content":)" + content + R"(}},"stopReason":")" +
           stop_reason(c) + "\"" + usage_member(c) + R"(,"metrics":{"latencyMs":42}})";
  }

  std::string stream_open(const Completion&) const override { return frame("messageStart", R"({"role":"assistant"})"); }

  std::string stream_token(const Completion& c, std::int64_t i) const override {
    return frame("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":)" + json_quote(c.piece(i)) + "}}");
  }

  // The text block's end, the tool call (its input in two fragments, as Bedrock splits it), messageStop.
  std::string stream_finish(const Completion& c) const override {
    std::string out = frame("contentBlockStop", R"({"contentBlockIndex":0})");
    if (!c.tool_name.empty()) {
      out += frame("contentBlockStart", R"({"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_)" + c.id +
                                            R"(","name":)" + json_quote(c.tool_name) + "}}}");
      const std::string& a = c.tool_arguments;
      const std::size_t half = a.size() / 2;
      for (const auto& part : {a.substr(0, half), a.substr(half)})
        out += frame("contentBlockDelta", R"({"contentBlockIndex":1,"delta":{"toolUse":{"input":)" + json_quote(part) + "}}}");
      out += frame("contentBlockStop", R"({"contentBlockIndex":1})");
    }
    return out + frame("messageStop", R"({"stopReason":")" + stop_reason(c) + "\"}");
  }

  std::string stream_usage(const Completion& c) const override {
    std::string payload = R"({"metrics":{"latencyMs":42})" + usage_member(c) + "}";
    return frame("metadata", payload);
  }

  std::string stream_done(const Completion&) const override { return {}; }  // metadata is the last event

  // A frame whose message CRC is wrong (the last byte flipped).
  std::string stream_malformed() const override {
    std::string f = frame("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"corrupt"}})");
    f.back() = static_cast<char>(f.back() ^ 0x5A);
    return f;
  }

  Reply error(const ErrorSpec& e) const override {
    if (e.name == "bad_gateway_html") {
      Reply r = bad_gateway_html(base_headers(e.request_id));
      if (e.status) r.status = e.status;
      return r;
    }
    const AwsError o = describe(e);
    Reply r;
    r.status = o.status;
    r.headers = base_headers(e.request_id) + "x-amzn-errortype: " + o.type + ":http://internal.amazon.com/coral/com.amazon.bedrock/\r\n";
    if (e.retry_after || e.retry_after_ms) r.headers += "retry-after: " + retry_after_value(e.retry_after) + "\r\n";
    r.body = R"({"message":)" + json_quote(o.message) + "}";
    return r;
  }
};

bool is_hex64(std::string_view s) {
  if (s.size() < 64) return false;
  for (std::size_t i = 0; i < 64; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// A Converse content block → an Anthropic one (text, image, tool_use, tool_result); others dropped.
std::optional<json::object> block_of(const json::object& b) {
  if (const auto* t = b.if_contains("text"); t && t->is_string()) return json::object{{"type", "text"}, {"text", *t}};
  if (const auto* im = b.if_contains("image"); im && im->is_object()) {
    const auto& o = im->get_object();
    const auto* fmt = o.if_contains("format");
    const auto* src = o.if_contains("source");
    const auto* bytes = src && src->is_object() ? src->get_object().if_contains("bytes") : nullptr;
    if (!fmt || !fmt->is_string() || !bytes || !bytes->is_string()) return std::nullopt;
    return json::object{{"type", "image"},
                        {"source", json::object{{"type", "base64"},
                                                {"media_type", "image/" + std::string(fmt->get_string())},
                                                {"data", *bytes}}}};
  }
  if (const auto* tu = b.if_contains("toolUse"); tu && tu->is_object()) {
    const auto& o = tu->get_object();
    json::object out{{"type", "tool_use"}, {"id", o.contains("toolUseId") ? o.at("toolUseId") : json::value("")},
                     {"name", o.contains("name") ? o.at("name") : json::value("")}};
    out["input"] = o.contains("input") ? o.at("input") : json::object();
    return out;
  }
  if (const auto* tr = b.if_contains("toolResult"); tr && tr->is_object()) {
    json::array content;
    if (const auto* c = tr->get_object().if_contains("content"); c && c->is_array())
      for (const auto& e : c->get_array())
        if (e.is_object())
          if (auto x = block_of(e.get_object()); x && x->at("type") == "text") content.push_back(std::move(*x));
    return json::object{{"type", "tool_result"}, {"tool_use_id", tr->get_object().contains("toolUseId") ? tr->get_object().at("toolUseId") : json::value("")},
                        {"content", std::move(content)}};
  }
  return std::nullopt;
}

}  // namespace

const Api& bedrock_api() {
  static const Bedrock api;
  return api;
}

std::optional<Reply> aws_signature_error(std::string_view auth, std::string_view amz_date) {
  auto reply = [](std::string type, std::string message) {
    Reply r;
    r.status = 403;
    r.headers = "x-amzn-errortype: " + type + ":http://internal.amazon.com/coral/com.amazon.coral.service/\r\n";
    r.body = R"({"message":)" + json_quote(message) + "}";
    return r;
  };
  if (auth.empty()) return reply("UnrecognizedClientException", "Missing Authentication Token");
  constexpr std::string_view scheme = "AWS4-HMAC-SHA256 Credential=";
  const auto sh = auth.find(", SignedHeaders=");
  const auto sg = auth.find(", Signature=");
  const bool shaped = auth.starts_with(scheme) && auth.find("/aws4_request") != std::string_view::npos &&
                      sh != std::string_view::npos && sg != std::string_view::npos && sg > sh &&
                      auth.find("x-amz-date", sh) < sg && is_hex64(auth.substr(sg + 12)) && auth.size() == sg + 12 + 64 &&
                      amz_date.size() == 16 && amz_date[8] == 'T' && amz_date.back() == 'Z';
  if (!shaped)
    return reply("InvalidSignatureException",
                 "The request signature we calculated does not match the signature you provided.");
  return std::nullopt;
}

bool converse_to_messages_body(std::string_view converse, const std::string& model, bool stream, std::string& out,
                               std::string& err) {
  boost::system::error_code ec;
  const auto v = json::parse(converse, ec);
  if (ec || !v.is_object()) {
    err = "Malformed input request: the body is not a JSON object";
    return false;
  }
  const auto& in = v.get_object();
  const auto* msgs = in.if_contains("messages");
  if (!msgs || !msgs->is_array()) {
    err = "Malformed input request: #: required key [messages] not found";
    return false;
  }
  json::array messages;
  for (const auto& mv : msgs->get_array()) {
    if (!mv.is_object()) continue;
    const auto& m = mv.get_object();
    json::array blocks;
    if (const auto* c = m.if_contains("content"); c && c->is_array())
      for (const auto& b : c->get_array())
        if (b.is_object())
          if (auto x = block_of(b.get_object())) blocks.push_back(std::move(*x));
    messages.push_back(json::object{{"role", m.contains("role") ? m.at("role") : json::value("user")}, {"content", std::move(blocks)}});
  }
  json::object body{{"model", model}, {"messages", std::move(messages)}, {"stream", stream}};
  if (const auto* sys = in.if_contains("system"); sys && sys->is_array()) {
    json::array blocks;
    for (const auto& b : sys->get_array())
      if (b.is_object())
        if (auto x = block_of(b.get_object())) blocks.push_back(std::move(*x));
    body["system"] = std::move(blocks);
  }
  json::value max_tokens = 4096;
  if (const auto* ic = in.if_contains("inferenceConfig"); ic && ic->is_object()) {
    const auto& o = ic->get_object();
    if (const auto* mt = o.if_contains("maxTokens")) max_tokens = *mt;
    if (const auto* t = o.if_contains("temperature")) body["temperature"] = *t;
    if (const auto* t = o.if_contains("topP")) body["top_p"] = *t;
    if (const auto* t = o.if_contains("stopSequences")) body["stop"] = *t;
  }
  body["max_tokens"] = max_tokens;
  out = json::serialize(body);
  return true;
}

// InvokeModel bodies of the embedding models (Bedrock user guide, "Amazon Titan Embeddings
// Text" and "Cohere Embed models"): Titan `{"inputText", "dimensions"?, "normalize"?}` (v1:
// inputText only), Cohere `{"texts": [1..96 strings], "input_type", "truncate"?,
// "embedding_types"?}`. Validation messages are Bedrock's ValidationException wording.
bool bedrock_invoke_to_embeddings(std::string_view body, const std::string& model, std::string& out, Operation& op,
                                  std::string& err) {
  const bool titan_v2 = model.find("amazon.titan-embed-text-v2") != std::string::npos;
  const bool titan_v1 = model.find("amazon.titan-embed-text-v1") != std::string::npos ||
                        model.find("amazon.titan-embed-g1-text") != std::string::npos;
  const bool cohere = model.find("cohere.embed-") != std::string::npos;
  if (!titan_v2 && !titan_v1 && !cohere) {
    err = "The provided model identifier is invalid.";
    return false;
  }
  boost::system::error_code ec;
  const auto v = json::parse(body, ec);
  if (ec || !v.is_object()) {
    err = "Malformed input request: the body is not a JSON object";
    return false;
  }
  const auto& in = v.get_object();
  json::object o{{"model", model}, {"encoding_format", "float"}};
  if (cohere) {
    op = Operation::cohere_embeddings;
    for (const auto* key : {"texts", "input_type"})
      if (!in.contains(key)) {
        err = std::string("Malformed input request: #: required key [") + key + "] not found, please reformat your input and try again.";
        return false;
      }
    const auto& texts = in.at("texts");
    bool ok = texts.is_array() && !texts.get_array().empty() && texts.get_array().size() <= 96;
    for (const auto& t : ok ? texts.get_array() : json::array{}) ok = ok && t.is_string();
    const auto& type = in.at("input_type");
    const bool type_ok = type.is_string() && (type == "search_document" || type == "search_query" ||
                                              type == "classification" || type == "clustering");
    if (!ok || !type_ok) {
      err = ok ? "Malformed input request: #/input_type: " + json::serialize(type) + " is not a valid enum value"
               : "Malformed input request: #/texts: expected 1 to 96 strings, please reformat your input and try again.";
      return false;
    }
    o["input"] = texts;
    o["dimensions"] = 1024;
  } else {
    op = Operation::titan_embeddings;
    const auto* text = in.if_contains("inputText");
    if (!text || !text->is_string()) {
      err = "Malformed input request: #: required key [inputText] not found, please reformat your input and try again.";
      return false;
    }
    for (const auto& kv : in) {
      const bool known = kv.key() == "inputText" || (titan_v2 && (kv.key() == "dimensions" || kv.key() == "normalize" ||
                                                                  kv.key() == "embeddingTypes"));
      if (!known) {
        err = "Malformed input request: extraneous key [" + std::string(kv.key()) + "] is not permitted, please reformat your input and try again.";
        return false;
      }
    }
    std::int64_t dims = titan_v2 ? 1024 : 1536;
    if (const auto* d = in.if_contains("dimensions")) {
      if (!d->is_int64() || (d->get_int64() != 256 && d->get_int64() != 512 && d->get_int64() != 1024)) {
        err = "Malformed input request: #/dimensions: " + json::serialize(*d) + " is not a valid enum value, please reformat your input and try again.";
        return false;
      }
      dims = d->get_int64();
    }
    o["input"] = *text;
    o["dimensions"] = dims;
  }
  out = json::serialize(o);
  return true;
}

}  // namespace tollgate::mock
