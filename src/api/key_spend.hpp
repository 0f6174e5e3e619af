#pragma once
/// The spend figures the admin API shows for a key, team, user, organization or customer, read
/// from the in-memory ledger (what admission enforces).

#include <boost/json/object.hpp>

#include "budget/budget_ledger.hpp"
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

/// {"spend", "reserved_spend" (dollars), and "budget_reset_at" (ISO 8601 UTC) /
/// "budget_reset_at_ms" when the scope's budget has a window} of one scope (team, user,
/// organization, end_user). A scope that was never charged shows spend 0.
boost::json::object scope_spend_json(const budget::BudgetLedger& ledger, const budget::ScopeId& scope);

}  // namespace tollgate::api
