#pragma once
/// Linked budgets (LiteLLM `budget_id` on keys, teams and customers; `/budget/*`): a budget's
/// limits become the linked entity's own where the entity sets none, so admission enforces them
/// at that entity's scope (its own spend, its own window) with no special case downstream.

#include "store/store.hpp"

namespace tollgate::auth {

/// For every key, team and customer of `snap` with a budget_id: fills max_budget, budget_duration
/// and (keys, teams) rpm_limit, tpm_limit, soft_budget, max_parallel_requests from the budget
/// when the entity leaves them unset. A budget_id naming no budget fails closed: the entity gets
/// a zero max_budget when it has none (the admin API refuses dangling links; this covers a store
/// edited by hand). Pure; O(entities + budgets).
void apply_linked_budgets(store::IdentitySnapshot& snap);

}  // namespace tollgate::auth
