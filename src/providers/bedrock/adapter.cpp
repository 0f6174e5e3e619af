#include "providers/bedrock/adapter.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/bedrock/converse.hpp"
#include "providers/bedrock/converse_stream.hpp"
#include "providers/bedrock/embeddings.hpp"
#include "providers/bedrock/errors.hpp"

namespace tollgate::providers::bedrock {
namespace json = boost::json;

aws::Credentials credentials_of(const config::Deployment& d) {
  return aws::Credentials{d.cloud.aws_access_key_id, d.cloud.aws_secret_access_key, d.cloud.aws_session_token};
}

std::optional<std::string> aws_credentials_error(const config::Deployment& d) {
  std::string missing;
  if (d.cloud.aws_access_key_id.empty()) missing = "aws_access_key_id (AWS_ACCESS_KEY_ID)";
  if (d.cloud.aws_secret_access_key.empty())
    missing += std::string(missing.empty() ? "" : ", ") + "aws_secret_access_key (AWS_SECRET_ACCESS_KEY)";
  if (d.cloud.aws_region_name.empty())
    missing += std::string(missing.empty() ? "" : ", ") + "aws_region_name (AWS_REGION / AWS_DEFAULT_REGION)";
  if (missing.empty()) return std::nullopt;
  return "missing " + missing;
}

std::string path_segment(std::string_view s) { return aws::uri_encode(s, false); }

void sign_request(http::OutgoingRequest& req, const config::Deployment& d, std::string_view service) {
  const auto& t = req.target;
  const std::string host = (t.port == "443" || t.port == "80") ? t.host : t.host + ":" + t.port;
  aws::Request r;
  r.method = "POST";
  r.host = host;
  const auto q = t.path_and_query.find('?');
  r.path = std::string_view(t.path_and_query).substr(0, q);
  r.payload = req.body;
  for (auto& h : aws::sign(r, credentials_of(d), aws::Scope{d.cloud.aws_region_name, std::string(service)},
                           aws::amz_date_now()))
    req.headers.push_back(std::move(h));
}

namespace {

class BedrockProvider final : public Provider {
 public:
  void set_output_limit(const config::Deployment&, json::object& chat, std::int64_t tokens, OutputField) const override {
    chat.erase("max_completion_tokens");
    chat["max_tokens"] = tokens;  // sent as inferenceConfig.maxTokens
  }

  std::optional<std::string> credentials_error(const config::Deployment& d) const override {
    return aws_credentials_error(d);
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& chat,
                                                                  bool stream) const override {
    std::string base = d.api_base.empty() ? "https://bedrock-runtime." + d.cloud.aws_region_name + ".amazonaws.com"
                                          : d.api_base;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto target = http::parse_url(base + "/model/" + path_segment(d.upstream_model) +
                                  (stream ? "/converse-stream" : "/converse"));
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    req.body = json::serialize(chat_to_converse(chat));
    req.headers.emplace_back("Accept", stream ? "application/vnd.amazon.eventstream" : "application/json");
    sign_request(req, d, "bedrock");
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec);
    if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
    const auto& o = v.get_object();
    const auto* out = o.if_contains("output");
    if (!out || !out->is_object()) return std::unexpected("upstream response is not a Converse response (no output)");
    Parsed p;
    p.completion = converse_to_chat(o, d.upstream_model);
    if (const auto* u = o.if_contains("usage")) p.usage = usage_from_converse(*u);
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return aws::outcome_from_aws_error(status, body, {});
  }
  std::string_view error_type_header() const override { return "x-amzn-ErrorType"; }
  policy::Outcome parse_typed_error(int status, std::string_view body, std::string_view type) const override {
    return aws::outcome_from_aws_error(status, body, type);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool include_usage) const override {
    return std::make_unique<ConverseStreamDecoder>(d.upstream_model, include_usage);
  }
  http::StreamFraming stream_framing(const config::Deployment&) const override {
    return http::StreamFraming::aws_eventstream;
  }

  /// Chat through Converse; embeddings through InvokeModel for the embedding models (embeddings.hpp).
  const Provider* for_api(const config::Deployment& d, CallApi api) const override {
    if (api == CallApi::embeddings) return embeddings_adapter(d);
    return api == CallApi::chat ? this : nullptr;
  }
};

}  // namespace

const Provider& adapter() {
  static const BedrockProvider instance;
  return instance;
}

}  // namespace tollgate::providers::bedrock
