#include "policy/request_budget.hpp"

#include <gtest/gtest.h>

#include "policy/group_policy.hpp"

using namespace tollgate;
using policy::BudgetOverride;
using policy::RequestBudget;
using std::chrono::milliseconds;

namespace {

config::Config base_config() {
  config::Config cfg;
  cfg.effective_num_retries = 3;
  cfg.router_settings.max_fallbacks = 4;
  cfg.effective_timeout = milliseconds{90000};
  return cfg;
}

config::GroupPolicyConfig group(std::string name) {
  config::GroupPolicyConfig g;
  g.group = std::move(name);
  g.path = "fallback_policy.model_groups." + g.group;
  return g;
}

}  // namespace

TEST(RequestBudget, RouterSettingsWithoutPolicy) {
  const auto cfg = base_config();
  const RequestBudget b = policy::configured_budget(cfg, "gpt-4o");
  EXPECT_EQ(b.max_retries, 3);
  EXPECT_EQ(b.max_fallbacks, 4);
  EXPECT_EQ(b.deadline, milliseconds{90000});
  EXPECT_EQ(b.min_time_left, milliseconds{0});
  EXPECT_EQ(b.max_request_cost, budget::kMaxNanos);
}

TEST(RequestBudget, GroupOverDefaultsOverRouter) {
  auto cfg = base_config();
  auto& d = cfg.fallback_policy.defaults.budgets;
  d.max_retries = 1;
  d.deadline = milliseconds{30000};
  d.min_time_left = milliseconds{200};
  d.max_request_cost = "0.50";
  auto g = group("gpt-4o");
  g.budgets.max_retries = 0;
  g.budgets.max_request_cost = "0.05";
  g.budgets.max_fallbacks = 1;
  cfg.fallback_policy.model_groups.push_back(g);

  const RequestBudget gb = policy::configured_budget(cfg, "gpt-4o");
  EXPECT_EQ(gb.max_retries, 0);                      // group
  EXPECT_EQ(gb.max_fallbacks, 1);                    // group
  EXPECT_EQ(gb.deadline, milliseconds{30000});       // defaults
  EXPECT_EQ(gb.min_time_left, milliseconds{200});    // defaults
  EXPECT_EQ(gb.max_request_cost, 50'000'000);        // group, $0.05

  const RequestBudget other = policy::configured_budget(cfg, "claude");
  EXPECT_EQ(other.max_retries, 1);
  EXPECT_EQ(other.max_fallbacks, 4);                 // router
  EXPECT_EQ(other.max_request_cost, 500'000'000);    // defaults, $0.50

  const RequestBudget none = policy::configured_budget(cfg, "");
  EXPECT_EQ(none.max_retries, 1);
}

TEST(RequestBudget, UnparsableCostIsIgnored) {
  auto cfg = base_config();
  cfg.fallback_policy.defaults.budgets.max_request_cost = "0.25";
  auto g = group("g");
  g.budgets.max_request_cost = "cheap";
  cfg.fallback_policy.model_groups.push_back(g);
  EXPECT_EQ(policy::configured_budget(cfg, "g").max_request_cost, 250'000'000);
}

TEST(RequestBudget, TightenKeepsTheSmaller) {
  RequestBudget b;
  b.max_retries = 2;
  b.max_fallbacks = 3;
  b.deadline = milliseconds{10000};
  b.max_request_cost = 500'000'000;
  BudgetOverride o;
  o.max_retries = 1;
  o.max_fallbacks = 3;  // equal: kept, not reported
  o.deadline = milliseconds{2500};
  o.max_request_cost = 100'000'000;
  std::vector<std::string> ignored;
  const RequestBudget t = policy::tighten(b, o, &ignored);
  EXPECT_EQ(t.max_retries, 1);
  EXPECT_EQ(t.max_fallbacks, 3);
  EXPECT_EQ(t.deadline, milliseconds{2500});
  EXPECT_EQ(t.max_request_cost, 100'000'000);
  EXPECT_TRUE(ignored.empty());
}

