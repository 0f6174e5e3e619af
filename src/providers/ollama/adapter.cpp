#include "providers/ollama/adapter.hpp"

#include <boost/json.hpp>

#include "providers/ollama/embeddings.hpp"
#include "providers/ollama/translate.hpp"
#include "providers/openai_errors.hpp"

namespace tollgate::providers::ollama {
namespace json = boost::json;

namespace {

class Decoder final : public StreamDecoder {
 public:
  Decoder(std::string model, bool include_usage, bool generate) : inner_(std::move(model), include_usage, generate) {}
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override { inner_.on_event(ev, out); }
  bool finished() const override { return inner_.finished(); }
  Usage usage() const override { return inner_.usage(); }
  bool usage_final() const override { return inner_.usage_final(); }
  std::optional<policy::Outcome> error() const override {
    if (!inner_.error()) return std::nullopt;
    policy::Outcome o;
    o.status = 500;  // an error after a 200: the provider's fault unless its words say otherwise
    o.message = *inner_.error();
    return o;
  }

 private:
  NdjsonToChat inner_;
};

class OllamaProvider final : public Provider {
 public:
  explicit OllamaProvider(bool generate) : generate_(generate) {}

  void set_output_limit(const config::Deployment&, json::object& chat, std::int64_t tokens, OutputField) const override {
    chat.erase("max_completion_tokens");
    chat["max_tokens"] = tokens;  // sent as options.num_predict
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& chat,
                                                                  bool stream) const override {
    std::string base = d.api_base.empty() ? std::string("http://localhost:11434") : d.api_base;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto target = http::parse_url(base + (generate_ ? "/api/generate" : "/api/chat"));
    if (!target) return std::unexpected(target.error());
    auto body = generate_ ? chat_to_ollama_generate(chat, d.upstream_model, stream)
                          : chat_to_ollama_chat(chat, d.upstream_model, stream);
    if (!body) return std::unexpected(body.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    if (!d.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + d.api_key);
    req.body = json::serialize(*body);
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    Parsed p;
    auto c = response_to_chat(body, d.upstream_model, generate_, p.usage);
    if (!c) return std::unexpected(c.error());
    p.completion = std::move(*c);
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_ollama_error(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool include_usage) const override {
    return std::make_unique<Decoder>(d.upstream_model, include_usage, generate_);
  }

  http::StreamFraming stream_framing(const config::Deployment&) const override { return http::StreamFraming::ndjson; }

  const Provider* for_api(const config::Deployment&, CallApi api) const override {
    if (api == CallApi::chat) return this;
    return api == CallApi::embeddings ? &embeddings_adapter() : nullptr;  // /api/embed, whichever prefix
  }

 private:
  bool generate_;
};

}  // namespace

policy::Outcome outcome_from_ollama_error(int status, std::string_view body) {
  policy::Outcome o = outcome_from_openai_body(status, body);  // reads {"error": "..."} as Ollama writes it
  if (status == 404 && o.error_body && o.message.find("not found") != std::string::npos) o.error_code = "ollama_model_not_found";
  return o;
}

const Provider& chat_adapter() {
  static const OllamaProvider p(false);
  return p;
}

const Provider& generate_adapter() {
  static const OllamaProvider p(true);
  return p;
}

}  // namespace tollgate::providers::ollama
