#include "providers/anthropic/adapter.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/anthropic/translate.hpp"

namespace tollgate::providers::anthropic {
namespace json = boost::json;

namespace {

constexpr std::string_view kDefaultVersion = "2023-06-01";
constexpr std::int64_t kDefaultMaxTokens = 4096;

policy::Outcome outcome_from(int status, const ErrorFields& f) {
  policy::Outcome o;
  o.status = status;
  o.error_type = f.type;
  o.error_code = f.code.empty() ? f.type : f.code;
  o.message = f.message;
  return o;
}

class Decoder final : public StreamDecoder {
 public:
  Decoder(std::string model, bool include_usage) : inner_(std::move(model), include_usage) {}
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override { inner_.on_event(ev, out); }
  bool finished() const override { return inner_.finished(); }
  bool accept_end_without_terminator(std::vector<std::string>& out) override { return inner_.end_without_stop(out); }
  Usage usage() const override { return inner_.usage(); }
  bool usage_final() const override { return inner_.usage_final(); }
  std::optional<policy::Outcome> error() const override {
    if (!inner_.error()) return std::nullopt;
    const auto f = parse_anthropic_error(json::value(json::object{{"type", "error"}, {"error", *inner_.error()}}));
    const int status = f.type == "overloaded_error" ? 529 : f.type == "rate_limit_error" ? 429 : 500;
    return outcome_from(status, f);
  }

 private:
  MessagesStreamToChat inner_;
};

/// What a native stream relays: every event's data unchanged (Anthropic's events carry their
/// name as `type`), read on the way by the translation's decoder for the usage, the end and the
/// errors. An `error` event is not relayed (the sink ends the stream with its own); nor is what
/// follows message_stop, nor an OpenAI-style `[DONE]` (not JSON: an Anthropic client cannot read it).
class NativeDecoder final : public StreamDecoder {
 public:
  explicit NativeDecoder(std::string model) : inner_(std::move(model), true) {}
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override {
    if (inner_.finished() || ev.data == "[DONE]") return;
    scratch_.clear();
    inner_.on_event(ev, scratch_);
    if (ev.event != "error" && !inner_.error()) out.emplace_back(ev.data);
  }
  bool finished() const override { return inner_.finished(); }
  // A whole answer without its message_stop: the client is given one.
  bool accept_end_without_terminator(std::vector<std::string>& out) override {
    scratch_.clear();
    if (!inner_.end_without_stop(scratch_)) return false;
    out.emplace_back(R"({"type":"message_stop"})");
    return true;
  }
  // Anthropic events: a content block's delta, or a tool_use block's start.
  bool carries_output(std::string_view data) const override {
    return data.find("\"content_block_delta\"") != std::string_view::npos ||
           (data.find("\"content_block_start\"") != std::string_view::npos &&
            data.find("\"tool_use\"") != std::string_view::npos);
  }
  Usage usage() const override { return inner_.usage(); }
  bool usage_final() const override { return inner_.usage_final(); }
  std::optional<policy::Outcome> error() const override {
    if (!inner_.error()) return std::nullopt;
    const auto f = parse_anthropic_error(json::value(json::object{{"type", "error"}, {"error", *inner_.error()}}));
    const int status = f.type == "overloaded_error" ? 529 : f.type == "rate_limit_error" ? 429 : 500;
    return outcome_from(status, f);
  }

