// SageMaker real-time inference endpoints, as LiteLLM calls them:
// - `sagemaker/<endpoint>`: a Hugging Face TGI container (LiteLLM's default for the prefix):
//   `{"inputs": prompt, "parameters": {"max_new_tokens", "temperature", "top_p", "stop"}}` →
//   `[{"generated_text"}]`; streamed TGI-style (`data:{"token":{"text"},"generated_text",...}`).
//   TGI reports no usage: the bill is unknown and the attempt is charged its reservation.
// - `sagemaker_chat/<endpoint>`: an OpenAI-compatible container (TGI's Messages API, vLLM,
//   LMI): the chat body as is → a chat.completion with its usage.
// Streams: InvokeEndpointWithResponseStream (`/invocations-response-stream`), AWS event-stream
// `PayloadPart` events whose `Bytes` (base64) carry the container's own SSE stream.
// https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpointWithResponseStream.html
#include "providers/sagemaker/adapter.hpp"
#include "core/json_parse.hpp"

#include <array>
#include <boost/json.hpp>

#include "budget/inline_data.hpp"
#include "providers/bedrock/adapter.hpp"
#include "providers/bedrock/errors.hpp"

namespace tollgate::providers::sagemaker {
namespace json = boost::json;

namespace {

bool chat_mode(const config::Deployment& d) { return d.provider_prefix == "sagemaker_chat"; }

std::string_view str(const json::object& o, std::string_view k) noexcept {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

/// The messages' text, one message per line (LiteLLM's default prompt for a model it has no
/// chat template for concatenates the contents).
std::string prompt_of(const json::object& chat) {
  std::string out;
  const auto* msgs = chat.if_contains("messages");
  if (!msgs || !msgs->is_array()) return out;
  for (const auto& mv : msgs->get_array()) {
    const auto* m = mv.if_object();
    const auto* c = m ? m->if_contains("content") : nullptr;
    if (!c) continue;
    std::string text;
    if (c->is_string()) text = c->get_string();
    else if (c->is_array())
      for (const auto& p : c->get_array())
        if (p.is_object()) text += str(p.get_object(), "text");
    if (text.empty()) continue;
    if (!out.empty()) out += '\n';
    out += text;
  }
  return out;
}

json::object tgi_body(const json::object& chat, bool stream) {
  json::object params;
  if (const auto* v = chat.if_contains("max_tokens"); v && v->is_number()) params["max_new_tokens"] = *v;
  for (const auto& [from, to] : std::array<std::pair<std::string_view, std::string_view>, 2>{{{"temperature", "temperature"}, {"top_p", "top_p"}}})
    if (const auto* v = chat.if_contains(from); v && v->is_number()) params[to] = *v;
  if (const auto* stop = chat.if_contains("stop")) {
    if (stop->is_string()) params["stop"] = json::array{*stop};
    else if (stop->is_array()) params["stop"] = *stop;
  }
  return json::object{{"inputs", prompt_of(chat)}, {"parameters", std::move(params)}, {"stream", stream}};
}

json::object chunk(std::string_view id, std::string_view model, json::object delta, const char* finish) {
  json::object choice{{"index", 0}, {"delta", std::move(delta)}};
  choice["finish_reason"] = finish ? json::value(finish) : json::value(nullptr);
  return json::object{{"id", id}, {"object", "chat.completion.chunk"}, {"created", 0}, {"model", model},
                      {"choices", json::array{std::move(choice)}}};
}

/// PayloadPart events → the container's SSE events → chunks (chat: the OpenAI decoder; TGI:
/// token texts, then a finish chunk at the event with `generated_text`). Exceptions
/// (ModelStreamError, InternalStreamFailure) set error().
class Decoder final : public StreamDecoder {
 public:
  Decoder(bool chat, std::string model, bool include_usage)
      : chat_(chat), model_(std::move(model)), inner_(chat ? openai_stream_decoder(include_usage) : nullptr) {}

  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override {
    if (error_) return;
    boost::system::error_code ec;
    const auto v = core::parse_json(ev.data, ec);
    if (ev.id == "exception" || ev.id == "error") {
      policy::Outcome o;
      o.error_type = o.error_code = aws::exception_name(ev.event);
      o.status = o.error_type == "ModelStreamError" ? 424 : 500;
      if (!ec && v.is_object())
        for (const std::string_view k : {"Message", "message"})
          if (o.message.empty()) o.message = std::string(str(v.get_object(), k));
      if (o.message.empty()) o.message = "upstream stream reported " + o.error_type;
      error_ = std::move(o);
      return;
    }
    if (ev.event != "PayloadPart" || ec || !v.is_object()) return;
    const auto b64 = str(v.get_object(), "Bytes");
    std::string bytes;
    budget::Base64Reader r(b64);
    while (auto c = r.next()) bytes.push_back(static_cast<char>(*c));
    sse_.feed(bytes, [&](const http::SseEvent& inner) { on_inner(inner, out); });
  }
  bool finished() const override { return chat_ ? inner_->finished() : finished_; }
  Usage usage() const override { return chat_ ? inner_->usage() : Usage{}; }
  bool usage_final() const override { return chat_ && inner_->usage_final(); }
  std::optional<policy::Outcome> error() const override {
    if (error_) return error_;
    return chat_ ? inner_->error() : std::nullopt;
  }

 private:
  void on_inner(const http::SseEvent& e, std::vector<std::string>& out) {
    if (chat_) {
      inner_->on_event(e, out);
      return;
    }
    boost::system::error_code ec;
    const auto v = core::parse_json(e.data, ec);
    if (ec || !v.is_object()) return;
    const auto& o = v.get_object();
    if (!started_) {
      out.push_back(json::serialize(chunk(id_, model_, json::object{{"role", "assistant"}, {"content", ""}}, nullptr)));
      started_ = true;
    }
    if (const auto* t = o.if_contains("token"); t && t->is_object()) {
      const auto& tok = t->get_object();
      const auto* special = tok.if_contains("special");
      if (!(special && special->is_bool() && special->get_bool()))
        out.push_back(json::serialize(chunk(id_, model_, json::object{{"content", str(tok, "text")}}, nullptr)));
    }
    if (const auto* g = o.if_contains("generated_text"); g && g->is_string()) {
      const char* finish = "stop";
      if (const auto* d = o.if_contains("details"); d && d->is_object() && str(d->get_object(), "finish_reason") == "length")
        finish = "length";
      out.push_back(json::serialize(chunk(id_, model_, json::object(), finish)));
      finished_ = true;
    }
  }

  bool chat_;
  std::string model_;
  std::string id_ = "chatcmpl-sagemaker";
  std::unique_ptr<StreamDecoder> inner_;
  http::SseParser sse_;
  bool started_ = false;
  bool finished_ = false;
  std::optional<policy::Outcome> error_;
};

class SageMakerProvider final : public Provider {
 public:
  void set_output_limit(const config::Deployment&, json::object& chat, std::int64_t tokens, OutputField) const override {
    chat.erase("max_completion_tokens");
    chat["max_tokens"] = tokens;  // TGI: parameters.max_new_tokens
  }
  std::optional<std::string> credentials_error(const config::Deployment& d) const override {
    return bedrock::aws_credentials_error(d);
  }
  bool relays_openai_body() const override { return false; }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& chat,
                                                                  bool stream) const override {
    std::string base = d.api_base.empty() ? "https://runtime.sagemaker." + d.cloud.aws_region_name + ".amazonaws.com" : d.api_base;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto target = http::parse_url(base + "/endpoints/" + bedrock::path_segment(d.upstream_model) +
                                  (stream ? "/invocations-response-stream" : "/invocations"));
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    if (chat_mode(d)) {
      json::object body = chat;
      body["model"] = d.upstream_model;
      if (stream) {
        body["stream"] = true;
        body["stream_options"] = json::object{{"include_usage", true}};
      } else {
        body.erase("stream");
        body.erase("stream_options");
      }
      req.body = json::serialize(body);
    } else {
      req.body = json::serialize(tgi_body(chat, stream));
    }
    req.headers.emplace_back("Accept", stream ? "application/vnd.amazon.eventstream" : "application/json");
    bedrock::sign_request(req, d, "sagemaker");
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec);
    if (ec) return std::unexpected("upstream returned a body that is not JSON");
    Parsed p;
    if (chat_mode(d)) {
      if (!v.is_object() || !v.get_object().contains("choices")) return std::unexpected("upstream response has no choices");
      p.usage = usage_from_openai_response(v.get_object());
      p.completion = std::move(v.as_object());
      return p;
    }
    // TGI: [{"generated_text": ...}] (some containers answer the bare object).
    const json::object* o = v.if_object();
    if (v.is_array() && !v.get_array().empty()) o = v.get_array()[0].if_object();
    if (!o || !o->contains("generated_text")) return std::unexpected("upstream response has no generated_text");
    const char* finish = "stop";
    if (const auto* det = o->if_contains("details"); det && det->is_object() && str(det->get_object(), "finish_reason") == "length")
      finish = "length";
    p.completion = json::object{
        {"id", "chatcmpl-sagemaker"}, {"object", "chat.completion"}, {"created", 0}, {"model", d.upstream_model},
        {"choices", json::array{json::object{{"index", 0},
                                             {"message", json::object{{"role", "assistant"}, {"content", str(*o, "generated_text")}}},
                                             {"finish_reason", finish}}}}};
    return p;  // usage not reported: the bill is unknown (the reservation is charged)
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return aws::outcome_from_aws_error(status, body, {});
  }
  std::string_view error_type_header() const override { return "x-amzn-ErrorType"; }
  policy::Outcome parse_typed_error(int status, std::string_view body, std::string_view type) const override {
    return aws::outcome_from_aws_error(status, body, type);
  }
  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool include_usage) const override {
    return std::make_unique<Decoder>(chat_mode(d), d.upstream_model, include_usage);
  }
  http::StreamFraming stream_framing(const config::Deployment&) const override {
    return http::StreamFraming::aws_eventstream;
  }
};

}  // namespace

const Provider& adapter() {
  static const SageMakerProvider instance;
  return instance;
}

}  // namespace tollgate::providers::sagemaker
