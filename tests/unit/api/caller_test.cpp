// anonymous_budget_refusal: the anonymous caller (no master key, no key presented) is served only
// while no budget applies to its request.
#include "api/caller.hpp"

#include <gtest/gtest.h>

#include "config/loader.hpp"

namespace tollgate::api {
namespace {

/// A config with one group `g` and `settings` as its litellm_settings block (YAML lines).
std::shared_ptr<const config::Config> load(const std::string& settings = {}) {
  std::string yaml = R"(
model_list:
  - model_name: g
    litellm_params: {model: openai/g, api_base: "http://127.0.0.1:1/v1", input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
)";
  if (!settings.empty()) yaml += "litellm_settings:\n" + settings;
  auto r = config::load_config_string(
      yaml, "<test>", config::EnvLookup([](std::string_view) -> std::optional<std::string> { return std::nullopt; }));
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.config;
}

auth::Principal anonymous(std::string end_user = {}) {
  auth::Principal p;
  p.end_user = std::move(end_user);
  return p;
}

std::string refusal_message(const std::string& kind) {
  return "Authentication Error, No api key passed in. A budget applies to this request (" + kind +
         "): present a virtual key.";
}

TEST(AnonymousBudgetRefusal, NoBudgetAnywhereIsServed) {
  const auto cfg_owner = load();
  const auto& cfg = *cfg_owner;
  EXPECT_FALSE(anonymous_budget_refusal(anonymous(), "g", cfg).has_value());
  // An end user without a budget is tracked, never refused.
  EXPECT_FALSE(anonymous_budget_refusal(anonymous("cust-1"), "g", cfg).has_value());
  // A tag record without a budget is tracked too.
  auto p = anonymous();
  p.tags = {"t"};
  p.tag_budgets.push_back(std::make_shared<const store::TagRecord>(store::TagRecord{.name = "t"}));
  EXPECT_FALSE(anonymous_budget_refusal(p, "g", cfg).has_value());
}

TEST(AnonymousBudgetRefusal, GlobalBudgetRefusesWith401) {
  const auto cfg_owner = load("  max_budget: 10\n");
  const auto& cfg = *cfg_owner;
  auto e = anonymous_budget_refusal(anonymous(), "g", cfg);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 401);
  EXPECT_EQ(e->code, "invalid_api_key");
  EXPECT_EQ(e->message, refusal_message("global"));
}

TEST(AnonymousBudgetRefusal, EndUserBudgetOnlyWhenTheRequestNamesOne) {
  const auto cfg_owner = load("  max_end_user_budget: 1\n");
  const auto& cfg = *cfg_owner;
  EXPECT_FALSE(anonymous_budget_refusal(anonymous(), "g", cfg).has_value());
  auto e = anonymous_budget_refusal(anonymous("cust-1"), "g", cfg);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->message, refusal_message("end_user"));
  // A customer record with its own budget, no config default.
  const auto plain_owner = load();
  const auto& plain = *plain_owner;
  auto p = anonymous("cust-2");
  p.customer =
      std::make_shared<const store::CustomerRecord>(store::CustomerRecord{.user_id = "cust-2", .max_budget_nanos = 5});
  auto c = anonymous_budget_refusal(p, "g", plain);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->message, refusal_message("end_user"));
}

TEST(AnonymousBudgetRefusal, TagBudgetOfARequestTag) {
  const auto cfg_owner = load();
  const auto& cfg = *cfg_owner;
  auto p = anonymous();
  p.tags = {"paid"};
  p.tag_budgets.push_back(
      std::make_shared<const store::TagRecord>(store::TagRecord{.name = "paid", .max_budget_nanos = 1'000'000'000}));
  auto e = anonymous_budget_refusal(p, "g", cfg);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->message, refusal_message("tag"));
  // A zero budget is a real limit too.
  auto z = anonymous();
  z.tag_budgets.push_back(
      std::make_shared<const store::TagRecord>(store::TagRecord{.name = "z", .max_budget_nanos = 0}));
  EXPECT_TRUE(anonymous_budget_refusal(z, "g", cfg).has_value());
}

TEST(AnonymousBudgetRefusal, KeysAndTheMasterKeyAreNotAnonymous) {
  const auto cfg_owner = load("  max_budget: 10\n");
  const auto& cfg = *cfg_owner;
  auth::Principal master;
  master.is_master = true;
  EXPECT_FALSE(anonymous_budget_refusal(master, "g", cfg).has_value());
  auth::Principal keyed;
  keyed.key = std::make_shared<const store::KeyRecord>();
  EXPECT_FALSE(anonymous_budget_refusal(keyed, "g", cfg).has_value());
}

}  // namespace
}  // namespace tollgate::api
