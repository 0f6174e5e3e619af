#pragma once
/// `fallback_policy:` — the governed fallback policy's configuration (seed 003, "LLM Fallbacks
/// Need Error Budgets"; docs/failure_policy.md is the reference). The vocabulary below (failure
/// classes, actions, transport events, degradation modes) is the policy's public language: the
/// same names appear in YAML, headers, spend logs, metrics and `tollgate explain`.
///
/// Shape (every field optional):
///
///     fallback_policy:
///       deadline_slack_ms: 50            # how far past its deadline a request may end
///       provider_circuit: {open_ratio: 1.0, min_deployments: 2, cooldown_ms: 30000,
///                          commercial_limit_cooldown_ms: 300000}
///       defaults:                        # every model group
///         classes:                       # overrides of the default classification table
///           commercial_limit: {codes: [insufficient_quota], action: stop_and_alert}
///         budgets: {max_retries: 2, max_fallbacks: 2, deadline_ms: 30000,
///                   min_time_left_ms: 200, max_request_cost: 0.50}
///         circuit: {consecutive_failures: 4, failure_ratio: 0.5, window_ms: 60000,
///                   min_requests: 20, cooldown_ms: 5000}
///         feature_circuit: {consecutive_failures: 5, cooldown_ms: 30000}
///         degradation: {mode: reduced, model: small-model, max_tokens: 256, caveat: "..."}
///       model_groups:
///         gpt-4o: { ...same keys as defaults... }
///
/// A model group's settings are layered over `defaults`, field by field. The loader checks
/// names, types and ranges (unknown class / action / mode / transport event / model group,
/// negative budgets, circular fallback chains) and reports each with its YAML path.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tollgate::config {

using std::chrono::milliseconds;

/// The classes of a failed upstream attempt (issue 4 §1).
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
inline constexpr int kFailureClassCount = 8;