TEST(RequestBudget, TightenIgnoresLooserValuesAndSaysSo) {
  RequestBudget b;
  b.max_retries = 2;
  b.max_fallbacks = 1;
  b.deadline = milliseconds{10000};
  b.max_request_cost = 500'000'000;
  BudgetOverride o;
  o.max_retries = 5;
  o.max_fallbacks = 9;
  o.deadline = milliseconds{60000};
  o.max_request_cost = 1'500'000'000;
  std::vector<std::string> ignored;
  const RequestBudget t = policy::tighten(b, o, &ignored);
  EXPECT_EQ(t.max_retries, 2);
  EXPECT_EQ(t.max_fallbacks, 1);
  EXPECT_EQ(t.deadline, milliseconds{10000});
  EXPECT_EQ(t.max_request_cost, 500'000'000);
  ASSERT_EQ(ignored.size(), 4u);
  EXPECT_EQ(ignored[0], "x-tollgate-max-retries: 5 > 2");
  EXPECT_EQ(ignored[1], "x-tollgate-max-fallbacks: 9 > 1");
  EXPECT_EQ(ignored[2], "x-tollgate-deadline-ms: 60000 > 10000");
  EXPECT_EQ(ignored[3], "x-tollgate-max-request-cost: 1.5 > 0.5");
  // Without a sink it still only tightens.
  EXPECT_EQ(policy::tighten(b, o).max_retries, 2);
}

TEST(RequestBudget, TightenAnyCostWhenUnlimited) {
  RequestBudget b;  // max_request_cost = kMaxNanos
  BudgetOverride o;
  o.max_request_cost = 1;
  EXPECT_EQ(policy::tighten(b, o).max_request_cost, 1);
  BudgetOverride empty;
  EXPECT_EQ(policy::tighten(b, empty).max_request_cost, budget::kMaxNanos);
}

TEST(RequestBudget, ParseOverrideFields) {
  BudgetOverride o;
  EXPECT_EQ(policy::parse_override_field(policy::kHeaderMaxRetries, "0", o), std::nullopt);
  EXPECT_EQ(policy::parse_override_field(policy::kHeaderMaxFallbacks, " 3 ", o), std::nullopt);
  EXPECT_EQ(policy::parse_override_field(policy::kHeaderDeadlineMs, "2500", o), std::nullopt);
  EXPECT_EQ(policy::parse_override_field(policy::kHeaderMaxRequestCost, "0.25", o), std::nullopt);
  EXPECT_EQ(o.max_retries, 0);
  EXPECT_EQ(o.max_fallbacks, 3);
  EXPECT_EQ(o.deadline, milliseconds{2500});
  EXPECT_EQ(o.max_request_cost, 250'000'000);
  // Header names are case-insensitive; key metadata may use the field names.
  BudgetOverride k;
  EXPECT_EQ(policy::parse_override_field("X-Tollgate-Max-Retries", "1", k), std::nullopt);
  EXPECT_EQ(policy::parse_override_field("deadline_ms", "100", k), std::nullopt);
  EXPECT_EQ(policy::parse_override_field("max_request_cost", "1e-3", k), std::nullopt);
  EXPECT_EQ(k.max_retries, 1);
  EXPECT_EQ(k.deadline, milliseconds{100});
  EXPECT_EQ(k.max_request_cost, 1'000'000);
}

