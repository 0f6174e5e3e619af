#include "policy/failure.hpp"

#include <algorithm>
#include <cctype>

namespace tollgate::policy {
namespace {

bool contains_ci(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

bool is_context_overflow(const Outcome& o) {
  if (o.error_code == "context_length_exceeded" || o.error_type == "context_length_exceeded") return true;
  // Providers without a code say it in words (Anthropic: "prompt is too long: N tokens > M maximum").
  return contains_ci(o.message, "context length") || contains_ci(o.message, "context window") ||
         contains_ci(o.message, "prompt is too long") || contains_ci(o.message, "too many tokens");
}

bool is_content_policy(const Outcome& o) {
  return o.error_code == "content_filter" || o.error_code == "content_policy_violation" ||
         o.error_type == "content_filter" || o.error_type == "content_policy_violation" ||
         contains_ci(o.message, "content management policy") || contains_ci(o.message, "content policy");
}

bool is_commercial(const Outcome& o) {
  static constexpr std::string_view codes[] = {"insufficient_quota", "billing_error",
                                               "organization_spend_limit_exceeded", "billing_hard_limit_reached",
                                               "billing_not_active", "quota_exceeded"};
  for (auto c : codes)
    if (o.error_code == c || o.error_type == c) return true;
  return o.status == 402;
}

}  // namespace

FailureClass classify(const Outcome& o) {
  switch (o.transport) {
    case TransportEvent::connect_failed:
    case TransportEvent::failed_before_send:
    case TransportEvent::malformed_body:
    case TransportEvent::oversized_body:
      return FailureClass::transient_provider_error;
    case TransportEvent::reset_after_send:
    case TransportEvent::timeout_after_send:
      return FailureClass::unknown_outcome;
    case TransportEvent::none:
      break;
  }
  if (is_commercial(o)) return FailureClass::commercial_limit;
  const int s = o.status;
  if (s == 400 || s == 413 || s == 422) {
    if (is_context_overflow(o)) return FailureClass::context_overflow;
    if (is_content_policy(o)) return FailureClass::content_policy;
    return FailureClass::caller_fix_required;
  }
  if (s == 401 || s == 403) return FailureClass::deployment_misconfigured;
  if (s == 408 || s == 429 || s == 503 || s == 504 || s == 529) return FailureClass::retryable_capacity;
  if (s >= 500) return FailureClass::transient_provider_error;
  if (s >= 400) {
    if (is_context_overflow(o)) return FailureClass::context_overflow;
    return FailureClass::caller_fix_required;
  }
  // A 1xx/2xx/3xx counted as a failure: the body was not usable.
  return FailureClass::transient_provider_error;
}

std::string_view to_string(FailureClass c) {
  switch (c) {
    case FailureClass::retryable_capacity: return "retryable_capacity";
    case FailureClass::transient_provider_error: return "transient_provider_error";
    case FailureClass::caller_fix_required: return "caller_fix_required";
    case FailureClass::context_overflow: return "context_overflow";
    case FailureClass::content_policy: return "content_policy";
    case FailureClass::commercial_limit: return "commercial_limit";
    case FailureClass::deployment_misconfigured: return "deployment_misconfigured";
    case FailureClass::unknown_outcome: return "unknown_outcome";
  }
  return "unknown";
}

Action default_action(FailureClass c) {
  switch (c) {
    case FailureClass::retryable_capacity:
    case FailureClass::transient_provider_error:
    case FailureClass::unknown_outcome:
      return Action::retry_then_fallback;
    case FailureClass::caller_fix_required: return Action::fail_fast;
    case FailureClass::context_overflow: return Action::context_window_fallback;
    case FailureClass::content_policy: return Action::content_policy_fallback;
    case FailureClass::commercial_limit: return Action::stop_and_alert;
    case FailureClass::deployment_misconfigured: return Action::next_deployment;
  }
  return Action::fail_fast;
}

}  // namespace tollgate::policy
