#include "providers/cohere/embeddings.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/cohere/adapter.hpp"
#include "providers/embedding_inputs.hpp"
#include "providers/embeddings_list.hpp"

namespace tollgate::providers::cohere {
namespace json = boost::json;

namespace {

class CohereEmbeddings final : public Provider {
 public:
  void set_output_limit(const config::Deployment&, json::object&, std::int64_t, OutputField) const override {}

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& call,
                                                                  bool) const override {
    auto body = embed_body(call, d.upstream_model);
    if (!body) return std::unexpected(body.error());
    std::string base = d.api_base.empty() ? std::string("https://api.cohere.com") : d.api_base;
    while (!base.empty() && base.back() == '/') base.pop_back();
    // As for chat (adapter.cpp): a base, a base ending in /v2, or the whole /v2/chat URL.
    if (base.ends_with("/v2/chat")) base.resize(base.size() - 5);
    auto target = http::parse_url(base.ends_with("/v2") ? base + "/embed" : base + "/v2/embed");
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
    return outcome_from_cohere_error(status, body);
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
  json::array a;
  a.reserve(texts->size());
  for (auto t : *texts) a.emplace_back(t);
  json::object o{{"model", model},
                 {"texts", std::move(a)},
                 {"input_type", "search_document"},
                 {"embedding_types", json::array{"float"}}};
  if (const auto dims = embedding_dimensions(request)) o["output_dimension"] = *dims;
  return o;
}

std::expected<Provider::Parsed, std::string> embed_response(std::string_view body, std::string_view model) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
  auto& o = v.get_object();
  auto* by_type = o.if_contains("embeddings");
  auto* floats = by_type && by_type->is_object() ? by_type->get_object().if_contains("float") : nullptr;
  if (floats == nullptr || !floats->is_array() || floats->get_array().empty())
    return std::unexpected("upstream embeddings response has no embeddings.float");
  for (const auto& x : floats->get_array())
    if (!is_embedding_vector(x)) return std::unexpected("upstream embedding is not an array of numbers");
  Provider::Parsed p;
  const auto* meta = o.if_contains("meta");
  const auto* billed = meta && meta->is_object() ? meta->get_object().if_contains("billed_units") : nullptr;
  if (billed && billed->is_object())
    if (const auto n = detail::json_count(billed->get_object(), "input_tokens")) {
      p.usage.reported = true;
      p.usage.prompt_tokens = *n;
    }
  p.completion = embeddings_list(std::move(floats->get_array()), model, p.usage);
  return p;
}

const Provider& embeddings_adapter() {
  static const CohereEmbeddings p;
  return p;
}

}  // namespace tollgate::providers::cohere
