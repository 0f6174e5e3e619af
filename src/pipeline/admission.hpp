#pragma once
/// Money admission of one upstream attempt (DESIGN.md "Budget admission"): which budget scopes
/// apply to the caller for a target, what the attempt may cost at worst, and the atomic
/// reservation of that amount at every scope, all or none. The same code admits the primary,
/// each retry and each fallback target: there is no other path to an upstream.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

#include "auth/principal.hpp"
#include "budget/ledger.hpp"
#include "budget/pricing.hpp"
#include "config/config.hpp"
#include "core/error.hpp"
#include "pipeline/output_bound.hpp"
#include "providers/usage.hpp"
#include "store/records.hpp"

namespace tollgate::pipeline {

/// A scope as messages and traces name it: "key <hash>", "team <id>", "global", ...
std::string scope_name(const budget::ScopeId& s);

/// The end-user budget scope id of `p`'s end user (`p.end_user`, non-empty) under `mode`
/// (tollgate_settings.end_user_budget_scope): the bare id in the global namespace (mode
/// `global`, the master key, the anonymous caller); otherwise the id under the caller's tenant,
/// "team:<team_id>/<user>", "organization:<org_id>/<user>" or "key:<token hash>/<user>" (team
/// mode: team, else organization, else key; organization mode: organization, else team, else
/// key), so that one tenant naming an end user never charges or exhausts another's.
std::string end_user_scope_id(const auth::Principal& p, config::TollgateSettings::EndUserBudgetScope mode);

/// The parts of an end-user scope id end_user_scope_id wrote under a tenant: {"team 1", "alice"}
/// ("<team|organization|key> <id>", the end user); nullopt for a bare (global) id.
std::optional<std::pair<std::string, std::string>> split_end_user_scope(std::string_view id);

/// The budget scopes that apply to `p` calling model group `group`, each with its limit and
/// window. Sources: the key (max_budget/budget_duration, every budget_limits window,
/// model_max_budget[group]), the user (personal keys; team keys only with
/// apply_user_budget_to_team_keys), the team, the team membership (max_budget_in_team), the
/// organization, the end user (customer record, else litellm_settings.max_end_user_budget; id by
/// end_user_scope_id), and
/// the global budget (litellm_settings.max_budget). An identity without a budget is still listed,
/// with limit budget::kMaxNanos: its spend is tracked but never refused — except an end user
/// without a budget, who is not listed (callers name end users freely: the ledger must not grow
/// with every name; their spend is in the spend log). Malformed stored JSON
/// fails closed: the scope is kept with a zero limit.
std::vector<budget::ScopeLimit> applicable_scopes(const auth::Principal& p, const std::string& group,
                                                  const config::Config& cfg);

/// What admission decided for one attempt.
struct AdmissionDecision {
  enum class Outcome {
    admitted,         ///< go ahead; `reservation` holds the worst case (empty when free or unbudgeted)
    budget_exceeded,  ///< a scope cannot take even the least worth sending → 429 budget_exceeded (or skip a fallback)
    unpriced_blocked, ///< unpriced model where a budget attaches → 403 unpriced_model_blocked
  };
  Outcome outcome = Outcome::admitted;
  budget::Reservation reservation;
  budget::PriceStatus price_status = budget::PriceStatus::unpriced;
  /// The output bound per choice (tokens) the attempt must be sent with: what the reservation
  /// pays for. Set for priced models (a free or unpriced model is sent as the caller asked).
  std::optional<std::int64_t> output_tokens;
  /// The bound is below what the plan wanted because a budget (or the plan's ceiling) could not
  /// pay for more: the response says so (`x-tollgate-output-capped`).
  bool output_reduced = false;
  std::string reduced_by;      ///< "key <id>" etc.: the scope whose headroom set the bound
  budget::Nanos worst = 0;     ///< the attempt's worst case at that bound, nano-dollars (0 unless priced)
  core::Error error;           ///< the client-facing refusal
  std::string reason;          ///< short, for skip lists: "budget_exceeded key:ab12.."
};

/// Admission that needs no ledger: a free model is admitted with nothing reserved; an unpriced one
/// is admitted unreserved (recorded as unpriced), or refused where a budget attaches
/// (general_settings.block_unpriced_models). nullopt: the model is priced and its worst case must
/// be reserved (admission_decision on the ledger's answer).
std::optional<AdmissionDecision> admit_unreserved(const config::Config& cfg, const budget::ResolvedPrice& price,
                                                  const std::vector<budget::ScopeLimit>& scopes);

/// The decision for a priced attempt from the ledger's answer to `plan.range` (pipeline/
/// output_bound.hpp) over `scopes`: admitted with the output bound the grant pays for (lowered
/// when a budget is nearly spent), 429 budget_exceeded naming the refusing scope, or 503
/// ledger_unavailable when the reservation could not be recorded or the shared ledger reached.
AdmissionDecision admission_decision(budget::ReserveResult reserved, const budget::ResolvedPrice& price,
                                     const std::vector<budget::ScopeLimit>& scopes, const AttemptPlan& plan);

/// admit_unreserved, else admission_decision on the in-process ledger's answer, synchronously.
/// The attempt loop asks its BudgetLedger (in-process or shared) through the same two functions.
AdmissionDecision admit(budget::Ledger& ledger, const config::Config& cfg, const budget::ResolvedPrice& price,
                        const std::vector<budget::ScopeLimit>& scopes, const AttemptPlan& plan,
                        std::chrono::system_clock::time_point now);

/// The scopes of a reservation as the durable ledger records them: kind, id and the window
/// containing `now` in `tz` — its start, end and period (all 0 / empty for lifetime budgets).
std::vector<store::LedgerScope> ledger_scopes(const std::vector<budget::ScopeLimit>& scopes,
                                              const budget::ResetTimezone& tz, std::chrono::system_clock::time_point now);

/// The same for one scope already recorded (its period in LedgerScope::period): the window that
/// contains `now_ms`; unchanged for a lifetime or unknown period, or when `now_ms` is still in
/// its window. Restart recovery charges a reservation left open to that window.
store::LedgerScope ledger_scope_at(const store::LedgerScope& scope, const budget::ResetTimezone& tz, std::int64_t now_ms);


/// What an attempt's usage costs, line by line (empty for an unpriced or free model).
budget::Charge attempt_charge(const budget::ResolvedPrice& price, const providers::Usage& usage);

}  // namespace tollgate::pipeline
