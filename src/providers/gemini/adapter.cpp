#include "providers/gemini/adapter.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/gemini/embeddings.hpp"
#include "providers/gemini/errors.hpp"
#include "providers/gemini/stream.hpp"
#include "providers/gemini/translate.hpp"
#include "providers/gemini/vertex_auth.hpp"
#include "providers/path_segment.hpp"

namespace tollgate::providers::gemini {
namespace json = boost::json;

namespace {

constexpr std::string_view kGeminiBase = "https://generativelanguage.googleapis.com";
constexpr std::string_view kDefaultLocation = "us-central1";

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

std::string model_url(const config::Deployment& d, bool vertex, std::string_view method) {
  std::string url;
  if (vertex) {
    const std::string location = d.cloud.vertex_location.empty() ? std::string(kDefaultLocation) : d.cloud.vertex_location;
    std::string base = trimmed(d.api_base);
    if (base.empty())
      base = location == "global" ? std::string("https://aiplatform.googleapis.com")
                                  : "https://" + path_segment(location) + "-aiplatform.googleapis.com";
    if (!base.ends_with("/v1") && !base.ends_with("/v1beta1")) base += "/v1";
    url = base + "/projects/" + path_segment(d.cloud.vertex_project) + "/locations/" + path_segment(location) +
          "/publishers/google/models/" + path_segment(d.upstream_model);
  } else {
    std::string base = d.api_base.empty() ? std::string(kGeminiBase) : trimmed(d.api_base);
    if (!base.ends_with("/v1beta") && !base.ends_with("/v1")) base += "/v1beta";
    url = base + "/models/" + path_segment(d.upstream_model);
  }
  return url + std::string(method);
}

namespace {

class GeminiProvider final : public Provider {
 public:
  explicit GeminiProvider(bool vertex) : vertex_(vertex) {}

  void set_output_limit(const config::Deployment&, json::object& chat, std::int64_t tokens, OutputField) const override {
    // One field reaches the wire: generationConfig.maxOutputTokens, translated from max_tokens.
    chat.erase("max_completion_tokens");
    chat["max_tokens"] = tokens;
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& chat,
                                                                  bool stream) const override {
    const auto url = model_url(d, vertex_, stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
    auto target = http::parse_url(url);
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    if (!vertex_ && !d.api_key.empty()) req.headers.emplace_back("x-goog-api-key", d.api_key);
    req.body = json::serialize(chat_request_to_gemini(chat));
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec);
    if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
    const auto& o = v.get_object();
    if (!o.contains("candidates") && !o.contains("promptFeedback"))
      return std::unexpected("upstream response is not a GenerateContentResponse");
    Parsed p;
    p.completion = gemini_response_to_chat(o, d.upstream_model);
    if (const auto* um = o.if_contains("usageMetadata")) p.usage = usage_from_gemini(*um);
    p.failure = blocked_prompt_outcome(o);
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_google_body(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool include_usage) const override {
    return make_stream_decoder(d.upstream_model, include_usage);
  }

  const Authorizer* authorizer() const override { return vertex_? &vertex_authorizer() : nullptr; }

  const Provider* for_api(const config::Deployment&, CallApi api) const override {
    if (api == CallApi::chat) return this;
    if (api == CallApi::embeddings) return vertex_ ? &vertex_embeddings_adapter() : &gemini_embeddings_adapter();
    return nullptr;
  }

 private:
  bool vertex_;
};

}  // namespace

const Provider& gemini_adapter() {
  static const GeminiProvider p(false);
  return p;
}

const Provider& vertex_adapter() {
  static const GeminiProvider p(true);
  return p;
}

}  // namespace tollgate::providers::gemini
