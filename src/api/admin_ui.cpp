// The admin UI's routes and GET /tollgate/whoami (docs/admin_api.md "Admin UI endpoints").
#include "api/admin_ui.hpp"

#include <boost/json.hpp>

namespace tollgate::api::admin {
namespace json = boost::json;

namespace {

json::value text_or_null(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }

}  // namespace

Reply whoami(const Context&, const Call& q) {
  json::object o;
  const auto& key = q.caller ? q.caller->key : nullptr;
  o["role"] = key ? "key" : "master";
  o["token"] = key ? json::value(key->token_hash) : json::value(nullptr);
  o["key_alias"] = key ? text_or_null(key->key_alias) : json::value(nullptr);
  o["team_id"] = key ? text_or_null(key->team_id) : json::value(nullptr);
  o["user_id"] = key ? text_or_null(key->user_id) : json::value(nullptr);
  json::array models;
  if (key)
    for (const auto& m : key->models) models.emplace_back(m);
  o["models"] = std::move(models);
  o["blocked"] = q.caller_blocked;
  return json::value(std::move(o));
}

std::expected<std::shared_ptr<const pipeline::Services>, core::Error> live_services(const Context& c) {
  std::shared_ptr<const pipeline::Services> s;
  if (c.deps().services) s = c.deps().services();
  if (!s)
    return std::unexpected(
        core::Error::gateway(503, "service_unavailable", "the gateway's live state is not available", "503"));
  return s;
}

std::span<const Route> ui_routes() {
  static constexpr Route routes[] = {
      {"/tollgate/whoami", Method::get, whoami, Access::any_key},
      {"/tollgate/overview", Method::get, overview, Access::key_read},
      {"/tollgate/budgets", Method::get, budgets, Access::key_read},
      {"/tollgate/routing", Method::get, routing, Access::master},
      {"/tollgate/simulate", Method::post, simulate, Access::master, kMaxSimulateBodyBytes},
  };
  return routes;
}

}  // namespace tollgate::api::admin
