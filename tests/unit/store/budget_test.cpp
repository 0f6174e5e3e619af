// Reusable budget records (/budget/*, linked by budget_id): CRUD on every engine, the links on
// keys, teams and customers, the snapshot, and SQLite's migration 6.
#include <gtest/gtest.h>

#include "store/sqlite/sqlite_store.hpp"
#include "test_util.hpp"

namespace tollgate::store {
namespace {

using testing::TempDir;
using testing::open_or_die;

BudgetRecord full_budget(const std::string& id) {
  BudgetRecord b;
  b.budget_id = id;
  b.max_budget_nanos = 2'500'000'000;
  b.soft_budget_nanos = 2'000'000'000;
  b.max_parallel_requests = 3;
  b.tpm_limit = 1000;
  b.rpm_limit = 10;
  b.budget_duration = "1d";
  b.created_at_ms = 1'700'000'000'000;
  b.updated_at_ms = 1'700'000'000'000;
  return b;
}

class BudgetStoreTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (not_ready()) return;
    store_ = db_->open();
    ASSERT_TRUE(store_);
  }
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Engines, BudgetStoreTest, testing::kEngines, testing::engine_name);

TEST_P(BudgetStoreTest, RoundTripUpdateDeleteAndConflicts) {
  const auto b = full_budget("b1");
  ASSERT_EQ(store_->create_budget(b).value(), b);
  EXPECT_EQ(store_->get_budget("b1").value(), b);
  auto dup = store_->create_budget(b);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, StoreErrorCode::conflict);
  EXPECT_EQ(dup.error().field, "budget_id");
  EXPECT_EQ(store_->create_budget(BudgetRecord{}).error().code, StoreErrorCode::invalid);

  BudgetRecord u;
  u.budget_id = "b1";
  u.max_budget_nanos = 7;
  ASSERT_TRUE(store_->update_budget(u));
  auto got = store_->get_budget("b1").value();
  EXPECT_EQ(got.max_budget_nanos, 7);
  EXPECT_FALSE(got.rpm_limit);
  EXPECT_EQ(got.created_at_ms, 1'700'000'000'000);
  ASSERT_TRUE(store_->create_budget(full_budget("a0")));
  auto list = store_->list_budgets().value();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].budget_id, "a0");
  ASSERT_TRUE(store_->delete_budget("a0"));
  EXPECT_EQ(store_->get_budget("a0").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->delete_budget("a0").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->update_budget(full_budget("zz")).error().code, StoreErrorCode::not_found);
}

TEST_P(BudgetStoreTest, LinksAreStoredAndTheSnapshotHasTheBudgets) {
  const auto g0 = store_->identity_generation().value();
  ASSERT_TRUE(store_->create_budget(full_budget("b1")));
  KeyRecord k;
  k.token_hash = std::string(64, 'a');
  k.budget_id = "b1";
  ASSERT_TRUE(store_->create_key(k));
  TeamRecord t;
  t.team_id = "t1";
  t.budget_id = "b1";
  ASSERT_TRUE(store_->create_team(t));
  CustomerRecord c;
  c.user_id = "c1";
  c.budget_id = "b1";
  ASSERT_TRUE(store_->create_customer(c));
  EXPECT_EQ(store_->get_key(k.token_hash).value().budget_id, "b1");
  EXPECT_EQ(store_->get_team("t1").value().budget_id, "b1");
  EXPECT_EQ(store_->get_customer("c1").value().budget_id, "b1");
  auto snap = store_->load_all_identities().value();
  ASSERT_EQ(snap.budgets.size(), 1u);
  EXPECT_EQ(snap.budgets[0], full_budget("b1"));
  EXPECT_GT(snap.generation, g0) << "a budget write moves the identity generation";
}

TEST(BudgetMigration, AVersion5DatabaseGetsBudgetsAndEmptyLinksKeepingItsRows) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  {
    auto s = open_or_die(path);
    ASSERT_TRUE(s);
    KeyRecord k;
    k.token_hash = std::string(64, 'b');
    k.key_alias = "old";
    ASSERT_TRUE(s->create_key(k));
    ASSERT_TRUE(s->create_team({.team_id = "t-old"}));
  }
  testing::downgrade_to(path, 5);
  auto s = open_or_die(path);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->get_key(std::string(64, 'b')).value().key_alias, "old");
  EXPECT_EQ(s->get_key(std::string(64, 'b')).value().budget_id, "");
  EXPECT_EQ(s->get_team("t-old").value().budget_id, "");
  ASSERT_TRUE(s->create_budget(full_budget("b-new")));
  EXPECT_GE(sqlite::sqlite_schema_version(), 9);
}

}  // namespace
}  // namespace tollgate::store
