#include <gtest/gtest.h>

#include "test_util.hpp"

namespace tollgate::store {
namespace {


KeyRecord full_key(const std::string& hash, const std::string& alias) {
  KeyRecord k;
  k.token_hash = hash;
  k.key_alias = alias;
  k.key_name = "sk-...abcd";
  k.user_id = "alice";
  k.team_id = "team-a";
  k.organization_id = "org-1";
  k.models = {"gpt-4o", "claude-*"};
  k.metadata = R"({"env":"prod"})";
  k.tags = {"billing", "eu"};
  k.max_budget_nanos = 5'000'000'000;
  k.budget_duration = "30d";
  k.soft_budget_nanos = 4'000'000'000;
  k.budget_limits = R"([{"budget_duration":"1d","max_budget":1.5}])";
  k.model_max_budget = R"({"gpt-4o":{"max_budget":2}})";
  k.max_parallel_requests = 4;
  k.rpm_limit = 60;
  k.tpm_limit = 100000;
  k.blocked = false;
  k.expires_at_ms = 1'900'000'000'000;
  k.created_at_ms = 1'700'000'000'000;
  k.updated_at_ms = 1'700'000'000'000;
  return k;
}

class IdentityTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (not_ready()) return;
    store_ = db_->open();
    ASSERT_TRUE(store_);
  }
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Engines, IdentityTest, testing::kEngines, testing::engine_name);

TEST_P(IdentityTest, KeyRoundTripPreservesEveryField) {
  const KeyRecord k = full_key("h1", "alias-1");
  auto created = store_->create_key(k);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(*created, k);
  auto got = store_->get_key("h1");
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, k);

  KeyRecord minimal;
  minimal.token_hash = "h2";
  ASSERT_TRUE(store_->create_key(minimal));
  auto g2 = store_->get_key("h2");
  ASSERT_TRUE(g2);
  EXPECT_FALSE(g2->max_budget_nanos);
  EXPECT_FALSE(g2->expires_at_ms);
  EXPECT_TRUE(g2->key_alias.empty());
  EXPECT_GT(g2->created_at_ms, 0);
}

TEST_P(IdentityTest, DuplicateAliasOrHashIsConflictNamingTheField) {
  ASSERT_TRUE(store_->create_key(full_key("h1", "dup")));
  auto again = store_->create_key(full_key("h2", "dup"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, StoreErrorCode::conflict);
  EXPECT_EQ(again.error().field, "key_alias");
  auto same_hash = store_->create_key(full_key("h1", "other"));
  ASSERT_FALSE(same_hash);
  EXPECT_EQ(same_hash.error().code, StoreErrorCode::conflict);
  EXPECT_EQ(same_hash.error().field, "token_hash");
  // Keys without alias never conflict with each other.
  KeyRecord a, b;
  a.token_hash = "n1";
  b.token_hash = "n2";
  EXPECT_TRUE(store_->create_key(a));
  EXPECT_TRUE(store_->create_key(b));
  // Update onto a taken alias is a conflict too.
  KeyRecord k = full_key("h3", "free");
  ASSERT_TRUE(store_->create_key(k));
  k.key_alias = "dup";
  auto up = store_->update_key(k);
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().code, StoreErrorCode::conflict);
}

