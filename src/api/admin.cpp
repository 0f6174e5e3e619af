#include "api/admin.hpp"

#include <boost/json.hpp>

#include "api/admin_context.hpp"
#include "api/caller.hpp"
#include "api/errors.hpp"
#include "api/json_body.hpp"
#include "api/sinks.hpp"
#include "auth/credentials.hpp"
#include "auth/keys.hpp"

namespace tollgate::api {
namespace json = boost::json;
namespace bhttp = boost::beast::http;
using admin::Method;
using admin::Route;

namespace {

const Route* find_route(std::string_view path) {
  for (auto routes : {admin::key_routes(), admin::entity_routes(), admin::budget_routes(), admin::spend_routes(),
                      admin::ui_routes()})
    for (const auto& r : routes)
      if (r.path == path) return &r;
  return nullptr;
}

std::string_view path_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

http::Response error_response(const core::Error& e) { return json_response(e.status, openai_error_json(e)); }

struct VirtualCaller {
  std::shared_ptr<const auth::Principal> principal;
  bool blocked = false;
};

/// A presented key that is not the master key, on `route`: the virtual key's Principal where the
/// route is open to keys, else the error to send — 403 "the master key is required" for a valid
/// virtual key on a master-only route, 401 for an unknown (blocked, expired) key.
std::expected<VirtualCaller, core::Error> virtual_caller(const auth::IdentityIndex& index, std::string_view presented,
                                                         std::int64_t now_ms, const Route& route, std::string_view path) {
  auto p = auth::authenticate(index, presented, {}, now_ms);
  if (p && (*p)->key) {
    if (route.access == admin::Access::master)
      return std::unexpected(core::Error::caller(403, "auth_error", "the master key is required", {}, "403"));
    return VirtualCaller{std::move(*p), false};
  }
  if (route.access == admin::Access::any_key && presented.starts_with("sk-")) {
    // A blocked key (or a key of a blocked team) may still ask who it is; an expired one may not.
    if (auto key = index.key(auth::sha256_hex(presented)); key && !(key->expires_at_ms && *key->expires_at_ms <= now_ms)) {
      auto principal = auth::principal_of_key(index, key);
      return VirtualCaller{principal, key->blocked || (principal->team && principal->team->blocked)};
    }
  }
  if (route.access == admin::Access::master)
    return std::unexpected(core::Error::caller(
        401, "auth_error", "Authentication Error, only the master key may call " + std::string(path), {}, "401"));
  auto e = p ? auth::authentication_error("Authentication Error, Invalid proxy server token passed") : p.error();
  e.type = "auth_error";
  e.code = "401";
  return std::unexpected(e);
}

}  // namespace

struct Admin::Impl {
  explicit Impl(AdminDeps deps) : ctx(std::move(deps)) {}
  admin::Context ctx;
};

Admin::Admin(AdminDeps deps) : impl_(std::make_shared<Impl>(std::move(deps))) {}

bool Admin::is_admin_path(std::string_view path) { return find_route(path) != nullptr; }

http::Response Admin::handle(const http::Request& req) const {
  const std::string target(req.target());
  const auto path = path_of(target);
  const Route* route = find_route(path);
  if (!route) return error_response(core::Error::caller(404, "invalid_request_error", "unknown path " + std::string(path), {}, "not_found"));
  const auto& d = impl_->ctx.deps();

  const auto& master = d.config->general_settings.master_key;
  const auto presented = presented_key(req);
  if (master.empty())
    return error_response(core::Error::caller(
        401, "auth_error", "the admin API needs general_settings.master_key to be configured", {}, "401"));
  if (presented.empty())
    return error_response(core::Error::caller(401, "auth_error", "Authentication Error, No api key passed in.", {}, "401"));
  admin::Call call;
  if (!auth::constant_time_equal(presented, master)) {
    auto caller = virtual_caller(*d.identities->current(), presented, impl_->ctx.now(), *route, path);
    if (!caller) return error_response(caller.error());
    call.caller = std::move(caller->principal);
    call.caller_blocked = caller->blocked;
  }

  const auto m = req.method();
  const bool is_get = m == bhttp::verb::get || m == bhttp::verb::head;
  const bool is_post = m == bhttp::verb::post;
  const bool allowed = route->method == Method::get    ? is_get
                       : route->method == Method::post ? is_post
                                                       : is_get || is_post;
  if (!allowed) {
    auto res = error_response(core::Error::caller(405, "invalid_request_error",
                                                  "method " + std::string(req.method_string()) + " not allowed on " + std::string(path), {},
                                                  "method_not_allowed"));
    res.set(bhttp::field::allow, route->method == Method::get    ? "GET, HEAD"
                                 : route->method == Method::post ? "POST"
                                                                 : "GET, HEAD, POST");
    return res;
  }
  if (!d.store) return error_response(core::Error::gateway(503, "service_unavailable", "no database configured", "503"));

  call.target = target;
  call.is_post = is_post;
  if (is_post) {
    if (route->max_body_bytes && req.body().size() > route->max_body_bytes)
      return error_response(core::Error::caller(413, "invalid_request_error",
                                                "the body of " + std::string(path) + " is limited to " +
                                                    std::to_string(route->max_body_bytes) + " bytes",
                                                {}, "request_too_large"));
    auto b = parse_json_object(req.body(), 32, true);
    if (!b) return error_response(b.error());
    call.body = std::move(*b);
  }
  auto r = route->handle(impl_->ctx, call);
  if (!r && !call.error_members.empty()) {
    auto body = json::parse(openai_error_json(r.error())).as_object();
    for (auto& kv : call.error_members) body[kv.key()] = std::move(kv.value());
    return json_response(r.error().status, json::serialize(body));
  }
  if (!r) return error_response(r.error());
  return json_response(200, json::serialize(*r));
}

}  // namespace tollgate::api
