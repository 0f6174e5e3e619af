#include "providers/bedrock/embeddings.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/bedrock/adapter.hpp"
#include "providers/bedrock/errors.hpp"
#include "providers/embeddings_list.hpp"

namespace tollgate::providers::bedrock {
namespace json = boost::json;

std::optional<EmbedFamily> embed_family(std::string_view id) {
  if (id.find("amazon.titan-embed-text-v2") != std::string_view::npos) return EmbedFamily::titan_v2;
  if (id.find("amazon.titan-embed-text-v1") != std::string_view::npos ||
      id.find("amazon.titan-embed-g1-text") != std::string_view::npos)
    return EmbedFamily::titan_v1;
  if (id.find("cohere.embed-") != std::string_view::npos) return EmbedFamily::cohere;
  return std::nullopt;
}

namespace {

std::string_view family_name(EmbedFamily f) {
  switch (f) {
    case EmbedFamily::titan_v2: return "Amazon Titan Text Embeddings v2";
    case EmbedFamily::titan_v1: return "Amazon Titan Text Embeddings v1";
    case EmbedFamily::cohere: return "Cohere Embed on Bedrock";
  }
  return "Bedrock";
}

/// The texts of an `input` (a string, or an array of strings); nullopt when any item is a
/// token id / token array.
std::optional<json::array> texts_of(const json::value& input) {
  if (input.is_string()) return json::array{input};
  if (!input.is_array()) return std::nullopt;
  json::array out;
  for (const auto& v : input.get_array()) {
    if (!v.is_string()) return std::nullopt;
    out.push_back(v);
  }
  return out;
}

std::optional<std::int64_t> dimensions_of(const json::object& request) {
  const auto* d = request.if_contains("dimensions");
  if (d == nullptr || d->is_null()) return std::nullopt;
  if (d->is_int64()) return d->get_int64();
  if (d->is_uint64()) return static_cast<std::int64_t>(d->get_uint64());
  if (d->is_double()) return static_cast<std::int64_t>(d->get_double());
  return std::nullopt;
}

}  // namespace

std::optional<Provider::Refusal> embeddings_refusal(EmbedFamily family, const json::object& request) {
  const std::string name(family_name(family));
  const auto* input = request.if_contains("input");
  const auto texts = input ? texts_of(*input) : std::nullopt;
  if (!texts) return Provider::Refusal{name + " takes text only, not token ids", "input"};
  if (family != EmbedFamily::cohere && texts->size() > 1)
    return Provider::Refusal{name + " embeds one text per call: send at most 1 input per request (got " +
                                 std::to_string(texts->size()) + ")",
                             "input"};
  if (family == EmbedFamily::cohere && texts->size() > kCohereMaxTexts)
    return Provider::Refusal{name + " embeds at most " + std::to_string(kCohereMaxTexts) +
                                 " texts per call (got " + std::to_string(texts->size()) + ")",
                             "input"};
  if (const auto dims = dimensions_of(request)) {
    const bool ok = family == EmbedFamily::titan_v2 ? (*dims == 256 || *dims == 512 || *dims == 1024)
                    : family == EmbedFamily::titan_v1 ? *dims == 1536
                                                      : *dims == 1024;
    if (!ok) {
      const std::string offered = family == EmbedFamily::titan_v2   ? "256, 512 or 1024"
                                  : family == EmbedFamily::titan_v1 ? "1536 only"
                                                                    : "1024 only";
      return Provider::Refusal{name + " offers dimensions " + offered + " (got " + std::to_string(*dims) + ")",
                               "dimensions"};
    }
  }
  return std::nullopt;
}

json::object embeddings_invoke_body(EmbedFamily family, const json::object& request) {
  const auto texts = texts_of(request.at("input")).value_or(json::array{});
  if (family == EmbedFamily::cohere) return json::object{{"texts", texts}, {"input_type", "search_document"}};
  json::object out{{"inputText", texts.empty() ? json::value("") : texts.front()}};
  if (family == EmbedFamily::titan_v2) {
    if (const auto dims = dimensions_of(request)) out["dimensions"] = *dims;
    out["normalize"] = true;  // OpenAI's vectors are unit length; Titan v2's default, said explicitly
  }
  return out;
}

namespace {

bool is_vector(const json::value& v) {
  if (!v.is_array()) return false;
  for (const auto& x : v.get_array())
    if (!x.is_number()) return false;
  return true;
}

}  // namespace

std::expected<Provider::Parsed, std::string> embeddings_from_invoke(EmbedFamily family, std::string_view body,
                                                                    std::string_view model) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
  auto& o = v.as_object();
  Provider::Parsed p;
  json::array vectors;
  if (family == EmbedFamily::cohere) {
    auto* e = o.if_contains("embeddings");
    if (e && e->is_object()) e = e->get_object().if_contains("float");  // embedding_types form
    if (!e || !e->is_array()) return std::unexpected("upstream Cohere embed response has no embeddings");
    for (auto& x : e->get_array()) {
      if (!is_vector(x)) return std::unexpected("upstream Cohere embed response has a non-numeric embedding");
      vectors.push_back(std::move(x));
    }
  } else {
    auto* e = o.if_contains("embedding");
    if (!e || !is_vector(*e)) return std::unexpected("upstream Titan response has no embedding");
    vectors.push_back(std::move(*e));
    if (const auto n = detail::json_count(o, "inputTextTokenCount")) {
      p.usage.reported = true;
      p.usage.prompt_tokens = *n;
    }
  }
  p.completion = embeddings_list(std::move(vectors), model, p.usage);
  return p;
}

