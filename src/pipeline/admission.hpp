#pragma once
/// Money admission of one upstream attempt (DESIGN.md "Budget admission"): which budget scopes
/// apply to the caller for a target, what the attempt may cost at worst, and the atomic
/// reservation of that amount at every scope, all or none. The same code admits the primary,
/// each retry and each fallback target: there is no other path to an upstream.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "auth/principal.hpp"
#include "budget/ledger.hpp"
#include "budget/pricing.hpp"
#include "config/config.hpp"
#include "core/error.hpp"
#include "providers/usage.hpp"
#include "store/records.hpp"

namespace tollgate::pipeline {

/// The budget scopes that apply to `p` calling model group `group`, each with its limit and
/// window. Sources: the key (max_budget/budget_duration, every budget_limits window,
/// model_max_budget[group]), the user (personal keys; team keys only with
/// apply_user_budget_to_team_keys), the team, the team membership (max_budget_in_team), the
/// organization, the end user (customer record, else litellm_settings.max_end_user_budget), and
/// the global budget (litellm_settings.max_budget). An identity without a budget is still listed,
/// with limit budget::kMaxNanos: its spend is tracked but never refused. Malformed stored JSON
/// fails closed: the scope is kept with a zero limit.
std::vector<budget::ScopeLimit> applicable_scopes(const auth::Principal& p, const std::string& group,
                                                  const config::Config& cfg);

/// What admission decided for one attempt.
struct AdmissionDecision {
  enum class Outcome {
    admitted,         ///< go ahead; `reservation` holds the worst case (empty when free or unbudgeted)
    budget_exceeded,  ///< a scope cannot take the worst case → 429 budget_exceeded (or skip a fallback)
    unpriced_blocked, ///< unpriced model where a budget attaches → 403 unpriced_model_blocked
  };
  Outcome outcome = Outcome::admitted;
  budget::Reservation reservation;
  budget::PriceStatus price_status = budget::PriceStatus::unpriced;
  std::vector<store::LedgerScope> ledger_scopes;  ///< for the durable reserve record
  core::Error error;                              ///< the client-facing refusal
  std::string reason;                             ///< short, for skip lists: "budget_exceeded key:ab12.."
};

/// Reserves the worst-case cost of sending `chat` to deployment `dep` (index in
/// Config::model_list) against every scope in `scopes`. Thread-safe (the ledger is).
AdmissionDecision admit(budget::Ledger& ledger, const config::Config& cfg, const budget::ResolvedPrice& price,
                        const std::vector<budget::ScopeLimit>& scopes, const boost::json::object& chat,
                        std::chrono::system_clock::time_point now);

/// The worst-case cost of sending `chat` to a deployment priced `price`, the amount admission
/// reserves: 0 for a priced-zero model, budget::kMaxNanos for an unpriced one (it cannot be
/// bounded). Used for the request's cost ceiling (max_request_cost).
budget::Nanos worst_case(const budget::ResolvedPrice& price, const boost::json::object& chat);

/// The actual cost of an attempt from its usage (0 for an unpriced or free model).
budget::Nanos attempt_cost(const budget::ResolvedPrice& price, const providers::Usage& usage);

}  // namespace tollgate::pipeline
