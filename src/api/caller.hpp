#pragma once
/// Who is calling: the key an HTTP request presents, the Principal it authenticates as, and
/// whether the anonymous caller (no master key configured, no key presented) may be served.

#include <optional>
#include <string>
#include <string_view>

#include "auth/identities.hpp"
#include "config/config.hpp"
#include "core/error.hpp"
#include "http/server.hpp"

namespace tollgate::api {

/// The key the request presents (auth::presented_key over its headers: Authorization Bearer,
/// x-litellm-api-key, x-api-key, api-key); empty when none.
std::string_view presented_key(const http::Request& req);

/// auth::authenticate for an HTTP request: the master key or a virtual key from the snapshot.
auth::AuthResult authenticate(const http::Request& req, std::string_view master_key, const auth::IdentityIndex& ids);

/// nullopt unless `p` is the anonymous caller (auth::Principal::anonymous) and a budget applies
/// to its call of model group `group`: any scope of pipeline::applicable_scopes(p, group, cfg)
/// with a real limit (max_budget < budget::kMaxNanos) — the end user's customer budget or
/// litellm_settings.max_end_user_budget when the body names a `user`, a tag budget of a request
/// tag, the global litellm_settings.max_budget. Then the 401 `invalid_api_key`: "Authentication
/// Error, No api key passed in. A budget applies to this request (<scope kind>): present a
/// virtual key." Spend that a budget governs is always spend someone answers for.
/// `p` must already carry the request's end user and tags (auth::bind_request).
std::optional<core::Error> anonymous_budget_refusal(const auth::Principal& p, const std::string& group,
                                                    const config::Config& cfg);

}  // namespace tollgate::api
