#include "routing/constraints.hpp"

#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "routing/router.hpp"

using namespace tollgate;

namespace {

std::shared_ptr<const config::Config> load(const std::string& yaml, std::vector<config::Problem>* warnings = nullptr) {
  auto r = config::load_config_string(yaml, "<test>", config::EnvLookup([](std::string_view) -> std::optional<std::string> {
                                        return std::nullopt;
                                      }));
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  if (warnings) *warnings = r.warnings;
  return r.config;
}

const char* kTagged = R"(
model_list:
  - model_name: g
    litellm_params: {model: openai/eu-a, api_base: "http://127.0.0.1:1/v1", region_name: eu, tags: [free]}
  - model_name: g
    litellm_params: {model: openai/us-b, api_base: "http://127.0.0.1:1/v1", region_name: US, tags: [paid]}
  - model_name: g
    litellm_params: {model: openai/c, api_base: "http://127.0.0.1:1/v1", tags: [default, paid]}
router_settings:
  enable_tag_filtering: true
)";

std::vector<std::size_t> all(const config::Config& cfg) {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < cfg.model_list.size(); ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST(RouteConstraints, LoadsRegionTagsAndFiltering) {
  auto cfg = load(kTagged);
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->model_list[0].region_name, "eu");
  EXPECT_EQ(cfg->model_list[2].tags, (std::vector<std::string>{"default", "paid"}));
  EXPECT_TRUE(cfg->router_settings.enable_tag_filtering);
  EXPECT_TRUE(cfg->router_settings.tag_filtering_match_any);
}

TEST(RouteConstraints, NoConstraintKeepsEveryDeployment) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, all(*cfg));
}

TEST(RouteConstraints, RegionKeepsOnlyThatRegionCaseInsensitively) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  c.regions = {{"us", "end_user"}};
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{1}));
  c.regions = {{"EU", "key"}};
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{0}));
}

TEST(RouteConstraints, TwoDifferentRegionsLeaveNothingAndSayWhy) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  c.regions = {{"eu", "key"}, {"us", "team"}};
  auto e = routing::eligible_deployments(*cfg, all(*cfg), c, "g");
  EXPECT_TRUE(e.members.empty());
  EXPECT_EQ(e.boundary, "region");
  EXPECT_NE(e.why.find("key allows region 'eu'"), std::string::npos) << e.why;
  EXPECT_NE(e.why.find("team allows region 'us'"), std::string::npos) << e.why;
}

TEST(RouteConstraints, DeploymentWithoutRegionMeetsNoRegionRule) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  c.regions = {{"ap", "end_user"}};
  auto e = routing::eligible_deployments(*cfg, all(*cfg), c, "g");
  EXPECT_TRUE(e.members.empty());
  EXPECT_EQ(e.boundary, "region");
}

TEST(RouteConstraints, TagsMatchAnyThenDefaultThenNothing) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  c.tag_filtering = true;
  c.tags = {"paid"};
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{1, 2}));
  c.tags = {"free", "other"};
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{0}));
  c.tags = {"unknown"};  // no match: the default-tagged deployment serves
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{2}));
  c.tags = {};  // untagged request: default-tagged deployments only
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{2}));
  // Without a default deployment, an unmatched request has nowhere to go.
  auto e = routing::eligible_deployments(*cfg, {0, 1}, c = {.tag_filtering = true, .tags = {"unknown"}}, "g");
  EXPECT_TRUE(e.members.empty());
  EXPECT_EQ(e.boundary, "tag");
  EXPECT_NE(e.why.find("[unknown]"), std::string::npos) << e.why;
  // An untagged request on a group with no default: every deployment.
  c.tags = {};
  EXPECT_EQ(routing::eligible_deployments(*cfg, {0, 1}, c, "g").members, (std::vector<std::size_t>{0, 1}));
}

TEST(RouteConstraints, TagsMatchAllWhenMatchAnyIsOff) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  c.tag_filtering = true;
  c.match_any = false;
  c.tags = {"default", "paid"};
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{2}));
  c.tags = {"free", "paid"};  // nobody has both: the default deployment
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{2}));
}

TEST(RouteConstraints, RegionAppliesBeforeTags) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  c.regions = {{"eu", "key"}};
  c.tag_filtering = true;
  c.tags = {"paid"};  // the paid deployments are not in the EU, and the EU one is not default
  auto e = routing::eligible_deployments(*cfg, all(*cfg), c, "g");
  EXPECT_TRUE(e.members.empty());
  EXPECT_EQ(e.boundary, "tag");
}

