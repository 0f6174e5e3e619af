#include "config/policy.hpp"

#include <array>

namespace tollgate::config {

namespace {

template <class E, std::size_t N>
std::optional<E> by_name(const std::array<E, N>& all, std::string_view name) {
  for (E e : all)
    if (to_string(e) == name) return e;
  return std::nullopt;
}

constexpr std::array kFailureClasses{
    FailureClass::retryable_capacity, FailureClass::transient_provider_error,
    FailureClass::caller_fix_required, FailureClass::context_overflow,
    FailureClass::content_policy,     FailureClass::commercial_limit,
    FailureClass::deployment_misconfigured, FailureClass::unknown_outcome};
static_assert(kFailureClasses.size() == kFailureClassCount);

constexpr std::array kPolicyActions{
    PolicyAction::retry_then_fallback, PolicyAction::retry_with_circuit, PolicyAction::fallback,
    PolicyAction::next_deployment,     PolicyAction::degrade,            PolicyAction::fail_fast,
    PolicyAction::stop_and_alert};

constexpr std::array kTransportEvents{
    TransportEvent::none,              TransportEvent::connect_failed,
    TransportEvent::failed_before_send, TransportEvent::reset_after_send,
    TransportEvent::timeout_after_send, TransportEvent::malformed_body,
    TransportEvent::oversized_body};

constexpr std::array kDegradationModes{
    DegradationMode::none,        DegradationMode::equivalent, DegradationMode::reduced,
    DegradationMode::stale_cache, DegradationMode::deferred,   DegradationMode::fail_fast};

}  // namespace

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

std::string_view to_string(PolicyAction a) {
  switch (a) {
    case PolicyAction::retry_then_fallback: return "retry_then_fallback";
    case PolicyAction::retry_with_circuit: return "retry_with_circuit";
    case PolicyAction::fallback: return "fallback";
    case PolicyAction::next_deployment: return "next_deployment";
    case PolicyAction::degrade: return "degrade";
    case PolicyAction::fail_fast: return "fail_fast";
    case PolicyAction::stop_and_alert: return "stop_and_alert";
  }
  return "unknown";
}

std::string_view to_string(TransportEvent e) {
  switch (e) {
    case TransportEvent::none: return "none";
    case TransportEvent::connect_failed: return "connect_failed";
    case TransportEvent::failed_before_send: return "failed_before_send";
    case TransportEvent::reset_after_send: return "reset_after_send";
    case TransportEvent::timeout_after_send: return "timeout_after_send";
    case TransportEvent::malformed_body: return "malformed_body";
    case TransportEvent::oversized_body: return "oversized_body";
  }
  return "unknown";
}

std::string_view to_string(DegradationMode m) {
  switch (m) {
    case DegradationMode::none: return "none";
    case DegradationMode::equivalent: return "equivalent";
    case DegradationMode::reduced: return "reduced";
    case DegradationMode::stale_cache: return "stale_cache";
    case DegradationMode::deferred: return "deferred";
    case DegradationMode::fail_fast: return "fail_fast";
  }
  return "unknown";
}

std::optional<FailureClass> parse_failure_class(std::string_view name) {
  return by_name(kFailureClasses, name);
}

std::optional<PolicyAction> parse_policy_action(std::string_view name) {
  // "retry" is the seed article's word for the capacity class's default action.
  if (name == "retry") return PolicyAction::retry_then_fallback;
  return by_name(kPolicyActions, name);
}

std::optional<TransportEvent> parse_transport_event(std::string_view name) {
  return by_name(kTransportEvents, name);
}

std::optional<DegradationMode> parse_degradation_mode(std::string_view name) {
  return by_name(kDegradationModes, name);
}

}  // namespace tollgate::config
