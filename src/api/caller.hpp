#pragma once
/// Who is calling: the key an HTTP request presents, and the Principal it authenticates as.

#include <string_view>

#include "auth/identities.hpp"
#include "http/server.hpp"

namespace tollgate::api {

/// The key the request presents (auth::presented_key over its headers: Authorization Bearer,
/// x-litellm-api-key, x-api-key, api-key); empty when none.
std::string_view presented_key(const http::Request& req);

/// auth::authenticate for an HTTP request: the master key or a virtual key from the snapshot.
auth::AuthResult authenticate(const http::Request& req, std::string_view master_key, const auth::IdentityIndex& ids);

}  // namespace tollgate::api
