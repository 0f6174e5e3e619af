#include "api/errors.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "providers/anthropic/translate.hpp"

namespace tollgate::api {
namespace json = boost::json;

namespace {
/// True when `body` is a JSON object with the key `key` (a provider error body worth relaying).
bool relayable(const std::string& body, std::string_view key) {
  if (body.empty()) return false;
  boost::system::error_code ec;
  auto v = json::parse(body, ec);  // only read: the body is relayed as it came
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
  // Tollgate's own types, and an Anthropic type the upstream itself gave (a rewritten
  // upstream error, e.g. stop_and_alert's explanation of a billing_error), are kept.
  static constexpr std::string_view anthropic_types[] = {
      "invalid_request_error", "authentication_error", "billing_error",  "permission_error", "not_found_error",
      "request_too_large",     "rate_limit_error",     "api_error",      "timeout_error",    "overloaded_error"};
  const bool anthropic_type =
      std::find(std::begin(anthropic_types), std::end(anthropic_types), e.type) != std::end(anthropic_types);
  if (e.type == "budget_exceeded" || e.type == "unpriced_model_blocked" ||
      (e.origin == core::ErrorOrigin::upstream && anthropic_type))
    type = e.type;
  return json::serialize(providers::anthropic::anthropic_error_body(type, e.message));
}

}  // namespace tollgate::api
