#include "providers/gemini/embeddings.hpp"
#include "core/json_parse.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "providers/embedding_inputs.hpp"
#include "providers/embeddings_list.hpp"
#include "providers/gemini/adapter.hpp"
#include "providers/gemini/errors.hpp"
#include "providers/gemini/vertex_auth.hpp"

namespace tollgate::providers::gemini {
namespace json = boost::json;

namespace {

json::object embed_content(std::string_view text, std::string_view model, std::int64_t dimensions) {
  json::object o{{"model", "models/" + std::string(model)},
                 {"content", json::object{{"parts", json::array{json::object{{"text", text}}}}}}};
  if (dimensions > 0) o["outputDimensionality"] = dimensions;
  return o;
}

/// `values` of a ContentEmbedding object, moved out; null when it is not a vector.
json::value take_values(json::value* embedding) {
  auto* o = embedding ? embedding->if_object() : nullptr;
  auto* v = o ? o->if_contains("values") : nullptr;
  if (v == nullptr || !is_embedding_vector(*v)) return nullptr;
  return std::move(*v);
}

class GoogleEmbeddings final : public Provider {
 public:
  explicit GoogleEmbeddings(bool vertex) : vertex_(vertex) {}

  void set_output_limit(const config::Deployment&, json::object&, std::int64_t, OutputField) const override {}

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& call,
                                                                  bool) const override {
    auto texts = embedding_texts(call);
    if (!texts) return std::unexpected(texts.error());
    const std::int64_t dims = embedding_dimensions(call).value_or(0);
    const char* method = vertex_ ? ":predict" : texts->size() == 1 ? ":embedContent" : ":batchEmbedContents";
    auto target = http::parse_url(model_url(d, vertex_, method));
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    if (!vertex_ && !d.api_key.empty()) req.headers.emplace_back("x-goog-api-key", d.api_key);
    req.body = json::serialize(vertex_ ? vertex_embed_body(*texts, dims) : gemini_embed_body(*texts, d.upstream_model, dims));
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    return vertex_ ? vertex_embed_response(body, d.upstream_model) : gemini_embed_response(body, d.upstream_model);
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_google_body(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment&, bool) const override { return nullptr; }

  const Authorizer* authorizer() const override { return vertex_ ? &vertex_authorizer() : nullptr; }

  std::optional<Refusal> refuse_request(const config::Deployment&, const json::object& request) const override {
    return refuse_token_inputs(request);  // text only: token ids are OpenAI's and Azure's
  }

  const Provider* for_api(const config::Deployment&, CallApi api) const override {
    return api == CallApi::embeddings ? this : nullptr;
  }

 private:
  bool vertex_;
};

}  // namespace

json::object gemini_embed_body(const std::vector<std::string_view>& texts, std::string_view model, std::int64_t dimensions) {
  if (texts.size() == 1) return embed_content(texts.front(), model, dimensions);
  json::array requests;
  requests.reserve(texts.size());
  for (auto t : texts) requests.push_back(embed_content(t, model, dimensions));
  return json::object{{"requests", std::move(requests)}};
}

json::object vertex_embed_body(const std::vector<std::string_view>& texts, std::int64_t dimensions) {
  json::array instances;
  instances.reserve(texts.size());
  for (auto t : texts) instances.push_back(json::object{{"content", t}});
  json::object o{{"instances", std::move(instances)}};
  if (dimensions > 0) o["parameters"] = json::object{{"outputDimensionality", dimensions}};
  return o;
}

std::expected<Provider::Parsed, std::string> gemini_embed_response(std::string_view body, std::string_view model) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
  auto& o = v.get_object();
  json::array vectors;
  if (auto* one = o.if_contains("embedding")) {
    vectors.push_back(take_values(one));
  } else if (auto* many = o.if_contains("embeddings"); many && many->is_array() && !many->get_array().empty()) {
    for (auto& e : many->get_array()) vectors.push_back(take_values(&e));
  } else {
    return std::unexpected("upstream embeddings response has no embedding");
  }
  for (const auto& x : vectors)
    if (x.is_null()) return std::unexpected("upstream embedding has no values");
  Provider::Parsed p;
  p.completion = embeddings_list(std::move(vectors), model, p.usage);  // the Gemini API reports no usage
  return p;
}

std::expected<Provider::Parsed, std::string> vertex_embed_response(std::string_view body, std::string_view model) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
  auto* predictions = v.get_object().if_contains("predictions");
  if (predictions == nullptr || !predictions->is_array() || predictions->get_array().empty())
    return std::unexpected("upstream embeddings response has no predictions");
  json::array vectors;
  Provider::Parsed p;
  p.usage.reported = true;
  for (auto& pred : predictions->get_array()) {
    auto* e = pred.is_object() ? pred.get_object().if_contains("embeddings") : nullptr;
    auto values = take_values(e);
    if (values.is_null()) return std::unexpected("upstream prediction has no embeddings.values");
    vectors.push_back(std::move(values));
    const auto* stats = e->get_object().if_contains("statistics");
    const auto count = stats && stats->is_object() ? detail::json_count(stats->get_object(), "token_count") : std::nullopt;
    if (!count) p.usage.reported = false;
    else if (p.usage.reported) p.usage.prompt_tokens = std::min(p.usage.prompt_tokens + *count, kMaxTokenCount);  // never wraps
  }
  if (!p.usage.reported) p.usage = Usage{};
  p.completion = embeddings_list(std::move(vectors), model, p.usage);
  return p;
}

const Provider& gemini_embeddings_adapter() {
  static const GoogleEmbeddings p(false);
  return p;
}

const Provider& vertex_embeddings_adapter() {
  static const GoogleEmbeddings p(true);
  return p;
}

}  // namespace tollgate::providers::gemini
