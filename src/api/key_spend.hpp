#pragma once
/// The spend figures the admin API shows for a key, team, user, organization or customer, read
/// from the in-memory ledger (what admission enforces).

#include <boost/json/object.hpp>

#include "budget/budget_ledger.hpp"
#include "budget/ledger.hpp"
#include "config/config.hpp"
#include "store/records.hpp"

namespace tollgate::api {

/// {"spend", "reserved_spend" (dollars), "budget_reset_at" (ISO 8601 UTC, LiteLLM's field) and
/// "budget_reset_at_ms" (when the key has a window),
/// "spend_windows": [{budget_duration, spend, max_budget}]} — the windows are exactly the
/// key_window scopes admission charges (pipeline::applicable_scopes), so what is shown is what is
/// enforced.
boost::json::object key_spend_json(const budget::BudgetLedger& ledger, const config::Config& cfg,
                                   const store::KeyRecord& key);

/// {"spend", "reserved_spend" (dollars), "budget_reset_at" (ISO 8601 UTC, null without a window)
/// and "budget_reset_at_ms" when the scope's budget has a window} of one scope (team, user,
/// organization, end_user). A scope that was never charged shows spend 0.
boost::json::object scope_spend_json(const budget::BudgetLedger& ledger, const budget::ScopeId& scope);

/// Starts a new window of `key`'s budget scope at `now` with spend 0 (its budget_duration was
/// added or changed: LiteLLM #34270). The window ends at the period's next reset after `now`
/// (budget::window_of), from which the key's windows run as usual. No-op without a duration.
/// Limits: the in-process ledger only (a shared ledger keeps its aligned window), and a restart
/// inside the same aligned window rebuilds that window's spend from the durable ledger.
void restart_key_window(budget::Ledger& ledger, const store::KeyRecord& key, budget::SystemTime now);

}  // namespace tollgate::api
