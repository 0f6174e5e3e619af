#include "api/errors.hpp"

#include <boost/json.hpp>

#include "providers/anthropic/translate.hpp"

namespace tollgate::api {
namespace json = boost::json;

namespace {
/// True when `body` is a JSON object with the key `key` (a provider error body worth relaying).
bool relayable(const std::string& body, std::string_view key) {
  if (body.empty()) return false;
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  return !ec && v.is_object() && v.as_object().contains(key);
}
}  // namespace

std::string openai_error_json(const core::Error& e) {
  if (e.origin == core::ErrorOrigin::upstream && e.upstream_api == "openai" && relayable(e.upstream_body, "error"))
    return e.upstream_body;
  json::object err;
  err["message"] = e.message;
  err["type"] = e.type.empty() ? "api_error" : e.type;
  err["param"] = e.param.empty() ? json::value(nullptr) : json::value(e.param);
  err["code"] = e.code.empty() ? json::value(nullptr) : json::value(e.code);
  json::object body;
  body["error"] = std::move(err);
  return json::serialize(body);
}

std::string anthropic_error_json(const core::Error& e) {
  if (e.origin == core::ErrorOrigin::upstream && e.upstream_api == "anthropic" && relayable(e.upstream_body, "error"))
    return e.upstream_body;
  std::string type = providers::anthropic::anthropic_error_type_for_status(e.status);
  if (e.type == "budget_exceeded" || e.type == "unpriced_model_blocked") type = e.type;
  return json::serialize(providers::anthropic::anthropic_error_body(type, e.message));
}

}  // namespace tollgate::api
