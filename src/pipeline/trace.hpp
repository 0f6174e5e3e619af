#pragma once
/// The decision trace of one request (issue 4 §6): every attempt with its failure class and the
/// action taken, every skipped target with its reason, the circuit state each attempt met, the
/// request budgets and what was consumed of them, and any degradation. Compact in the
/// `x-tollgate-decision` response header, whole (JSON) in the spend log's `decision` column,
/// readable with `tollgate explain REQUEST_ID`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "budget/money.hpp"
#include "policy/request_budget.hpp"

namespace tollgate::pipeline {

/// One step of the walk.
struct TraceStep {
  enum class Kind {
    attempt,   ///< an upstream attempt was sent
    skip,      ///< a target was not attempted (budget, access, circuit, deadline, ...)
    fallback,  ///< the walk moved on to a fallback group
    degrade,   ///< a degradation mode answered (or tried to)
    stop,      ///< the walk ended without an answer (fail_fast, stop_and_alert, budgets spent)
  };
  Kind kind = Kind::attempt;
  std::string group;          ///< model group of the attempt / target
  std::string deployment;     ///< deployment id (attempt)
  std::string provider;       ///< provider_prefix (attempt)
  std::string circuit;        ///< circuit state the attempt met: "closed" | "half_open" (probe)
  int status = 0;             ///< upstream HTTP status, 0 = transport failure
  std::string failure_class;  ///< empty = success
  std::string action;         ///< the class's configured action
  std::string decision;       ///< what the loop did next: "retry", "next_deployment", "fallback", "degrade", "stop", "served"
  std::string reason;         ///< skip / degrade / stop: why
  std::int64_t duration_ms = 0;
  budget::Nanos reserved = 0;  ///< attempt's reservation
  budget::Nanos charged = 0;   ///< what it was settled at
  std::string evidence;        ///< what its charge followed: budget::Evidence's name (attempt)
  std::int64_t output_bound = 0;  ///< the output bound per choice it was sent with, tokens; 0 = the caller's own
  std::string output_capped_by;   ///< the budget scope that lowered that bound; empty = not lowered
  int skipped_events = 0;         ///< a relayed stream's malformed events, skipped (never relayed)
  /// Mid-stream continuation (issue 13 §3): "cut" — its stream broke after text reached the
  /// client and the walk looked for a target to continue it; "continued" — it continued the
  /// answer from a prefill of `prefill_bytes` bytes of delivered text. Empty otherwise.
  std::string continuation;
  std::int64_t prefill_bytes = 0;
};

/// The whole trace.
struct DecisionTrace {
  policy::RequestBudget budget;      ///< the effective budgets
  std::vector<std::string> ignored;  ///< looser overrides that were ignored
  std::vector<TraceStep> steps;
  int retries_used = 0;
  int fallbacks_used = 0;
  std::int64_t elapsed_ms = 0;
  budget::Nanos reserved_total = 0;
  budget::Nanos charged_total = 0;
  std::string degradation;           ///< mode that answered, empty = full answer
  std::string outcome;               ///< "served" | "degraded" | "failed" | "refused" | "client_gone"
  std::string served_by;             ///< "group/deployment" of the answer
  /// The deployment id that continued a cut stream last (empty: not continued), and how often.
  std::string continued_by;
  int continuations = 0;

  /// The full trace as JSON text, an object (spend log `decision`): `budget`, `steps`,
  /// `consumed`, `degradation`, `outcome`, `served_by` (and `continued_by`, `continuations` when
  /// continued). Money as decimal dollar strings; an absent cost ceiling, class or mode is null.
  std::string to_json() const;
  /// One header line: "g/d1 429 retryable_capacity->retry; g/d2 ok; retries=1/2 fallbacks=0/1 ms=230/4000 cost=$0.0001".
  std::string compact() const { return compact(elapsed_ms, nullptr); }
  /// The same line while the request is still running: `elapsed` so far, and `serving` (if not
  /// null) appended as the last step — a stream's headers go out before its attempt is recorded.
  std::string compact(std::int64_t elapsed, const TraceStep* serving) const;
};

/// Renders a trace (the spend log's `decision` JSON) for people: `tollgate explain`.
std::string explain_text(const boost::json::object& trace);

}  // namespace tollgate::pipeline
