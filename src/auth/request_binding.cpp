#include "auth/request_binding.hpp"

#include <boost/json.hpp>

#include "auth/access.hpp"

namespace tollgate::auth {
namespace json = boost::json;

AuthResult bind_request(const std::shared_ptr<const Principal>& principal, const IdentityIndex& index,
                        const std::string& model, json::object& body, const config::Config& cfg) {
  if (auto denied = model_access_error(*principal, model, cfg)) return std::unexpected(std::move(*denied));
  std::string end_user;
  if (auto* u = body.if_contains("user"); u && u->is_string()) end_user = std::string(u->as_string());
  std::vector<std::string> tags;
  auto collect = [&tags](const json::value* v) {
    if (v == nullptr || !v->is_array()) return;
    for (const auto& t : v->as_array())
      if (t.is_string()) tags.emplace_back(t.as_string());
  };
  if (auto* md = body.if_contains("metadata"); md && md->is_object()) collect(md->as_object().if_contains("tags"));
  collect(body.if_contains("tags"));
  body.erase("tags");
  return with_request(principal, index, end_user, tags);
}

}  // namespace tollgate::auth
