#include "api/caller.hpp"

#include "auth/credentials.hpp"
#include "budget/money.hpp"
#include "budget/scope.hpp"
#include "pipeline/admission.hpp"

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

std::optional<core::Error> anonymous_budget_refusal(const auth::Principal& p, const std::string& group,
                                                    const config::Config& cfg) {
  if (!p.anonymous()) return std::nullopt;
  for (const auto& s : pipeline::applicable_scopes(p, group, cfg)) {
    if (s.max_budget >= budget::kMaxNanos) continue;  // tracked, never refuses
    return auth::authentication_error("Authentication Error, No api key passed in. A budget applies to this request (" +
                                      std::string(budget::to_string(s.scope.kind)) + "): present a virtual key.");
  }
  return std::nullopt;
}

}  // namespace tollgate::api