TEST_P(IdentityTest, UnknownIdsAreNotFound) {
  EXPECT_EQ(store_->get_key("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->update_key(full_key("nope", "x")).error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->delete_key("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->get_user("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->get_team("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->get_organization("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->get_customer("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->delete_team("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->remove_team_member("t", "u").error().code, StoreErrorCode::not_found);
  KeyRecord empty;
  EXPECT_EQ(store_->create_key(empty).error().code, StoreErrorCode::invalid);
}

TEST_P(IdentityTest, UpdateReplacesFieldsKeepsCreatedAndDeleteRemoves) {
  KeyRecord k = full_key("h1", "a");
  ASSERT_TRUE(store_->create_key(k));
  k.blocked = true;
  k.max_budget_nanos.reset();
  k.models = {};
  k.created_at_ms = 0;  // not known by the caller: kept from the stored row
  auto up = store_->update_key(k);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(up->created_at_ms, 1'700'000'000'000);
  EXPECT_GT(up->updated_at_ms, 1'700'000'000'000);
  auto got = store_->get_key("h1");
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, *up);
  EXPECT_TRUE(got->blocked);
  EXPECT_FALSE(got->max_budget_nanos);
  ASSERT_TRUE(store_->delete_key("h1"));
  EXPECT_EQ(store_->get_key("h1").error().code, StoreErrorCode::not_found);
}

TEST_P(IdentityTest, ListKeysFilters) {
  KeyRecord a = full_key("h1", "a1"), b = full_key("h2", "a2"), c = full_key("h3", "a3");
  b.user_id = "bob";
  c.team_id = "team-b";
  for (auto* k : {&a, &b, &c}) ASSERT_TRUE(store_->create_key(*k));
  auto all = store_->list_keys({});
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 3u);
  auto alice = store_->list_keys(KeyFilter{.user_id = "alice"});
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->size(), 2u);
  auto team_a_alice = store_->list_keys(KeyFilter{.user_id = "alice", .team_id = "team-a"});
  ASSERT_TRUE(team_a_alice);
  ASSERT_EQ(team_a_alice->size(), 1u);
  EXPECT_EQ(team_a_alice->front().token_hash, "h1");
  auto by_alias = store_->list_keys(KeyFilter{.key_alias = "a2"});
  ASSERT_TRUE(by_alias);
  ASSERT_EQ(by_alias->size(), 1u);
  EXPECT_EQ(by_alias->front().token_hash, "h2");
  auto limited = store_->list_keys(KeyFilter{.limit = 2});
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->size(), 2u);
}

TEST_P(IdentityTest, UsersTeamsMembersOrganizationsCustomers) {
  UserRecord u{.user_id = "alice", .user_email = "a@x.io", .user_alias = "Alice",
               .max_budget_nanos = 10, .budget_duration = "1d", .models = {"m"},
               .metadata = "{}", .rpm_limit = 5, .tpm_limit = 6};
  auto cu = store_->create_user(u);
  ASSERT_TRUE(cu);
  EXPECT_EQ(store_->get_user("alice").value(), *cu);
  EXPECT_EQ(store_->create_user(u).error().code, StoreErrorCode::conflict);

  TeamRecord t{.team_id = "team-a", .team_alias = "A", .organization_id = "org-1",
               .max_budget_nanos = 100, .budget_duration = "30d", .models = {"x"}, .blocked = true};
  ASSERT_TRUE(store_->create_team(t));
  TeamRecord t2{.team_id = "team-b"};
  ASSERT_TRUE(store_->create_team(t2));
  EXPECT_EQ(store_->list_teams(std::string("org-1")).value().size(), 1u);
  EXPECT_EQ(store_->list_teams().value().size(), 2u);
  EXPECT_TRUE(store_->get_team("team-a").value().blocked);

  TeamMemberRecord m{.team_id = "team-a", .user_id = "alice", .role = "admin",
                     .max_budget_in_team_nanos = 7, .budget_duration = "1d"};
  ASSERT_TRUE(store_->upsert_team_member(m));
  m.max_budget_in_team_nanos = 8;
  ASSERT_TRUE(store_->upsert_team_member(m));  // idempotent add = replace
  auto members = store_->list_team_members("team-a");
  ASSERT_TRUE(members);
  ASSERT_EQ(members->size(), 1u);
  EXPECT_EQ(members->front(), m);
  ASSERT_TRUE(store_->upsert_team_member({.team_id = "team-b", .user_id = "alice"}));
  ASSERT_TRUE(store_->remove_team_member("team-b", "alice"));
  EXPECT_TRUE(store_->list_team_members("team-b").value().empty());

  OrganizationRecord o{.organization_id = "org-1", .organization_alias = "Org",
                       .max_budget_nanos = 1000, .models = {"a", "b"}, .metadata = R"({"k":1})"};
  auto co = store_->create_organization(o);
  ASSERT_TRUE(co);
  EXPECT_EQ(store_->get_organization("org-1").value(), *co);

  CustomerRecord c{.user_id = "end-7", .alias = "shop", .max_budget_nanos = 3, .blocked = false};
  ASSERT_TRUE(store_->create_customer(c));
  c.blocked = true;
  c.created_at_ms = 0;
  ASSERT_TRUE(store_->update_customer(c));
  EXPECT_TRUE(store_->get_customer("end-7").value().blocked);

  // Deleting the team removes its memberships.
  ASSERT_TRUE(store_->delete_team("team-a"));
  EXPECT_TRUE(store_->list_team_members("team-a").value().empty());
}

TEST_P(IdentityTest, SnapshotHasEverythingAndGenerationMoves) {
  auto g0 = store_->identity_generation();
  ASSERT_TRUE(g0);
  ASSERT_TRUE(store_->create_key(full_key("h1", "a")));
  ASSERT_TRUE(store_->create_user({.user_id = "alice"}));
  ASSERT_TRUE(store_->create_team({.team_id = "t"}));
  ASSERT_TRUE(store_->upsert_team_member({.team_id = "t", .user_id = "alice"}));
  ASSERT_TRUE(store_->create_organization({.organization_id = "o"}));
  ASSERT_TRUE(store_->create_customer({.user_id = "e"}));
  auto failed = store_->create_user({.user_id = "alice"});  // a failed mutation does not count
  ASSERT_FALSE(failed);
  auto snap = store_->load_all_identities();
  ASSERT_TRUE(snap) << snap.error().message;
  EXPECT_EQ(snap->keys.size(), 1u);
  EXPECT_EQ(snap->users.size(), 1u);
  EXPECT_EQ(snap->teams.size(), 1u);
  EXPECT_EQ(snap->team_members.size(), 1u);
  EXPECT_EQ(snap->organizations.size(), 1u);
  EXPECT_EQ(snap->customers.size(), 1u);
  EXPECT_EQ(snap->generation, *g0 + 6);
  EXPECT_EQ(store_->identity_generation().value(), *g0 + 6);
}

TEST_P(IdentityTest, IdentitiesSurviveReopen) {
  ASSERT_TRUE(store_->create_key(full_key("h1", "a")));
  store_.reset();
  auto again = db_->open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get_key("h1").value(), full_key("h1", "a"));
}

}  // namespace
}  // namespace tollgate::store
