#include "providers/cohere/adapter.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/cohere/embeddings.hpp"
#include "providers/cohere/translate.hpp"

namespace tollgate::providers::cohere {
namespace json = boost::json;

namespace {

class Decoder final : public StreamDecoder {
 public:
  Decoder(std::string model, bool include_usage) : inner_(std::move(model), include_usage) {}
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override { inner_.on_event(ev, out); }
  bool finished() const override { return inner_.finished(); }
  Usage usage() const override { return inner_.usage(); }
  bool usage_final() const override { return inner_.usage_final(); }
  std::optional<policy::Outcome> error() const override {
    if (!inner_.error()) return std::nullopt;
    policy::Outcome o;
    o.status = 500;
    o.message = *inner_.error();
    return o;
  }

 private:
  StreamToChat inner_;
};

class CohereProvider final : public Provider {
 public:
  void set_output_limit(const config::Deployment&, json::object& chat, std::int64_t tokens, OutputField) const override {
    chat.erase("max_completion_tokens");
    chat["max_tokens"] = tokens;
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& chat,
                                                                  bool stream) const override {
    std::string base = d.api_base.empty() ? std::string("https://api.cohere.com") : d.api_base;
    while (!base.empty() && base.back() == '/') base.pop_back();
    // LiteLLM's forms: a base, a base ending in /v2, or the whole /v2/chat URL.
    std::string url;
    if (base.ends_with("/v2/chat")) url = base;
    else if (base.ends_with("/v2")) url = base + "/chat";
    else url = base + "/v2/chat";
    auto target = http::parse_url(url);
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    if (!d.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + d.api_key);
    req.body = json::serialize(chat_to_cohere(chat, d.upstream_model, stream));
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    Parsed p;
    auto c = response_to_chat(body, d.upstream_model, p.usage);
    if (!c) return std::unexpected(c.error());
    p.completion = std::move(*c);
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_cohere_error(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool include_usage) const override {
    return std::make_unique<Decoder>(d.upstream_model, include_usage);
  }

  const Provider* for_api(const config::Deployment&, CallApi api) const override {
    if (api == CallApi::chat) return this;
    return api == CallApi::embeddings ? &embeddings_adapter() : nullptr;  // /v2/embed
  }
};

}  // namespace

policy::Outcome outcome_from_cohere_error(int status, std::string_view body) {
  policy::Outcome o;
  o.status = status;
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  const auto* obj = ec ? nullptr : v.if_object();
  const auto* m = obj ? obj->if_contains("message") : nullptr;
  if (m && m->is_string()) {
    o.message = std::string(m->get_string());
    o.error_body = true;
  } else {
    o.message = "upstream answered " + std::to_string(status) + " with a body that is not a Cohere error";
  }
  return o;
}

const Provider& adapter() {
  static const CohereProvider p;
  return p;
}

}  // namespace tollgate::providers::cohere
