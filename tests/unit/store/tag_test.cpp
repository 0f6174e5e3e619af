// Tag budget records (/tag/*): CRUD on every engine, the snapshot, and SQLite's migration 2.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "store/sqlite/sqlite_store.hpp"
#include "test_util.hpp"

namespace tollgate::store {
namespace {

using testing::TempDir;
using testing::open_or_die;

TagRecord full_tag(const std::string& name) {
  TagRecord t;
  t.name = name;
  t.description = "billing for " + name;
  t.max_budget_nanos = 2'500'000'000;
  t.budget_duration = "1d";
  t.created_at_ms = 1'700'000'000'000;
  t.updated_at_ms = 1'700'000'000'000;
  return t;
}

class TagStoreTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (not_ready()) return;
    store_ = db_->open();
    ASSERT_TRUE(store_);
  }
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Engines, TagStoreTest, testing::kEngines, testing::engine_name);

TEST_P(TagStoreTest, RoundTripPreservesEveryField) {
  const TagRecord t = full_tag("eu");
  auto created = store_->create_tag(t);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(*created, t);
  EXPECT_EQ(store_->get_tag("eu").value(), t);

  TagRecord minimal;  // no description, no budget: stored as NULLs, read back unset
  minimal.name = "tracked";
  ASSERT_TRUE(store_->create_tag(minimal));
  auto g = store_->get_tag("tracked");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->description, "");
  EXPECT_FALSE(g->max_budget_nanos);
  EXPECT_FALSE(g->budget_duration);
  EXPECT_GT(g->created_at_ms, 0);
  EXPECT_EQ(g->updated_at_ms, g->created_at_ms);
}

TEST_P(TagStoreTest, DuplicateNameIsConflictEmptyNameInvalid) {
  ASSERT_TRUE(store_->create_tag(full_tag("eu")));
  auto dup = store_->create_tag(full_tag("eu"));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, StoreErrorCode::conflict);
  EXPECT_EQ(dup.error().field, "name");
  auto empty = store_->create_tag(TagRecord{});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, StoreErrorCode::invalid);
  EXPECT_EQ(empty.error().field, "name");
}

TEST_P(TagStoreTest, UnknownNameIsNotFound) {
  EXPECT_EQ(store_->get_tag("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->update_tag(full_tag("nope")).error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->delete_tag("nope").error().code, StoreErrorCode::not_found);
}

TEST_P(TagStoreTest, UpdateReplacesFieldsKeepsCreatedDeleteRemovesListIsByName) {
  ASSERT_TRUE(store_->create_tag(full_tag("b")));
  ASSERT_TRUE(store_->create_tag(full_tag("a")));
  TagRecord u;
  u.name = "b";
  u.description = "new";
  u.max_budget_nanos = 1;
  auto updated = store_->update_tag(u);
  ASSERT_TRUE(updated) << updated.error().message;
  auto got = store_->get_tag("b").value();
  EXPECT_EQ(got.description, "new");
  EXPECT_EQ(got.max_budget_nanos, 1);
  EXPECT_FALSE(got.budget_duration);
  EXPECT_EQ(got.created_at_ms, 1'700'000'000'000);
  EXPECT_GE(got.updated_at_ms, got.created_at_ms);

  auto list = store_->list_tags();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "a");
  EXPECT_EQ((*list)[1].name, "b");

  ASSERT_TRUE(store_->delete_tag("a"));
  EXPECT_EQ(store_->get_tag("a").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->list_tags().value().size(), 1u);
}

TEST_P(TagStoreTest, SnapshotHasTagsAndEveryMutationMovesTheGeneration) {
  const auto g0 = store_->identity_generation().value();
  ASSERT_TRUE(store_->create_tag(full_tag("eu")));
  ASSERT_TRUE(store_->update_tag(full_tag("eu")));
  ASSERT_TRUE(store_->create_tag(full_tag("us")));
  ASSERT_TRUE(store_->delete_tag("us"));
  auto snap = store_->load_all_identities();
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_EQ(snap->tags.size(), 1u);
  EXPECT_EQ(snap->tags[0].name, "eu");
  EXPECT_EQ(snap->tags[0].max_budget_nanos, 2'500'000'000);
  EXPECT_EQ(snap->generation, g0 + 4);
}

TEST_P(TagStoreTest, TagsSurviveReopen) {
  ASSERT_TRUE(store_->create_tag(full_tag("eu")));
  store_.reset();
  auto again = db_->open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get_tag("eu").value(), full_tag("eu"));
}

TEST(TagMigration, AVersion1DatabaseIsUpgradedKeepingItsData) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  {
    auto s = open_or_die(path);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->create_user({.user_id = "alice"}));
  }
  // Turn it back into a version-1 database (as written by the previous binary).
  testing::downgrade_to(path, 1);
  auto s = open_or_die(path);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->get_user("alice"));
  ASSERT_TRUE(s->create_tag(full_tag("eu")));
  EXPECT_EQ(s->get_tag("eu").value(), full_tag("eu"));
  EXPECT_GE(sqlite::sqlite_schema_version(), 2);
}

}  // namespace
}  // namespace tollgate::store
