#include "providers/gemini/errors.hpp"
#include "core/json_parse.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include <boost/json.hpp>

namespace tollgate::providers::gemini {
namespace json = boost::json;

namespace {

bool contains_ci(std::string_view hay, std::string_view needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != hay.end();
}

bool has_reason(const json::object& error, std::string_view reason) {
  const auto* details = error.if_contains("details");
  if (!details || !details->is_array()) return false;
  for (const auto& dv : details->get_array()) {
    const auto* d = dv.if_object();
    const auto* r = d ? d->if_contains("reason") : nullptr;
    if (r && r->is_string() && r->get_string() == reason) return true;
  }
  return false;
}

int status_of(std::string_view name) {
  if (name == "INVALID_ARGUMENT" || name == "FAILED_PRECONDITION" || name == "OUT_OF_RANGE") return 400;
  if (name == "UNAUTHENTICATED") return 401;
  if (name == "PERMISSION_DENIED") return 403;
  if (name == "NOT_FOUND") return 404;
  if (name == "RESOURCE_EXHAUSTED") return 429;
  if (name == "UNAVAILABLE") return 503;
  if (name == "DEADLINE_EXCEEDED") return 504;
  return 500;
}

}  // namespace

policy::Outcome outcome_from_google_error(int status, const json::object& error) {
  policy::Outcome o;
  const auto* st = error.if_contains("status");
  const std::string name = st && st->is_string() ? std::string(st->get_string()) : std::string();
  const auto* code = error.if_contains("code");
  o.status = status ? status : code && code->is_int64() ? static_cast<int>(code->get_int64()) : status_of(name);
  if (const auto* m = error.if_contains("message"); m && m->is_string()) o.message = std::string(m->get_string());
  o.error_type = name;
  o.error_code = name;
  if (name == "RESOURCE_EXHAUSTED") {
    o.error_code = "rate_limit_exceeded";
  } else if (name == "INVALID_ARGUMENT" &&
             (contains_ci(o.message, "exceeds the maximum number of tokens") ||
              contains_ci(o.message, "input token count") || contains_ci(o.message, "too long"))) {
    o.error_code = "context_length_exceeded";
  } else if (has_reason(error, "API_KEY_INVALID") || contains_ci(o.message, "API key not valid")) {
    o.status = 401;  // Google answers 400 for a bad key; it is the deployment's credential.
  } else if (contains_ci(o.message, "blocked") && contains_ci(o.message, "safety")) {
    o.error_code = "content_policy_violation";
  }
  return o;
}

policy::Outcome outcome_from_google_body(int status, std::string_view body) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  const json::object* err = nullptr;
  if (!ec) {
    const json::value* root = &v;
    if (const auto* a = v.if_array(); a && a->size() == 1) root = &(*a)[0];
    if (const auto* o = root->if_object())
      if (const auto* e = o->if_contains("error"); e && e->is_object()) err = &e->get_object();
  }
  if (!err) {
    policy::Outcome o;
    o.status = status;
    o.message = "upstream answered " + std::to_string(status) + (ec ? " with a non-JSON body" : " with a body that is not a Google error");
    return o;
  }
  auto o = outcome_from_google_error(status, *err);
  o.error_body = true;
  return o;
}

std::optional<policy::Outcome> blocked_prompt_outcome(const json::object& response) {
  if (const auto* c = response.if_contains("candidates"); c && c->is_array() && !c->get_array().empty())
    return std::nullopt;
  const auto* pf = response.if_contains("promptFeedback");
  const auto* reason = pf && pf->is_object() ? pf->get_object().if_contains("blockReason") : nullptr;
  if (reason == nullptr || reason->is_null()) return std::nullopt;
  policy::Outcome o;
  o.status = 200;
  o.error_type = "invalid_request_error";
  o.error_code = "content_policy_violation";
  const std::string why = reason->is_string() ? std::string(reason->get_string()) : json::serialize(*reason);
  o.message = "The prompt was blocked by the provider's content policy (Gemini promptFeedback.blockReason: " + why + ")";
  return o;
}

}  // namespace tollgate::providers::gemini
