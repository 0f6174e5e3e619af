#pragma once
/// Failure classification as data (seed 003, "Classify failure before routing"; issue 4 §1-2).
/// Every failed attempt is put in exactly one class by a ClassTable — the default table below,
/// with per-model-group overrides from `fallback_policy` — and the class's action decides what
/// the attempt loop does next. docs/failure_policy.md documents the default table.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/policy.hpp"

namespace tollgate::policy {

using config::FailureClass;
using config::TransportEvent;
using Action = config::PolicyAction;
using config::to_string;

/// The observable facts of one failed attempt.
struct Outcome {
  int status = 0;                 ///< HTTP status; 0 when no response
  std::string error_type;         ///< provider `error.type` (OpenAI and Anthropic)
  std::string error_code;         ///< provider `error.code` (OpenAI), empty when absent
  std::string message;            ///< provider message (used for context/content heuristics)
  TransportEvent transport = TransportEvent::none;
  /// The response body was a JSON error object of the provider's API: evidence that the
  /// provider answered with an error, which providers document as unbilled (settles at 0).
  bool error_body = false;
};

/// The matching rule and action of one class.
struct ClassRule {
  std::vector<int> status;               ///< HTTP statuses
  std::vector<std::string> codes;        ///< provider error.code or error.type, exact
  std::vector<std::string> messages;     ///< case-insensitive substrings of the message (4xx only)
  std::vector<TransportEvent> transport; ///< transport events
  Action action = Action::fail_fast;
};

/// A classification table. Matching order (first hit wins), so that the specific beats the
/// generic: (1) transport event; (2) error code/type, classes in priority order commercial_limit,
/// context_overflow, content_policy, deployment_misconfigured, retryable_capacity,
/// transient_provider_error, caller_fix_required, unknown_outcome; (3) message substrings, same
/// order, only for 4xx statuses; (4) status, same order; (5) no rule: 5xx → transient,
/// other 4xx → caller_fix_required, anything else (an unusable 2xx) → transient.
/// Immutable after construction; thread-safe to share.
class ClassTable {
 public:
  /// The default table (seed 003 and issue 4 §1-2).
  static const ClassTable& defaults();
  /// This table with `overrides` applied in order: each replaces the lists it names and the action.
  /// The entries of a named list are also removed from the same list of every other class, so an
  /// override can move a status, code, message or transport event to another class regardless of
  /// the priority order (e.g. `caller_fix_required: {status: [400, 404, 413, 422, 503]}`).
  ClassTable with(const std::vector<config::ClassRuleConfig>& overrides) const;

  FailureClass classify(const Outcome& outcome) const;
  Action action(FailureClass c) const { return rules_[static_cast<std::size_t>(c)].action; }
  const ClassRule& rule(FailureClass c) const { return rules_[static_cast<std::size_t>(c)]; }

 private:
  std::array<ClassRule, config::kFailureClassCount> rules_{};
};

/// Classifies with the default table. Pure; thread-safe.
FailureClass classify(const Outcome& outcome);
/// The default table's action for `c`.
Action default_action(FailureClass c);

/// Whether a failure of this class counts against the deployment's circuit (its own fault):
/// capacity, transient, unknown outcome, misconfigured, commercial — not the caller's errors.
bool counts_against_deployment(FailureClass c);

}  // namespace tollgate::policy