namespace {

/// InvokeModel for one embedding model family (the deployment's model id says which).
class BedrockEmbeddings final : public Provider {
 public:
  std::optional<Refusal> refuse_request(const config::Deployment& d, const json::object& request) const override {
    const auto family = embed_family(d.upstream_model);
    if (!family) return Refusal{"'" + d.upstream_model + "' is not a Bedrock embedding model", "model"};
    return embeddings_refusal(*family, request);
  }

  void set_output_limit(const config::Deployment&, json::object&, std::int64_t, OutputField) const override {}

  std::optional<std::string> credentials_error(const config::Deployment& d) const override {
    return aws_credentials_error(d);
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& request,
                                                                  bool) const override {
    const auto family = embed_family(d.upstream_model);
    if (!family) return std::unexpected("'" + d.upstream_model + "' is not a Bedrock embedding model");
    std::string base = d.api_base.empty() ? "https://bedrock-runtime." + d.cloud.aws_region_name + ".amazonaws.com"
                                          : d.api_base;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto target = http::parse_url(base + "/model/" + path_segment(d.upstream_model) + "/invoke");
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    req.body = json::serialize(embeddings_invoke_body(*family, request));
    req.headers.emplace_back("Accept", "application/json");
    sign_request(req, d, "bedrock");
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    const auto family = embed_family(d.upstream_model);
    if (!family) return std::unexpected("not a Bedrock embedding model");
    return embeddings_from_invoke(*family, body, d.upstream_model);
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return aws::outcome_from_aws_error(status, body, {});
  }
  std::string_view error_type_header() const override { return "x-amzn-ErrorType"; }
  policy::Outcome parse_typed_error(int status, std::string_view body, std::string_view type) const override {
    return aws::outcome_from_aws_error(status, body, type);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment&, bool) const override { return nullptr; }

  const Provider* for_api(const config::Deployment& d, CallApi api) const override {
    return api == CallApi::embeddings ? embeddings_adapter(d) : nullptr;
  }
};

}  // namespace

const Provider* embeddings_adapter(const config::Deployment& d) {
  static const BedrockEmbeddings instance;
  return embed_family(d.upstream_model) ? &instance : nullptr;
}

}  // namespace tollgate::providers::bedrock
