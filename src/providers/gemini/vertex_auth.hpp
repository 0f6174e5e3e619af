#pragma once
/// Vertex AI's call-time credential: an OAuth 2.0 access token minted from the deployment's
/// service-account key (Google's "Using OAuth 2.0 for Server to Server Applications": a signed
/// JWT assertion POSTed to the key's token_uri as grant_type
/// urn:ietf:params:oauth:grant-type:jwt-bearer), cached per key until shortly before it expires.

#include <chrono>
#include <string>

#include "providers/provider.hpp"

namespace tollgate::providers::gemini {

/// The OAuth scope Vertex AI calls need.
inline constexpr std::string_view kCloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform";

/// Adds `Authorization: Bearer <token>` for a vertex_ai deployment, minting the token through the
/// attempt's transport when the cache has none still valid (a token is reused until
/// min(60 s, half its lifetime) before its `expires_in`). The cache is process-wide and
/// thread-safe (a small lock, never held across the token call; two attempts missing at once may
/// both mint, and the later token wins).
/// Failures (nothing is sent upstream): no project or no credentials, credentials that are not a
/// service-account key, a key that cannot sign → 401; the token endpoint refusing the assertion
/// (4xx) → 401; its 5xx → that status; it cannot be reached, or answers without a token → a
/// transient failure (transport event connect_failed, or 502).
class VertexAuthorizer final : public Authorizer {
 public:
  boost::asio::awaitable<std::expected<void, policy::Outcome>> authorize(const config::Deployment& d,
                                                                         http::OutgoingRequest& req,
                                                                         http::Transport& transport,
                                                                         http::SteadyTime deadline) const override;
};

/// Drops the cached token of `d`'s service account: Vertex refused it (401), so the next attempt
/// mints a fresh one instead of reusing a revoked token until its expiry. Thread-safe; a
/// deployment without a readable key is a no-op.
void forget_vertex_token(const config::Deployment& d);

/// The process's one VertexAuthorizer.
const VertexAuthorizer& vertex_authorizer();

}  // namespace tollgate::providers::gemini
