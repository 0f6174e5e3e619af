// authenticate / with_request over an IdentityIndex built from a snapshot (no store, no I/O).
#include "auth/identities.hpp"

#include <gtest/gtest.h>

#include "auth/keys.hpp"

namespace tollgate::auth {
namespace {

constexpr std::string_view kMaster = "sk-master-key-1234";
constexpr std::int64_t kNow = 1'700'000'000'000;

store::KeyRecord key(const std::string& secret) {
  store::KeyRecord k;
  k.token_hash = sha256_hex(secret);
  k.key_alias = secret;
  return k;
}

std::shared_ptr<const IdentityIndex> index() {
  store::IdentitySnapshot s;
  s.keys.push_back(key("sk-good"));
  auto blocked = key("sk-blocked");
  blocked.blocked = true;
  s.keys.push_back(blocked);
  auto expired = key("sk-expired");
  expired.expires_at_ms = kNow - 1;
  s.keys.push_back(expired);
  auto later = key("sk-later");
  later.expires_at_ms = kNow + 1000;
  s.keys.push_back(later);
  auto team_key = key("sk-team");
  team_key.team_id = "t-ok";
  team_key.user_id = "u1";
  team_key.tags = {"k-tag"};
  s.keys.push_back(team_key);
  auto bad_team_key = key("sk-team-blocked");
  bad_team_key.team_id = "t-blocked";
  s.keys.push_back(bad_team_key);
  store::TeamRecord ok;
  ok.team_id = "t-ok";
  ok.organization_id = "org1";
  store::TeamRecord bad;
  bad.team_id = "t-blocked";
  bad.blocked = true;
  s.teams = {ok, bad};
  store::UserRecord u;
  u.user_id = "u1";
  s.users = {u};
  store::TeamMemberRecord m;
  m.team_id = "t-ok";
  m.user_id = "u1";
  s.team_members = {m};
  store::OrganizationRecord o;
  o.organization_id = "org1";
  s.organizations = {o};
  store::CustomerRecord c1;
  c1.user_id = "cust-ok";
  store::CustomerRecord c2;
  c2.user_id = "cust-blocked";
  c2.blocked = true;
  s.customers = {c1, c2};
  s.generation = 7;
  return IdentityIndex::build(std::move(s));
}

TEST(IdentityIndex, ListsEveryRecordOfAKind) {
  auto idx = index();
  EXPECT_EQ(idx->keys().size(), 6u);
  EXPECT_EQ(idx->teams().size(), 2u);
  EXPECT_EQ(idx->users().size(), 1u);
  EXPECT_EQ(idx->members().size(), 1u);
  EXPECT_EQ(idx->organizations().size(), 1u);
  EXPECT_EQ(idx->customers().size(), 2u);
  EXPECT_TRUE(idx->tags().empty());
}

TEST(PrincipalOfKey, ResolvesLikeAuthenticationWithoutItsChecks) {
  auto idx = index();
  auto p = principal_of_key(*idx, idx->key(sha256_hex("sk-team")));
  ASSERT_TRUE(p->key);
  EXPECT_EQ(p->team->team_id, "t-ok");
  EXPECT_EQ(p->user->user_id, "u1");
  ASSERT_TRUE(p->membership);
  EXPECT_EQ(p->organization->organization_id, "org1");  // the team's
  EXPECT_EQ(p->tags, std::vector<std::string>{"k-tag"});
  // Blocked keys and keys of blocked teams resolve too (listings); authentication refuses them.
  EXPECT_TRUE(principal_of_key(*idx, idx->key(sha256_hex("sk-blocked")))->key->blocked);
  EXPECT_TRUE(principal_of_key(*idx, idx->key(sha256_hex("sk-team-blocked")))->team->blocked);
  EXPECT_FALSE(principal_for_key_hash(*idx, sha256_hex("sk-team-blocked"), kNow));
}

TEST(Authenticate, MasterKeyGivesMasterPrincipal) {
  auto p = authenticate(*index(), kMaster, kMaster, kNow);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE((*p)->is_master);
  EXPECT_EQ((*p)->key, nullptr);
}

TEST(Authenticate, KnownKeyResolvesRecord) {
  auto p = authenticate(*index(), "sk-good", kMaster, kNow);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_FALSE((*p)->is_master);
  ASSERT_NE((*p)->key, nullptr);
  EXPECT_EQ((*p)->key->key_alias, "sk-good");
}

TEST(Authenticate, UnknownKeyIs401InvalidApiKey) {
  for (std::string_view k : {"sk-nope", "not-even-sk", "sk-master-key-123"}) {
    auto p = authenticate(*index(), k, kMaster, kNow);
    ASSERT_FALSE(p.has_value()) << k;
    EXPECT_EQ(p.error().status, 401);
    EXPECT_EQ(p.error().code, "invalid_api_key");
    EXPECT_NE(p.error().message.find("Invalid proxy server token passed"), std::string::npos);
  }
}

TEST(Authenticate, MissingKeyIs401WhenMasterConfigured) {
  auto p = authenticate(*index(), "", kMaster, kNow);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().status, 401);
  EXPECT_EQ(p.error().code, "invalid_api_key");
  EXPECT_EQ(p.error().message, "Authentication Error, No api key passed in.");
}

TEST(Authenticate, BlockedKeyIs401WithReason) {
  auto p = authenticate(*index(), "sk-blocked", kMaster, kNow);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().status, 401);
  EXPECT_NE(p.error().message.find("blocked"), std::string::npos);
}

