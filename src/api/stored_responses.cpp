#include "api/stored_responses.hpp"

#include <cctype>
#include <chrono>

#include "api/admin_fields.hpp"
#include "api/errors.hpp"
#include "api/sinks.hpp"
#include "auth/access.hpp"
#include "providers/responses/native.hpp"

namespace tollgate::api {
namespace net = boost::asio;
namespace bhttp = boost::beast::http;

namespace {

constexpr std::chrono::seconds kTimeout{30};
constexpr std::size_t kMaxBody = 64 * 1024 * 1024;

http::Response error(int status, std::string type, std::string message, std::string param = {},
                     std::string code = {}) {
  return json_response(status, openai_error_json(core::Error::caller(status, std::move(type), std::move(message),
                                                                     std::move(param), std::move(code))));
}

bool serves_responses(const config::Deployment& d) {
  return d.provider == config::ProviderKind::openai || d.provider == config::ProviderKind::azure;
}

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 256) return false;
  for (const char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

}  // namespace

std::optional<std::string_view> stored_response_id(std::string_view path) {
  for (std::string_view prefix : {"/v1/responses/", "/responses/", "/openai/v1/responses/"}) {
    if (!path.starts_with(prefix)) continue;
    auto id = path.substr(prefix.size());
    if (!id.empty() && id.find('/') == std::string_view::npos) return id;
  }
  return std::nullopt;
}

net::awaitable<http::Response> stored_response(const http::Request& req, std::string_view id,
                                               const pipeline::Services& services, const auth::Principal& principal) {
  const auto method = req.method();
  if (method != bhttp::verb::get && method != bhttp::verb::delete_) {
    auto res = error(405, "invalid_request_error", "method " + std::string(req.method_string()) + " not allowed", {},
                     "method_not_allowed");
    res.set(bhttp::field::allow, "GET, DELETE");
    co_return res;
  }
  if (!valid_id(id)) co_return error(400, "invalid_request_error", "invalid response id", "response_id");
  const auto& cfg = *services.config;
  std::optional<std::string> group = admin::query_param(req.target(), "model");
  if (!group)
    if (auto h = req.find("x-tollgate-model-group"); h != req.end())
      group = std::string(h->value().data(), h->value().size());
  if (group) {
    *group = services.groups->resolve_alias(*group);
    if (!auth::may_call(principal, *group, cfg))
      co_return error(401, "invalid_request_error", "this key may not call model group " + *group, "model",
                      "key_model_access_denied");
  }
  const config::Deployment* dep = nullptr;
  for (const auto& d : cfg.model_list) {
    if (!serves_responses(d)) continue;
    if (group ? d.model_name == *group : auth::may_call(principal, d.model_name, cfg)) {
      dep = &d;
      break;
    }
  }
  if (dep == nullptr)
    co_return group ? error(400, "invalid_request_error",
                            "model group " + *group + " has no OpenAI or Azure deployment to read stored responses from",
                            "model", "operation_not_supported")
                    : error(404, "invalid_request_error", "no OpenAI or Azure deployment stores responses here", {},
                            "not_found");
  auto out = providers::responses::stored_response_request(*dep, id);
  if (!out) co_return error(500, "api_error", "deployment " + dep->id + " is misconfigured: " + out.error());
  out->method = method == bhttp::verb::get ? http::Method::get : http::Method::del;
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  auto ex = co_await services.transport->start(*out, deadline, nullptr);
  if (!ex) co_return error(502, "api_error", "the upstream could not be reached: " + ex.error().message);
  const int status = (*ex)->status();
  auto body = co_await (*ex)->read_all(kMaxBody, deadline);
  (*ex)->finish();
  if (!body) co_return error(502, "api_error", "the upstream's answer could not be read: " + body.error().message);
  co_return json_response(status, std::move(*body));
}

}  // namespace tollgate::api