/// What the attempt loop does after a failure of a class (issue 4 §2).
enum class PolicyAction {
  retry_then_fallback,  ///< retry (same or next deployment) within the retry budget, then fall back, then degrade
  retry_with_circuit,   ///< the same walk; named for transient errors, whose retries the circuit bounds
  fallback,             ///< no retry: straight to the class's fallback list, then degrade
  next_deployment,      ///< open this deployment's circuit, alert, try the group's other deployments, then fall back
  degrade,              ///< no retry, no fallback: the group's degradation mode now
  fail_fast,            ///< return the error to the caller now
  stop_and_alert,       ///< return the error now, raise an alert, open the provider's circuit; no fallback
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

/// A model group's degradation mode (issue 4 §5; seed 003's response-mode table).
enum class DegradationMode {
  none,         ///< no degradation configured: the error is returned
  equivalent,   ///< a plain fallback to `model`, labeled
  reduced,      ///< `model` (cheaper) with max_tokens capped to `max_tokens`, labeled with `caveat`
  stale_cache,  ///< the last successful answer to an identical request, labeled with its age
  deferred,     ///< 202 + job id; the job runs when the circuit closes (GET /v1/tollgate/jobs/{id})
  fail_fast,    ///< a clear error naming the policy
};

std::string_view to_string(FailureClass c);
std::string_view to_string(PolicyAction a);
std::string_view to_string(TransportEvent e);
std::string_view to_string(DegradationMode m);
/// Name → value; nullopt for an unknown name. Names are exactly the enumerator names.
std::optional<FailureClass> parse_failure_class(std::string_view name);
std::optional<PolicyAction> parse_policy_action(std::string_view name);
std::optional<TransportEvent> parse_transport_event(std::string_view name);
std::optional<DegradationMode> parse_degradation_mode(std::string_view name);

/// `classes.<class>`: replaces the named lists of one class's default rule; lists not given keep
/// their defaults. A code matches the provider's `error.code` or `error.type`; a message is a
/// case-insensitive substring of the provider's error message (checked for 4xx only).
struct ClassRuleConfig {
  FailureClass cls = FailureClass::transient_provider_error;
  std::optional<std::vector<int>> status;
  std::optional<std::vector<std::string>> codes;
  std::optional<std::vector<std::string>> messages;
  std::optional<std::vector<TransportEvent>> transport;
  std::optional<PolicyAction> action;
};

/// `budgets:` — a request's retry, fallback, latency and cost budgets (issue 4 §3).
struct RequestBudgetConfig {
  std::optional<int> max_retries;              ///< retries per request, all groups together (>= 0)
  std::optional<int> max_fallbacks;            ///< fallback targets per request (>= 0)
  std::optional<milliseconds> deadline;        ///< `deadline_ms`: whole request, all attempts
  std::optional<milliseconds> min_time_left;   ///< `min_time_left_ms`: no attempt starts with less left
  std::optional<std::string> max_request_cost; ///< decimal dollars: all attempts' reservations together
  std::optional<milliseconds> first_token_timeout;  ///< `first_token_timeout_ms`: streams, to the first content delta
  std::optional<milliseconds> stream_idle_timeout;  ///< `stream_idle_timeout_ms`: streams, longest silence
  /// `stream_holdback_tokens`: streams, output events held before the client sees any (`all`:
  /// INT64_MAX, the whole answer); 0 = none.
  std::optional<std::int64_t> stream_holdback;
};

/// `circuit:` — the deployment circuit of each deployment in the group (issue 4 §4).
struct CircuitConfig {
  std::optional<int> consecutive_failures;   ///< opens after this many failures in a row (>= 1)
  std::optional<double> failure_ratio;       ///< or at this failure ratio over `window_ms` (0 < r <= 1; absent = off)
  std::optional<milliseconds> window;        ///< `window_ms`
  std::optional<int> min_requests;           ///< ratio needs at least this many attempts in the window
  std::optional<milliseconds> cooldown;      ///< `cooldown_ms`: open time before the half-open probe
};

/// `feature_circuit:` — the group's own circuit: opens when requests keep missing their latency
/// or cost budget (or find no admissible target) and sends requests straight to degradation.
struct FeatureCircuitConfig {
  std::optional<int> consecutive_failures;   ///< opens after this many budget misses in a row (>= 1)
  std::optional<milliseconds> cooldown;      ///< `cooldown_ms`
};

/// `degradation:` — what a group does when retries and fallbacks cannot serve a request.
struct DegradationConfig {
  DegradationMode mode = DegradationMode::none;
  std::string model;                          ///< equivalent / reduced: the model group that serves
  std::optional<std::int64_t> max_tokens;     ///< reduced: output cap
  std::string caveat;                         ///< reduced: text of the label
  std::optional<milliseconds> max_age;        ///< stale_cache: `max_age_ms`, oldest answer served (absent = 1 h)
};

/// One layer of policy: `defaults` or `model_groups.<group>`.
struct GroupPolicyConfig {
  std::string group;                          ///< empty for `defaults`
  std::string path;                           ///< YAML path, for messages
  int line = 0;
  std::vector<ClassRuleConfig> classes;
  RequestBudgetConfig budgets;
  CircuitConfig circuit;
  FeatureCircuitConfig feature_circuit;
  std::optional<DegradationConfig> degradation;
};

/// `provider_circuit:` — opens a provider when enough of its deployments are open, or at once
/// when it answers with a commercial limit. A provider is a deployment's `provider_prefix`.
struct ProviderCircuitConfig {
  double open_ratio = 1.0;                         ///< share of the provider's deployments open
  int min_deployments = 2;                         ///< the ratio needs at least this many deployments
  milliseconds cooldown{30000};                    ///< `cooldown_ms`
  milliseconds commercial_limit_cooldown{300000};  ///< `commercial_limit_cooldown_ms`
};

/// The whole `fallback_policy:` section.
struct FallbackPolicyConfig {
  milliseconds deadline_slack{50};  ///< `deadline_slack_ms`
  ProviderCircuitConfig provider_circuit;
  GroupPolicyConfig defaults;
  std::vector<GroupPolicyConfig> model_groups;
};

}  // namespace tollgate::config
