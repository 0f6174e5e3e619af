#include "providers/ollama/embeddings.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/embedding_inputs.hpp"
#include "providers/embeddings_list.hpp"
#include "providers/ollama/adapter.hpp"

namespace tollgate::providers::ollama {
namespace json = boost::json;

namespace {

class OllamaEmbeddings final : public Provider {
 public:
  void set_output_limit(const config::Deployment&, json::object&, std::int64_t, OutputField) const override {}

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& call,
                                                                  bool) const override {
    auto body = embed_body(call, d.upstream_model);
    if (!body) return std::unexpected(body.error());
    std::string base = d.api_base.empty() ? std::string("http://localhost:11434") : d.api_base;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto target = http::parse_url(base + "/api/embed");
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    if (!d.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + d.api_key);
    req.body = json::serialize(*body);
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    return embed_response(body, d.upstream_model);
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_ollama_error(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment&, bool) const override { return nullptr; }

  std::optional<Refusal> refuse_request(const config::Deployment&, const json::object& request) const override {
    return refuse_token_inputs(request);  // text only: token ids are OpenAI's and Azure's
  }

  const Provider* for_api(const config::Deployment&, CallApi api) const override {
    return api == CallApi::embeddings ? this : nullptr;
  }
};

}  // namespace

std::expected<json::object, std::string> embed_body(const json::object& request, std::string_view model) {
  auto texts = embedding_texts(request);
  if (!texts) return std::unexpected(texts.error());
  json::object o{{"model", model}};
  if (texts->size() == 1 && request.at("input").is_string()) {
    o["input"] = texts->front();
  } else {
    json::array a;
    a.reserve(texts->size());
    for (auto t : *texts) a.emplace_back(t);
    o["input"] = std::move(a);
  }
  if (const auto dims = embedding_dimensions(request)) o["dimensions"] = *dims;
  return o;
}

std::expected<Provider::Parsed, std::string> embed_response(std::string_view body, std::string_view model) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
  auto& o = v.get_object();
  auto* e = o.if_contains("embeddings");
  if (e == nullptr || !e->is_array() || e->get_array().empty())
    return std::unexpected("upstream embeddings response has no embeddings");
  for (const auto& x : e->get_array())
    if (!is_embedding_vector(x)) return std::unexpected("upstream embedding is not an array of numbers");
  Provider::Parsed p;
  if (const auto n = detail::json_count(o, "prompt_eval_count")) {
    p.usage.reported = true;
    p.usage.prompt_tokens = *n;
  }
  p.completion = embeddings_list(std::move(e->get_array()), model, p.usage);
  return p;
}

const Provider& embeddings_adapter() {
  static const OllamaEmbeddings p;
  return p;
}

}  // namespace tollgate::providers::ollama
