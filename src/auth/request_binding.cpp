#include "auth/request_binding.hpp"

#include <boost/json.hpp>

#include "auth/access.hpp"

namespace tollgate::auth {
namespace json = boost::json;

AuthResult bind_request(const std::shared_ptr<const Principal>& principal, const IdentityIndex& index,
                        const std::string& model, json::object& body, const config::Config& cfg,
                        const CallerNames& names) {
  if (auto denied = model_access_error(*principal, model, cfg)) return std::unexpected(std::move(*denied));
  body.erase("tags");
  return with_request(principal, index, names.end_user, names.tags);
}

}  // namespace tollgate::auth