TEST(Authenticate, ExpiredKeyIs401WithTime) {
  auto p = authenticate(*index(), "sk-expired", kMaster, kNow);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().status, 401);
  EXPECT_NE(p.error().message.find("expired at " + iso8601_utc(kNow - 1)), std::string::npos) << p.error().message;
  // Not yet expired: allowed; expired exactly at its expiry instant.
  EXPECT_TRUE(authenticate(*index(), "sk-later", kMaster, kNow).has_value());
  EXPECT_FALSE(authenticate(*index(), "sk-later", kMaster, kNow + 1000).has_value());
}

TEST(Authenticate, BlockedTeamIs401) {
  auto p = authenticate(*index(), "sk-team-blocked", kMaster, kNow);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().status, 401);
  EXPECT_NE(p.error().message.find("team t-blocked is blocked"), std::string::npos);
}

TEST(Authenticate, TeamKeyCarriesUserTeamMembershipOrganization) {
  auto p = authenticate(*index(), "sk-team", kMaster, kNow);
  ASSERT_TRUE(p.has_value());
  ASSERT_NE((*p)->team, nullptr);
  EXPECT_EQ((*p)->team->team_id, "t-ok");
  ASSERT_NE((*p)->user, nullptr);
  ASSERT_NE((*p)->membership, nullptr);
  ASSERT_NE((*p)->organization, nullptr);
  EXPECT_EQ((*p)->organization->organization_id, "org1");  // from the team
  EXPECT_EQ((*p)->tags, std::vector<std::string>{"k-tag"});
}

TEST(Authenticate, NoMasterKeyNoKeyIsTheAnonymousCaller) {
  auto none = authenticate(*index(), "", "", kNow);
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE((*none)->is_master);
  EXPECT_EQ((*none)->key, nullptr);
  EXPECT_TRUE((*none)->anonymous());
}

TEST(Authenticate, NoMasterKeyAPresentedKeyMustStillBeKnown) {
  // An unknown key is never downgraded to the anonymous caller, whatever it looks like.
  for (std::string_view k : {"sk-whatever", "not-even-sk", "Bearer", "sk-master-key-1234"}) {
    auto unknown = authenticate(*index(), k, "", kNow);
    ASSERT_FALSE(unknown.has_value()) << k;
    EXPECT_EQ(unknown.error().status, 401);
    EXPECT_EQ(unknown.error().code, "invalid_api_key");
    EXPECT_EQ(unknown.error().message, "Authentication Error, Invalid proxy server token passed");
  }
  // A known key is resolved (its budgets apply), and a blocked or expired one still refused.
  auto good = authenticate(*index(), "sk-good", "", kNow);
  ASSERT_TRUE(good.has_value());
  EXPECT_NE((*good)->key, nullptr);
  EXPECT_FALSE((*good)->anonymous());
  EXPECT_FALSE(authenticate(*index(), "sk-blocked", "", kNow).has_value());
  EXPECT_FALSE(authenticate(*index(), "sk-expired", "", kNow).has_value());
  // An empty index: every presented key is unknown.
  EXPECT_FALSE(authenticate(*IdentityIndex::empty(), "sk-good", "", kNow).has_value());
}

TEST(Authenticate, MasterAndKeyPrincipalsAreNotAnonymous) {
  auto m = authenticate(*index(), kMaster, kMaster, kNow);
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE((*m)->anonymous());
}

TEST(Authenticate, EmptyIndexRejectsEverythingButMaster) {
  auto idx = IdentityIndex::empty();
  EXPECT_FALSE(authenticate(*idx, "sk-good", kMaster, kNow).has_value());
  EXPECT_TRUE(authenticate(*idx, kMaster, kMaster, kNow).has_value());
}

TEST(WithRequest, FillsEndUserCustomerAndMergesTags) {
  auto idx = index();
  auto p = authenticate(*idx, "sk-team", kMaster, kNow);
  ASSERT_TRUE(p.has_value());
  auto r = with_request(*p, *idx, "cust-ok", {"req-tag", "k-tag", ""});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)->end_user, "cust-ok");
  ASSERT_NE((*r)->customer, nullptr);
  EXPECT_EQ((*r)->tags, (std::vector<std::string>{"k-tag", "req-tag"}));
  EXPECT_NE((*r)->key, nullptr);
  // The original principal is untouched (shared, immutable).
  EXPECT_TRUE((*p)->end_user.empty());
  auto unknown = with_request(*p, *idx, "someone", {});
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ((*unknown)->customer, nullptr);
}