TEST(RequestBudget, ParseOverrideErrorsNameTheField) {
  struct Case {
    const char* name;
    const char* value;
  };
  const Case bad[] = {
      {policy::kHeaderMaxRetries, "-1"},     {policy::kHeaderMaxRetries, "+1"},
      {policy::kHeaderMaxRetries, "1.5"},    {policy::kHeaderMaxRetries, "1e3"},
      {policy::kHeaderMaxRetries, ""},       {policy::kHeaderMaxRetries, "two"},
      {policy::kHeaderMaxRetries, "99999999999"},
      {policy::kHeaderMaxFallbacks, "0x1"},  {policy::kHeaderDeadlineMs, "0"},
      {policy::kHeaderDeadlineMs, "-5"},     {policy::kHeaderDeadlineMs, "10s"},
      {policy::kHeaderMaxRequestCost, "-1"}, {policy::kHeaderMaxRequestCost, "$1"},
      {policy::kHeaderMaxRequestCost, ""},
  };
  for (const Case& c : bad) {
    BudgetOverride o;
    auto err = policy::parse_override_field(c.name, c.value, o);
    ASSERT_TRUE(err) << c.name << ": " << c.value;
    EXPECT_NE(err->find(c.name), std::string::npos) << *err;
    EXPECT_FALSE(o.max_retries || o.max_fallbacks || o.deadline || o.max_request_cost) << c.name << ": " << c.value;
  }
  BudgetOverride o;
  auto err = policy::parse_override_field("x-tollgate-max-tokens", "5", o);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("x-tollgate-max-tokens"), std::string::npos);
}

TEST(PolicySet, LayersDefaultsUnderGroups) {
  auto cfg = base_config();
  auto& fp = cfg.fallback_policy;
  config::ClassRuleConfig cap;
  cap.cls = config::FailureClass::retryable_capacity;
  cap.action = config::PolicyAction::fallback;
  fp.defaults.classes.push_back(cap);
  fp.defaults.budgets.max_retries = 1;
  fp.defaults.degradation = config::DegradationConfig{config::DegradationMode::reduced, "small", 256, "short answer", {}};

  auto g = group("gpt-4o");
  config::ClassRuleConfig fast;
  fast.cls = config::FailureClass::caller_fix_required;
  fast.status = std::vector<int>{400, 404, 413, 422, 503};
  g.classes.push_back(fast);
  g.budgets.deadline = milliseconds{5000};
  g.degradation = config::DegradationConfig{config::DegradationMode::stale_cache, "", {}, "", milliseconds{60000}};
  fp.model_groups.push_back(g);
  fp.model_groups.push_back(group("plain"));

  const policy::PolicySet ps(cfg);
  const auto& gp = ps.for_group("gpt-4o");
  EXPECT_EQ(gp.classes.classify(policy::Outcome{503, {}, {}, {}, {}}), config::FailureClass::caller_fix_required);
  EXPECT_EQ(gp.classes.action(config::FailureClass::retryable_capacity), config::PolicyAction::fallback);
  EXPECT_EQ(gp.budget.max_retries, 1);
  EXPECT_EQ(gp.budget.deadline, milliseconds{5000});
  EXPECT_EQ(gp.degradation.mode, config::DegradationMode::stale_cache);
  EXPECT_EQ(gp.degradation.max_age, milliseconds{60000});

  const auto& plain = ps.for_group("plain");
  EXPECT_EQ(plain.degradation.mode, config::DegradationMode::reduced);
  EXPECT_EQ(plain.degradation.model, "small");
  EXPECT_EQ(plain.classes.classify(policy::Outcome{503, {}, {}, {}, {}}), config::FailureClass::retryable_capacity);
  EXPECT_EQ(plain.budget.deadline, milliseconds{90000});

  const auto& unknown = ps.for_group("not-configured");
  EXPECT_EQ(unknown.degradation.mode, config::DegradationMode::reduced);
  EXPECT_EQ(unknown.budget.max_retries, 1);
  EXPECT_EQ(unknown.classes.action(config::FailureClass::retryable_capacity), config::PolicyAction::fallback);
}

TEST(PolicySet, NoPolicyMeansDefaultTableAndNoDegradation) {
  const auto cfg = base_config();
  const policy::PolicySet ps(cfg);
  const auto& p = ps.for_group("anything");
  EXPECT_EQ(p.degradation.mode, config::DegradationMode::none);
  EXPECT_EQ(p.classes.action(config::FailureClass::commercial_limit), config::PolicyAction::stop_and_alert);
  EXPECT_EQ(p.budget.max_retries, 3);
}

