// Amazon SageMaker endpoint containers: InvokeEndpoint / InvokeEndpointWithResponseStream.
// Shapes: SageMaker Runtime API reference (PayloadPart {Bytes}), Hugging Face TGI `/generate`
// and `/generate_stream` bodies (inputs, parameters.max_new_tokens; generated_text; token events).
#include "mock.hpp"

#include <boost/json.hpp>

#include "http/aws_eventstream.hpp"

namespace tollgate::mock {

namespace json = boost::json;

namespace {

std::string payload_part(std::string_view bytes) {
  if (bytes.empty()) return {};
  return http::encode_event_stream_message(
      {{":event-type", "PayloadPart"}, {":content-type", "application/json"}, {":message-type", "event"}},
      R"({"Bytes":")" + base64_encode(bytes) + "\"}");
}

/// Errors, ids and the malformed frame as Bedrock's (the same AWS runtime conventions).
class SageMakerBase : public Api {
 public:
  std::string new_request_id() const override { return bedrock_api().new_request_id(); }
  std::string base_headers(std::string_view rid) const override { return bedrock_api().base_headers(rid); }
  std::string success_headers(const Completion& c, std::string_view rid) const override {
    return bedrock_api().success_headers(c, rid);
  }
  std::string_view family() const override { return "sagemaker"; }
  std::string_view stream_content_type() const override { return "application/vnd.amazon.eventstream"; }
  std::string stream_malformed() const override { return bedrock_api().stream_malformed(); }
  Reply error(const ErrorSpec& e) const override { return bedrock_api().error(e); }
};

/// A TGI container: no usage anywhere (TGI reports none), as real ones.
class Tgi final : public SageMakerBase {
 public:
  std::string new_completion_id() const override { return "tgi-" + random_token(12); }
  std::string body(const Completion& c) const override {
    return R"([{"generated_text":)" + json_quote(c.text(c.tokens)) + "}]";
  }
  std::string stream_open(const Completion&) const override { return {}; }
  std::string stream_token(const Completion& c, std::int64_t i) const override {
    return payload_part(R"(data:{"token":{"id":)" + std::to_string(i + 1) + R"(,"text":)" + json_quote(c.piece(i)) +
                        R"(,"logprob":-0.1,"special":false},"generated_text":null,"details":null})" + "\n\n");
  }
  std::string stream_finish(const Completion&) const override { return {}; }
  std::string stream_usage(const Completion&) const override { return {}; }
  std::string stream_done(const Completion& c) const override {
    return payload_part(R"(data:{"token":{"id":0,"text":"</s>","logprob":0,"special":true},"generated_text":)" +
                        json_quote(c.text(c.tokens)) + R"(,"details":{"finish_reason":")" +
                        (c.capped ? "length" : "eos_token") + R"(","generated_tokens":)" + std::to_string(c.tokens) +
                        "}}\n\n");
  }
};

/// An OpenAI-compatible container: OpenAI bodies; its SSE stream inside PayloadPart events.
class Chat final : public SageMakerBase {
 public:
  std::string new_completion_id() const override { return openai_api().new_completion_id(); }
  std::string body(const Completion& c) const override { return openai_api().body(c); }
  std::string stream_open(const Completion& c) const override { return payload_part(openai_api().stream_open(c)); }
  std::string stream_token(const Completion& c, std::int64_t i) const override {
    return payload_part(openai_api().stream_token(c, i));
  }
  std::string stream_finish(const Completion& c) const override { return payload_part(openai_api().stream_finish(c)); }
  std::string stream_usage(const Completion& c) const override { return payload_part(openai_api().stream_usage(c)); }
  std::string stream_done(const Completion& c) const override { return payload_part(openai_api().stream_done(c)); }
};

}  // namespace

const Api& sagemaker_tgi_api() {
  static const Tgi api;
  return api;
}

const Api& sagemaker_chat_api() {
  static const Chat api;
  return api;
}

bool sagemaker_to_chat_body(std::string_view text, const std::string& endpoint, bool stream, std::string& out, bool& tgi,
                            std::string& err) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) {
    err = "Received client error (400) from primary: the body is not a JSON object";
    return false;
  }
  auto& in = v.as_object();
  tgi = in.contains("inputs");
  if (tgi) {
    const auto* inputs = in.if_contains("inputs");
    if (!inputs->is_string()) {
      err = "Received client error (422) from primary: inputs must be a string";
      return false;
    }
    json::object body{{"model", endpoint}, {"messages", json::array{json::object{{"role", "user"}, {"content", *inputs}}}},
                      {"stream", stream}};
    if (const auto* p = in.if_contains("parameters"); p && p->is_object()) {
      const auto& o = p->get_object();
      if (const auto* m = o.if_contains("max_new_tokens")) body["max_tokens"] = *m;
      if (const auto* t = o.if_contains("temperature")) body["temperature"] = *t;
      if (const auto* t = o.if_contains("top_p")) body["top_p"] = *t;
      if (const auto* t = o.if_contains("stop")) body["stop"] = *t;
    }
    out = json::serialize(body);
    return true;
  }
  if (!in.contains("messages")) {
    err = "Received client error (400) from primary: neither inputs nor messages";
    return false;
  }
  in["model"] = endpoint;
  in["stream"] = stream;
  out = json::serialize(in);
  return true;
}

}  // namespace tollgate::mock
