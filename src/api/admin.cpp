#include "api/admin.hpp"

#include <boost/json.hpp>

#include "api/admin_context.hpp"
#include "api/caller.hpp"
#include "api/errors.hpp"
#include "api/json_body.hpp"
#include "api/sinks.hpp"
#include "auth/credentials.hpp"

namespace tollgate::api {
namespace json = boost::json;
namespace bhttp = boost::beast::http;
using admin::Method;
using admin::Route;

namespace {

const Route* find_route(std::string_view path) {
  for (auto routes : {admin::key_routes(), admin::entity_routes(), admin::budget_routes(), admin::spend_routes()})
    for (const auto& r : routes)
      if (r.path == path) return &r;
  return nullptr;
}

std::string_view path_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

http::Response error_response(const core::Error& e) { return json_response(e.status, openai_error_json(e)); }

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
  if (presented.empty() || !auth::constant_time_equal(presented, master))
    return error_response(core::Error::caller(
        401, "auth_error",
        presented.empty() ? "Authentication Error, No api key passed in." : "Authentication Error, only the master key may call " + std::string(path),
        {}, "401"));

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

  admin::Call call;
  call.target = target;
  call.is_post = is_post;
  if (is_post) {
    auto b = parse_json_object(req.body(), 32, true);
    if (!b) return error_response(b.error());
    call.body = std::move(*b);
  }
  auto r = route->handle(impl_->ctx, call);
  if (!r) return error_response(r.error());
  return json_response(200, json::serialize(*r));
}

}  // namespace tollgate::api