TEST(RequestBudget, StreamLimitsFromThePolicyAndTightenedOnly) {
  auto cfg = base_config();
  cfg.fallback_policy.defaults.budgets.stream_idle_timeout = milliseconds{5000};
  auto g = group("gpt-4o");
  g.budgets.first_token_timeout = milliseconds{3000};
  cfg.fallback_policy.model_groups.push_back(g);
  RequestBudget b = policy::configured_budget(cfg, "gpt-4o");
  EXPECT_EQ(b.first_token_timeout, milliseconds{3000});
  EXPECT_EQ(b.stream_idle_timeout, milliseconds{5000});
  EXPECT_FALSE(policy::configured_budget(base_config(), "gpt-4o").first_token_timeout);  // none by default

  BudgetOverride o;
  ASSERT_FALSE(policy::parse_override_field("X-Tollgate-First-Token-Timeout-Ms", " 1500 ", o));
  ASSERT_FALSE(policy::parse_override_field("stream_idle_timeout_ms", "9000", o));
  std::vector<std::string> ignored;
  const RequestBudget t = policy::tighten(b, o, &ignored);
  EXPECT_EQ(t.first_token_timeout, milliseconds{1500});  // tighter: taken
  EXPECT_EQ(t.stream_idle_timeout, milliseconds{5000});  // looser: ignored and said
  ASSERT_EQ(ignored.size(), 1u);
  EXPECT_EQ(ignored[0], "x-tollgate-stream-idle-timeout-ms: 9000 > 5000");

  // A limit the group does not set is set by the override (no limit is the loosest).
  BudgetOverride only;
  only.stream_idle_timeout = milliseconds{700};
  EXPECT_EQ(policy::tighten(RequestBudget{}, only).stream_idle_timeout, milliseconds{700});

  for (const char* bad : {"0", "-1", "soon", "1.5", ""}) {
    BudgetOverride x;
    auto err = policy::parse_override_field(policy::kHeaderFirstTokenTimeoutMs, bad, x);
    ASSERT_TRUE(err) << bad;
    EXPECT_NE(err->find("x-tollgate-first-token-timeout-ms"), std::string::npos) << *err;
  }
  BudgetOverride k;
  EXPECT_TRUE(policy::read_key_budget(R"({"tollgate_request_budget":{"first_token_timeout_ms":"250"}})", k).empty());
  EXPECT_EQ(k.first_token_timeout, milliseconds{250});
}

TEST(RequestBudget, StreamHoldbackMayOnlyBeRaised) {
  BudgetOverride o;
  EXPECT_FALSE(policy::parse_override_field(policy::kHeaderStreamHoldback, "all", o));
  EXPECT_EQ(o.stream_holdback, policy::kHoldWholeAnswer);
  EXPECT_TRUE(policy::parse_override_field(policy::kHeaderStreamHoldback, "-3", o).has_value());
  EXPECT_TRUE(policy::parse_override_field(policy::kHeaderStreamHoldback, "lots", o).has_value());
  policy::RequestBudget group;
  group.stream_holdback = 10;
  BudgetOverride lower;
  ASSERT_FALSE(policy::parse_override_field(policy::kHeaderStreamHoldback, "4", lower));
  std::vector<std::string> ignored;
  EXPECT_EQ(policy::tighten(group, lower, &ignored).stream_holdback, 10);
  ASSERT_EQ(ignored.size(), 1u);
  EXPECT_NE(ignored[0].find("x-tollgate-stream-holdback: 4 < 10"), std::string::npos);
  BudgetOverride higher;
  ASSERT_FALSE(policy::parse_override_field("stream_holdback_tokens", "25", higher));
  EXPECT_EQ(policy::tighten(group, higher).stream_holdback, 25);
}