TEST(RouteConstraints, KeyTagsAreAHardBoundaryRequestTagsCannotWiden) {
  auto cfg = load(kTagged);
  routing::RouteConstraints c;
  c.tag_filtering = true;
  c.key_tags = {"free"};
  c.tags = {"free", "paid"};  // the request adds a tag the key was not given
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{0}));
  c.tags = {"free", "nobody"};
  EXPECT_EQ(routing::eligible_deployments(*cfg, all(*cfg), c, "g").members, (std::vector<std::size_t>{0}));
  // No deployment with the key's tag: nothing, not the `default` deployment.
  auto e = routing::eligible_deployments(*cfg, {1, 2}, c, "g");
  EXPECT_TRUE(e.members.empty());
  EXPECT_EQ(e.boundary, "tag");
  EXPECT_NE(e.why.find("the key's tags [free]"), std::string::npos) << e.why;
}

TEST(RouteConstraints, SelectChoosesOnlyEligibleDeployments) {
  auto cfg = load(kTagged);
  core::ManualClock clock;
  routing::RouterState rs(cfg, clock);
  const std::vector<std::size_t> only{1};
  for (double r : {0.0, 0.3, 0.6, 0.99}) EXPECT_EQ(rs.select("g", {}, r, &only), 1u);
  const std::vector<std::size_t> none;
  EXPECT_FALSE(rs.select("g", {}, 0.5, &none).has_value());
}

TEST(ModelGroupAlias, ResolvesBeforeGroupsAndListsHidden) {
  std::vector<config::Problem> warnings;
  auto cfg = load(R"(
model_list:
  - model_name: big
    litellm_params: {model: openai/big, api_base: "http://127.0.0.1:1/v1"}
  - model_name: small
    litellm_params: {model: openai/small, api_base: "http://127.0.0.1:1/v1"}
router_settings:
  model_group_alias:
    gpt-4: big
    small: {model: big, hidden: true}
)",
                  &warnings);
  ASSERT_TRUE(cfg);
  ASSERT_EQ(cfg->router_settings.model_group_alias.size(), 2u);
  EXPECT_TRUE(cfg->router_settings.model_group_alias[1].hidden);
  routing::ModelGroups g(*cfg);
  EXPECT_EQ(g.resolve_alias("gpt-4"), "big");
  EXPECT_EQ(g.resolve_alias("small"), "big");  // the alias wins over the group of the same name
  EXPECT_EQ(g.resolve_alias("big"), "big");
  EXPECT_EQ(g.find("gpt-4"), g.find("big"));
  EXPECT_EQ(g.canonical("gpt-4"), "big");
  bool shadow_warned = false;
  for (const auto& w : warnings)
    if (w.path == "router_settings.model_group_alias.small" && w.message.find("shadows") != std::string::npos)
      shadow_warned = true;
  EXPECT_TRUE(shadow_warned);
}

TEST(ModelGroupAlias, AnAliasOfAnAliasIsAnError) {
  auto r = config::load_config_string(R"(
model_list:
  - model_name: premium
    litellm_params: {model: openai/p, api_base: "http://127.0.0.1:1/v1"}
  - model_name: mid
    litellm_params: {model: openai/m, api_base: "http://127.0.0.1:1/v1"}
router_settings:
  model_group_alias: {fast: mid, mid: premium}
)",
                                      "<test>");
  EXPECT_FALSE(r.config);
  bool found = false;
  for (const auto& e : r.errors)
    found |= e.path == "router_settings.model_group_alias.fast" && e.message.find("do not chain") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(ModelGroupAlias, BadAliasesAreErrorsAtTheirPath) {
  auto r = config::load_config_string(R"(
model_list:
  - model_name: big
    litellm_params: {model: openai/big, api_base: "http://127.0.0.1:1/v1"}
router_settings:
  model_group_alias:
    a: nowhere
    b: {model: [x]}
    c: {model: big, colour: red}
)",
                                      "<test>");
  std::vector<std::string> errs;
  for (const auto& e : r.errors) errs.push_back(e.to_string());
  auto has = [&](std::string_view s) {
    return std::any_of(errs.begin(), errs.end(), [&](const std::string& e) { return e.find(s) != std::string::npos; });
  };
  EXPECT_TRUE(has("router_settings.model_group_alias.a")) << ::testing::PrintToString(errs);
  EXPECT_TRUE(has("\"nowhere\" is not in model_list"));
  EXPECT_TRUE(has("router_settings.model_group_alias.b.model"));
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.path == "router_settings.model_group_alias.c.colour";
  EXPECT_TRUE(warned);
}
