// apply_linked_budgets: a linked budget's limits become the entity's own where it sets none.
#include "auth/linked_budgets.hpp"

#include <gtest/gtest.h>

#include "auth/identities.hpp"

namespace tollgate::auth {
namespace {

store::BudgetRecord budget() {
  store::BudgetRecord b;
  b.budget_id = "b1";
  b.max_budget_nanos = 5'000'000'000;
  b.soft_budget_nanos = 4'000'000'000;
  b.budget_duration = "1d";
  b.rpm_limit = 10;
  b.tpm_limit = 1000;
  b.max_parallel_requests = 2;
  return b;
}

TEST(LinkedBudgets, FillsEveryUnsetLimitOfAKeyTeamAndCustomer) {
  store::IdentitySnapshot s;
  s.budgets.push_back(budget());
  store::KeyRecord k;
  k.token_hash = "k";
  k.budget_id = "b1";
  s.keys.push_back(k);
  store::TeamRecord t;
  t.team_id = "t";
  t.budget_id = "b1";
  s.teams.push_back(t);
  store::CustomerRecord c;
  c.user_id = "c";
  c.budget_id = "b1";
  s.customers.push_back(c);
  apply_linked_budgets(s);
  EXPECT_EQ(s.keys[0].max_budget_nanos, 5'000'000'000);
  EXPECT_EQ(s.keys[0].soft_budget_nanos, 4'000'000'000);
  EXPECT_EQ(s.keys[0].budget_duration, "1d");
  EXPECT_EQ(s.keys[0].rpm_limit, 10);
  EXPECT_EQ(s.keys[0].tpm_limit, 1000);
  EXPECT_EQ(s.keys[0].max_parallel_requests, 2);
  EXPECT_EQ(s.teams[0].max_budget_nanos, 5'000'000'000);
  EXPECT_EQ(s.teams[0].budget_duration, "1d");
  EXPECT_EQ(s.teams[0].rpm_limit, 10);
  EXPECT_EQ(s.customers[0].max_budget_nanos, 5'000'000'000);
  EXPECT_EQ(s.customers[0].budget_duration, "1d");
}

TEST(LinkedBudgets, TheEntitysOwnFieldsWin) {
  store::IdentitySnapshot s;
  s.budgets.push_back(budget());
  store::KeyRecord k;
  k.token_hash = "k";
  k.budget_id = "b1";
  k.max_budget_nanos = 1;
  k.budget_duration = "1h";
  s.keys.push_back(k);
  apply_linked_budgets(s);
  EXPECT_EQ(s.keys[0].max_budget_nanos, 1);
  EXPECT_EQ(s.keys[0].budget_duration, "1h");
  EXPECT_EQ(s.keys[0].rpm_limit, 10) << "unset fields still come from the budget";
}

TEST(LinkedBudgets, UnlinkedEntitiesAreUntouchedAndADanglingLinkFailsClosed) {
  store::IdentitySnapshot s;
  s.budgets.push_back(budget());
  store::KeyRecord free_key;
  free_key.token_hash = "free";
  s.keys.push_back(free_key);
  store::KeyRecord dangling;
  dangling.token_hash = "dangling";
  dangling.budget_id = "gone";
  s.keys.push_back(dangling);
  apply_linked_budgets(s);
  EXPECT_EQ(s.keys[0], free_key);
  EXPECT_EQ(s.keys[1].max_budget_nanos, 0) << "a budget that does not exist allows nothing";
  EXPECT_FALSE(s.keys[1].rpm_limit.has_value());
}

TEST(LinkedBudgets, TheIndexServesTheResolvedRecords) {
  store::IdentitySnapshot s;
  s.budgets.push_back(budget());
  store::TeamRecord t;
  t.team_id = "t";
  t.budget_id = "b1";
  s.teams.push_back(t);
  auto idx = IdentityIndex::build(s);
  ASSERT_NE(idx->team("t"), nullptr);
  EXPECT_EQ(idx->team("t")->max_budget_nanos, 5'000'000'000);
}

}  // namespace
}  // namespace tollgate::auth
