// may_call / model_access_error: wildcards, access groups, team restriction.
#include "auth/access.hpp"

#include <gtest/gtest.h>

namespace tollgate::auth {
namespace {

config::Config cfg() {
  config::Config c;
  config::Deployment a;
  a.model_name = "gpt-4o";
  a.access_groups = {"beta-models"};
  config::Deployment b;
  b.model_name = "gpt-4o-mini";
  config::Deployment c2;
  c2.model_name = "claude";
  c2.access_groups = {"anthropic", "beta-models"};
  c.model_list = {a, b, c2};
  return c;
}

Principal with_key(std::vector<std::string> models) {
  auto k = std::make_shared<store::KeyRecord>();
  k->models = std::move(models);
  Principal p;
  p.key = k;
  return p;
}

TEST(ModelsAllow, EmptyAndWildcardsAllowAll) {
  const auto c = cfg();
  EXPECT_TRUE(models_allow({}, "gpt-4o", c));
  EXPECT_TRUE(models_allow({"*"}, "anything", c));
  EXPECT_TRUE(models_allow({"all-proxy-models"}, "claude", c));
}

TEST(ModelsAllow, ExactAndAccessGroups) {
  const auto c = cfg();
  EXPECT_TRUE(models_allow({"gpt-4o-mini"}, "gpt-4o-mini", c));
  EXPECT_FALSE(models_allow({"gpt-4o-mini"}, "gpt-4o", c));
  EXPECT_TRUE(models_allow({"beta-models"}, "gpt-4o", c));
  EXPECT_TRUE(models_allow({"beta-models"}, "claude", c));
  EXPECT_FALSE(models_allow({"beta-models"}, "gpt-4o-mini", c));
  EXPECT_FALSE(models_allow({"anthropic"}, "gpt-4o", c));
  // An access group name is not a model group of its own.
  EXPECT_FALSE(models_allow({"gpt-4o"}, "beta-models", c));
}

TEST(MayCall, MasterAndKeylessMayCallEverything) {
  const auto c = cfg();
  Principal master;
  master.is_master = true;
  EXPECT_TRUE(may_call(master, "gpt-4o", c));
  EXPECT_TRUE(may_call(Principal{}, "claude", c));
}

TEST(MayCall, KeyModelsRestrict) {
  const auto c = cfg();
  auto p = with_key({"gpt-4o-mini"});
  EXPECT_TRUE(may_call(p, "gpt-4o-mini", c));
  EXPECT_FALSE(may_call(p, "gpt-4o", c));
  auto e = model_access_error(p, "gpt-4o", c);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 401);
  EXPECT_EQ(e->type, "key_model_access_denied");
  EXPECT_EQ(e->param, "model");
  EXPECT_EQ(e->message,
            "key not allowed to access model. This key can only access models=['gpt-4o-mini']. Tried to access gpt-4o");
}

TEST(MayCall, TeamModelsRestrictTeamKeys) {
  const auto c = cfg();
  auto p = with_key({});
  auto t = std::make_shared<store::TeamRecord>();
  t->team_id = "t1";
  t->models = {"anthropic"};
  p.team = t;
  EXPECT_TRUE(may_call(p, "claude", c));
  EXPECT_FALSE(may_call(p, "gpt-4o-mini", c));
  auto e = model_access_error(p, "gpt-4o-mini", c);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("team not allowed to access model"), std::string::npos);
  // Both lists must admit the group.
  auto p2 = with_key({"gpt-4o"});
  p2.team = t;
  EXPECT_FALSE(may_call(p2, "claude", c));
  EXPECT_FALSE(may_call(p2, "gpt-4o", c));
  // A team without models does not restrict.
  auto open_team = std::make_shared<store::TeamRecord>();
  p2.team = open_team;
  EXPECT_TRUE(may_call(p2, "gpt-4o", c));
}

}  // namespace
}  // namespace tollgate::auth
