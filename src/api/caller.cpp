#include "api/caller.hpp"

#include "auth/credentials.hpp"

namespace tollgate::api {

std::string_view presented_key(const http::Request& req) {
  return auth::presented_key([&req](std::string_view name) -> std::string_view {
    auto it = req.find(name);
    return it == req.end() ? std::string_view{} : std::string_view(it->value().data(), it->value().size());
  });
}

auth::AuthResult authenticate(const http::Request& req, std::string_view master_key, const auth::IdentityIndex& ids) {
  return auth::authenticate(ids, presented_key(req), master_key, auth::unix_now_ms());
}

}  // namespace tollgate::api
