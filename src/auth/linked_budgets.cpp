#include "auth/linked_budgets.hpp"

#include <string>
#include <unordered_map>

namespace tollgate::auth {

namespace {

template <class T>
void fill(std::optional<T>& own, const std::optional<T>& linked) {
  if (!own) own = linked;
}

}  // namespace

void apply_linked_budgets(store::IdentitySnapshot& snap) {
  std::unordered_map<std::string, const store::BudgetRecord*> by_id;
  for (const auto& b : snap.budgets) by_id.emplace(b.budget_id, &b);
  const store::BudgetRecord dangling{.max_budget_nanos = 0};
  auto find = [&](const std::string& id) -> const store::BudgetRecord* {
    if (id.empty()) return nullptr;
    auto it = by_id.find(id);
    return it == by_id.end() ? &dangling : it->second;
  };
  for (auto& k : snap.keys)
    if (const auto* b = find(k.budget_id)) {
      fill(k.max_budget_nanos, b->max_budget_nanos);
      fill(k.budget_duration, b->budget_duration);
      fill(k.soft_budget_nanos, b->soft_budget_nanos);
      fill(k.max_parallel_requests, b->max_parallel_requests);
      fill(k.rpm_limit, b->rpm_limit);
      fill(k.tpm_limit, b->tpm_limit);
    }
  for (auto& t : snap.teams)
    if (const auto* b = find(t.budget_id)) {
      fill(t.max_budget_nanos, b->max_budget_nanos);
      fill(t.budget_duration, b->budget_duration);
      fill(t.rpm_limit, b->rpm_limit);
      fill(t.tpm_limit, b->tpm_limit);
    }
  for (auto& c : snap.customers)
    if (const auto* b = find(c.budget_id)) {
      fill(c.max_budget_nanos, b->max_budget_nanos);
      fill(c.budget_duration, b->budget_duration);
    }
}

}  // namespace tollgate::auth