TEST(WithRequest, BlockedCustomerIs403) {
  auto idx = index();
  auto p = authenticate(*idx, "sk-good", kMaster, kNow);
  auto r = with_request(*p, *idx, "cust-blocked", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().status, 403);
  EXPECT_EQ(r.error().param, "user");
}

TEST(WithRequest, TagBudgetsAreTheTagsThatHaveARecordInTagOrder) {
  store::IdentitySnapshot snap;
  snap.keys.push_back(key("sk-tagged"));
  snap.keys.back().tags = {"k-tag", "plain"};
  snap.tags.push_back({.name = "req-tag", .max_budget_nanos = 5});
  snap.tags.push_back({.name = "k-tag", .description = "d"});
  auto idx = IdentityIndex::build(std::move(snap));
  ASSERT_NE(idx->tag("k-tag"), nullptr);
  EXPECT_EQ(idx->tag("nope"), nullptr);
  EXPECT_EQ(idx->tag(""), nullptr);
  auto p = authenticate(*idx, "sk-tagged", kMaster, kNow);
  ASSERT_TRUE(p.has_value());
  auto r = with_request(*p, *idx, "", {"req-tag", "unknown"});
  ASSERT_TRUE(r.has_value());
  // The key may charge its own tags only: req-tag's budget is another tenant's.
  ASSERT_EQ((*r)->tag_budgets.size(), 1u);
  EXPECT_EQ((*r)->tag_budgets[0]->name, "k-tag");
  EXPECT_EQ((*r)->uncharged_tags, std::vector<std::string>{"req-tag"});
  EXPECT_EQ((*r)->tags, (std::vector<std::string>{"k-tag", "plain", "req-tag", "unknown"})) << "still routed and logged";
  // The master key (no key tags) gets the request's tags' budgets too.
  auto m = authenticate(*idx, kMaster, kMaster, kNow);
  ASSERT_TRUE(m.has_value());
  auto mr = with_request(*m, *idx, "", {"req-tag"});
  ASSERT_TRUE(mr.has_value());
  ASSERT_EQ((*mr)->tag_budgets.size(), 1u);
  EXPECT_EQ((*mr)->tag_budgets[0]->name, "req-tag");
}

TEST(WithRequest, AllowedTagsInTheKeysOrTeamsMetadataMayBeCharged) {
  store::IdentitySnapshot snap;
  snap.keys.push_back(key("sk-allowed"));
  snap.keys.back().metadata = R"({"allowed_tags":["req-tag"]})";
  snap.keys.push_back(key("sk-member"));
  snap.keys.back().team_id = "t-star";
  snap.keys.push_back(key("sk-litellm-tags"));
  snap.keys.back().metadata = R"({"tags":["other"]})";
  snap.keys.push_back(key("sk-bad-metadata"));
  snap.keys.back().metadata = R"({"allowed_tags":"req-tag"})";
  store::TeamRecord team;
  team.team_id = "t-star";
  team.metadata = R"({"allowed_tags":["*"]})";
  snap.teams.push_back(team);
  snap.tags.push_back({.name = "req-tag", .max_budget_nanos = 5});
  snap.tags.push_back({.name = "other", .max_budget_nanos = 5});
  auto idx = IdentityIndex::build(std::move(snap));
  auto charged = [&](const char* secret) {
    auto p = authenticate(*idx, secret, kMaster, kNow);
    EXPECT_TRUE(p.has_value()) << secret;
    auto r = with_request(*p, *idx, "", {"req-tag", "other"});
    EXPECT_TRUE(r.has_value());
    std::vector<std::string> names;
    for (const auto& t : (*r)->tag_budgets) names.push_back(t->name);
    return names;
  };
  EXPECT_EQ(charged("sk-allowed"), std::vector<std::string>{"req-tag"});
  EXPECT_EQ(charged("sk-member"), (std::vector<std::string>{"req-tag", "other"})) << "the team allows every tag";
  EXPECT_EQ(charged("sk-litellm-tags"), std::vector<std::string>{"other"}) << "LiteLLM's metadata.tags";
  EXPECT_TRUE(charged("sk-bad-metadata").empty()) << "allowed_tags must be a list";
}

TEST(Identities, InstallSwapsIndex) {
  Identities ids;
  EXPECT_EQ(ids.current()->key_count(), 0u);
  ids.install(index());
  EXPECT_EQ(ids.current()->key_count(), 6u);
  EXPECT_EQ(ids.current()->generation(), 7);
}

TEST(Keys, GenerateHashMask) {
  auto a = generate_key();
  auto b = generate_key();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->starts_with("sk-"));
  EXPECT_EQ(a->size(), 3u + 43u);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(is_token_hash(sha256_hex(*a)));
  EXPECT_FALSE(is_token_hash(*a));
  EXPECT_EQ(mask_key("sk-abcdefgh"), "sk-...efgh");
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(iso8601_utc(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
}

}  // namespace
}  // namespace tollgate::auth