 private:
  MessagesStreamToChat inner_;
  std::vector<std::string> scratch_;
};

/// POST {base}/v1/messages with Anthropic's auth and version headers, no body yet.
std::expected<http::OutgoingRequest, std::string> messages_request(const config::Deployment& d) {
  std::string base = d.api_base.empty() ? std::string("https://api.anthropic.com") : d.api_base;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url;
  if (base.ends_with("/v1/messages")) url = base;
  else if (base.ends_with("/v1")) url = base + "/messages";
  else url = base + "/v1/messages";
  auto target = http::parse_url(url);
  if (!target) return std::unexpected(target.error());
  http::OutgoingRequest req;
  req.target = std::move(*target);
  if (!d.api_key.empty()) req.headers.emplace_back("x-api-key", d.api_key);
  req.headers.emplace_back("anthropic-version", d.api_version.empty() ? std::string(kDefaultVersion) : d.api_version);
  return req;
}

const Provider& native_messages();

class AnthropicProvider : public Provider {
 public:
  /// Chat (translated) and, natively, Anthropic Messages (a /v1/messages call's own body).
  const Provider* for_api(const config::Deployment&, CallApi api) const override {
    return api == CallApi::chat ? this : api == CallApi::messages ? &native_messages() : nullptr;
  }

  void set_output_limit(const config::Deployment&, json::object& chat, std::int64_t tokens,
                        OutputField) const override {
    chat.erase("max_completion_tokens");
    chat["max_tokens"] = tokens;
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& chat,
                                                                  bool stream) const override {
    auto req = messages_request(d);
    if (!req) return req;
    auto body = chat_request_to_messages(chat, d.upstream_model, d.max_output_tokens.value_or(kDefaultMaxTokens));
    if (stream) body["stream"] = true;
    else body.erase("stream");
    req->body = json::serialize(body);
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec);
    if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
    const auto& o = v.as_object();
    auto* content = o.if_contains("content");
    if (!content || !content->is_array()) return std::unexpected("upstream response is not an Anthropic message");
    std::string model = d.upstream_model;
    if (auto* m = o.if_contains("model"); m && m->is_string()) model = std::string(m->as_string());
    Parsed p;
    p.completion = messages_response_to_chat(o, model);
    if (const auto* u = o.if_contains("usage")) p.usage = usage_from_anthropic(*u);
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec);
    if (ec) {
      policy::Outcome o;
      o.status = status;
      o.message = "upstream answered " + std::to_string(status) + " with a non-JSON body";
      return o;
    }
    auto out = outcome_from(status, parse_anthropic_error(v));
    // Anthropic's error shape: {"type":"error","error":{...}}; anything else is not its answer.
    const auto* o = v.if_object();
    const auto* type = o ? o->if_contains("type") : nullptr;
    const auto* err = o ? o->if_contains("error") : nullptr;
    out.error_body = type && type->is_string() && type->as_string() == "error" && err && err->is_object();
    return out;
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool include_usage) const override {
    return std::make_unique<Decoder>(d.upstream_model, include_usage);
  }
};

/// The caller's own Messages body (a /v1/messages call), sent with `model` and `max_tokens`
/// rewritten and every other field as the caller wrote it; the answer relayed as Anthropic sent it.
class NativeMessages final : public AnthropicProvider {
 public:
  bool relays_openai_body() const override { return true; }  // the message is relayed byte for byte

  void set_output_limit(const config::Deployment&, json::object& body, std::int64_t tokens, OutputField) const override {
    body["max_tokens"] = tokens;
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& body,
                                                                  bool stream) const override {
    auto req = messages_request(d);
    if (!req) return req;
    body["model"] = d.upstream_model;
    if (stream) body["stream"] = true;
    else body.erase("stream");
    req->body = json::serialize(body);
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment&, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec);
    if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
    auto& o = v.as_object();
    auto* content = o.if_contains("content");
    if (!content || !content->is_array()) return std::unexpected("upstream response is not an Anthropic message");
    Parsed p;
    if (const auto* u = o.if_contains("usage")) p.usage = usage_from_anthropic(*u);
    p.completion = std::move(o);
    return p;
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool) const override {
    return std::make_unique<NativeDecoder>(d.upstream_model);
  }
};

const Provider& native_messages() {
  static const NativeMessages instance;
  return instance;
}

}  // namespace

const Provider& adapter() {
  static const AnthropicProvider instance;
  return instance;
}

const Provider& native_adapter() { return native_messages(); }

}  // namespace tollgate::providers::anthropic
