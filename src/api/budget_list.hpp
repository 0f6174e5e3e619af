#pragma once
/// The budgets GET /tollgate/budgets lists (docs/admin_api.md): every scope with a real limit that
/// admission applies, computed by admission's own function (pipeline::applicable_scopes) over the
/// identity snapshot, with the live ledger's figures. Nothing is recomputed differently from
/// admission: a scope is listed with the limit and window admission would reserve against.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "auth/identities.hpp"
#include "budget/budget_ledger.hpp"
#include "budget/ledger.hpp"
#include "config/config.hpp"

namespace tollgate::api {

/// One budget as listed. Money in nano-dollars.
struct BudgetRow {
  budget::ScopeId scope;
  std::string name;                          ///< the alias where one exists, else the id
  budget::Nanos max_budget = 0;
  budget::Nanos spend = 0;                   ///< settled, current window
  budget::Nanos reserved = 0;                ///< held by reservations in flight now
  std::optional<std::string> budget_duration;  ///< the window's period ("1d"); nullopt = lifetime
  std::optional<std::int64_t> reset_at_ms;   ///< end of the current window, ms since the epoch
  double used_ratio = 0;                     ///< (spend + reserved) / max_budget; 1 when max_budget is 0
};

/// The budgets that apply. `caller` null: every budget of the snapshot (keys with their windows
/// and per-model budgets, users, teams, memberships, organizations, tags, customers, global), plus
/// the end-user scopes `local` (the in-process ledger, null with a shared one) holds; else only
/// those applied to `caller`'s requests. Sorted by used_ratio descending, then kind and id.
std::vector<BudgetRow> list_budgets(const auth::IdentityIndex& index, const config::Config& cfg,
                                    const budget::BudgetLedger& ledger, const budget::Ledger* local,
                                    const auth::Principal* caller, budget::SystemTime now);

/// {"scope", "id", "name", "max_budget", "spend", "reserved" (dollars), "budget_duration",
/// "budget_reset_at" (ISO 8601 UTC or null), "used_ratio"}.
boost::json::object budget_row_json(const BudgetRow& row);

}  // namespace tollgate::api
