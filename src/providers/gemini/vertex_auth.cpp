#include "providers/gemini/vertex_auth.hpp"

#include <ctime>
#include <map>
#include <mutex>

#include <boost/json.hpp>

#include "providers/gemini/jws.hpp"

namespace tollgate::providers::gemini {
namespace json = boost::json;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxTokenAnswer = 64 * 1024;

struct CachedToken {
  std::string token;
  Clock::time_point refresh_at;
};

/// Tokens by service account (email, token endpoint, key id).
class TokenCache {
 public:
  std::optional<std::string> get(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(key);
    if (it == tokens_.end() || Clock::now() >= it->second.refresh_at) return std::nullopt;
    return it->second.token;
  }
  void put(const std::string& key, std::string token, std::chrono::seconds lifetime) {
    const auto margin = std::min<std::chrono::milliseconds>(std::chrono::seconds(60), lifetime / 2);
    std::lock_guard lock(mu_);
    tokens_[key] = CachedToken{std::move(token), Clock::now() + lifetime - margin};
  }
  void erase(const std::string& key) {
    std::lock_guard lock(mu_);
    tokens_.erase(key);
  }

 private:
  std::mutex mu_;
  std::map<std::string, CachedToken> tokens_;
};

TokenCache& cache() {
  static TokenCache c;
  return c;
}

std::string cache_key(const ServiceAccount& sa) { return sa.client_email + '\n' + sa.token_uri + '\n' + sa.private_key_id; }

policy::Outcome refused(int status, std::string message) {
  policy::Outcome o;
  o.status = status;
  o.error_type = status == 401 ? "UNAUTHENTICATED" : "token_endpoint_error";
  o.message = std::move(message);
  return o;
}

}  // namespace

boost::asio::awaitable<std::expected<void, policy::Outcome>> VertexAuthorizer::authorize(
    const config::Deployment& d, http::OutgoingRequest& req, http::Transport& transport,
    http::SteadyTime deadline) const {
  using R = std::expected<void, policy::Outcome>;
  if (d.cloud.vertex_project.empty())
    co_return R(std::unexpect, refused(401, "vertex_ai needs a project (vertex_project or VERTEXAI_PROJECT)"));
  if (d.cloud.vertex_credentials.empty())
    co_return R(std::unexpect, refused(401, "vertex_ai has no service-account credentials (vertex_credentials or "
                                            "GOOGLE_APPLICATION_CREDENTIALS)"));
  auto sa = parse_service_account(d.cloud.vertex_credentials);
  if (!sa) co_return R(std::unexpect, refused(401, sa.error()));
  const std::string key = cache_key(*sa);
  std::optional<std::string> token = cache().get(key);
  if (!token) {
    auto assertion = service_account_assertion(*sa, kCloudPlatformScope, static_cast<std::int64_t>(std::time(nullptr)));
    if (!assertion) co_return R(std::unexpect, refused(401, "vertex credentials cannot sign: " + assertion.error()));
    auto target = http::parse_url(sa->token_uri);
    if (!target) co_return R(std::unexpect, refused(401, "token_uri: " + target.error()));
    http::OutgoingRequest treq;
    treq.target = std::move(*target);
    treq.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    treq.body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + *assertion;
    auto ex = co_await transport.start(treq, deadline, nullptr);
    if (!ex) {
      policy::Outcome o;
      o.transport = policy::TransportEvent::connect_failed;  // the model's upstream was not contacted
      o.message = "token endpoint unreachable: " + ex.error().message;
      co_return R(std::unexpect, std::move(o));
    }
    const int status = (*ex)->status();
    auto body = co_await (*ex)->read_all(kMaxTokenAnswer, deadline);
    (*ex)->finish();
    const std::string text = body ? *body : std::string();
    if (status >= 400 && status < 500)
      co_return R(std::unexpect, refused(401, "token endpoint refused the service account (" + std::to_string(status) + "): " + text.substr(0, 300)));
    if (status >= 500) co_return R(std::unexpect, refused(status, "token endpoint answered " + std::to_string(status)));
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    const auto* o = !ec ? v.if_object() : nullptr;
    const auto* at = o ? o->if_contains("access_token") : nullptr;
    if (!at || !at->is_string() || at->get_string().empty())
      co_return R(std::unexpect, refused(502, "token endpoint answered without an access_token"));
    std::int64_t expires_in = 3600;
    if (const auto* e = o->if_contains("expires_in"); e && e->is_int64() && e->get_int64() > 0) expires_in = e->get_int64();
    token = std::string(at->get_string());
    cache().put(key, *token, std::chrono::seconds(expires_in));
  }
  req.headers.emplace_back("Authorization", "Bearer " + *token);
  co_return R();
}

void forget_vertex_token(const config::Deployment& d) {
  if (auto sa = parse_service_account(d.cloud.vertex_credentials)) cache().erase(cache_key(*sa));
}

const VertexAuthorizer& vertex_authorizer() {
  static const VertexAuthorizer a;
  return a;
}

}  // namespace tollgate::providers::gemini
