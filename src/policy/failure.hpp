#pragma once
/// Failure classification (seed 003, "Classify failure before routing"): every attempt's
/// outcome is put in exactly one class, and the class decides what happens next.

#include <string>
#include <string_view>

namespace tollgate::policy {

/// The classes of a failed attempt. Names are the policy vocabulary used in config, logs,
/// headers and docs (docs/failure_policy.md).
enum class FailureClass {
  retryable_capacity,        ///< 429 rate limit, 503, 529 overloaded, 504, 408
  transient_provider_error,  ///< 500, 502, other 5xx, connect refused/reset before send, malformed upstream body
  caller_fix_required,       ///< 400 invalid request, 404, 413, 422 and other 4xx the caller must fix
  context_overflow,          ///< context_length_exceeded: the prompt does not fit this model
  content_policy,            ///< content_filter / content_policy_violation
  commercial_limit,          ///< insufficient_quota, billing errors, 402
  deployment_misconfigured,  ///< 401/403 for the deployment's own credentials
  unknown_outcome,           ///< timeout or reset after the request was sent: it may have been billed
};

/// What happened on the wire, beyond the HTTP status.
enum class TransportEvent {
  none,                ///< a complete HTTP response was received
  connect_failed,      ///< DNS, refused, TLS handshake: nothing was sent
  failed_before_send,  ///< the connection broke while writing the request
  reset_after_send,    ///< the connection broke after the request was sent, before a complete response
  timeout_after_send,  ///< no (complete) response within the attempt's timeout
  malformed_body,      ///< a response arrived but is not what the provider's API returns (HTML, garbage)
  oversized_body,      ///< the response exceeded tollgate_settings.max_upstream_body_bytes
};

/// The observable facts of one failed attempt.
struct Outcome {
  int status = 0;                 ///< HTTP status; 0 when no response
  std::string error_type;         ///< provider `error.type` (OpenAI) / `error.type` (Anthropic)
  std::string error_code;         ///< provider `error.code` (OpenAI), empty when absent
  std::string message;            ///< provider message (used for context/content heuristics)
  TransportEvent transport = TransportEvent::none;
};

/// Classifies a failed attempt with the default table (docs/failure_policy.md). Pure; thread-safe.
FailureClass classify(const Outcome& outcome);

/// The class's name as used in config and telemetry ("retryable_capacity", ...).
std::string_view to_string(FailureClass c);

/// What the attempt loop does next with a failure of this class.
enum class Action {
  retry_then_fallback,     ///< retry in the group (backoff), then the group's `fallbacks`
  context_window_fallback, ///< no retry; `context_window_fallbacks` only
  content_policy_fallback, ///< no retry; `content_policy_fallbacks` only
  fail_fast,               ///< return the error to the caller now
  stop_and_alert,          ///< commercial limit: no retry, no fallback that would hide a billing problem
  next_deployment,         ///< misconfigured: cool this deployment down, try the group's next one, then fallbacks
};

/// The default action of each class (seed 003's table).
Action default_action(FailureClass c);

}  // namespace tollgate::policy
