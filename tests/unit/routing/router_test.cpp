#include "routing/router.hpp"

#include <gtest/gtest.h>

#include <map>

#include "config/loader.hpp"

using namespace tollgate;
using std::chrono::milliseconds;

namespace {

std::shared_ptr<const config::Config> load(const std::string& yaml) {
  auto r = config::load_config_string(yaml, "<test>", config::EnvLookup([](std::string_view) -> std::optional<std::string> {
                                        return std::nullopt;
                                      }));
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.config;
}

const char* kTwoDeployments = R"(
model_list:
  - model_name: g
    litellm_params: {model: openai/a, api_base: "http://127.0.0.1:1/v1"}
    model_info: {id: a}
  - model_name: g
    litellm_params: {model: openai/b, api_base: "http://127.0.0.1:1/v1"}
    model_info: {id: b}
  - model_name: h
    litellm_params: {model: openai/h, api_base: "http://127.0.0.1:1/v1"}
  - model_name: i
    litellm_params: {model: openai/i, api_base: "http://127.0.0.1:1/v1"}
  - model_name: j
    litellm_params: {model: openai/j, api_base: "http://127.0.0.1:1/v1"}
router_settings:
  allowed_fails: 1
  cooldown_time: 2
  routing_strategy: ROUTING
)";

std::string with_strategy(const std::string& s) {
  std::string y = kTwoDeployments;
  y.replace(y.find("ROUTING"), 7, s);
  return y;
}

}  // namespace

TEST(Router, SimpleShuffleSpreadsOverTheGroup) {
  auto cfg = load(with_strategy("simple-shuffle"));
  core::ManualClock clock;
  routing::RouterState r(cfg, clock);
  EXPECT_EQ(r.select("g", {}, 0.1), 0u);
  EXPECT_EQ(r.select("g", {}, 0.9), 1u);
  EXPECT_FALSE(r.select("nope", {}, 0.1));
}

TEST(Router, AvoidsDeploymentsAlreadyTriedUnlessNothingElseIsLeft) {
  auto cfg = load(with_strategy("simple-shuffle"));
  core::ManualClock clock;
  routing::RouterState r(cfg, clock);
  EXPECT_EQ(r.select("g", {0}, 0.1), 1u);
  EXPECT_EQ(r.select("g", {1}, 0.9), 0u);
  const auto again = r.select("g", {0, 1}, 0.1);
  ASSERT_TRUE(again);
  EXPECT_TRUE(*again == 0u || *again == 1u);
}

TEST(Router, SkipsDeploymentsWhoseCircuitIsOpenUntilHalfOpen) {
  auto cfg = load(with_strategy("simple-shuffle"));
  core::ManualClock clock;
  policy::Circuits circuits(policy::Circuits::setup_from(*cfg), clock);
  routing::RouterState r(cfg, clock, &circuits);
  // allowed_fails: 1 → the circuit opens on the second consecutive failure (LiteLLM's "more than").
  circuits.on_failure(0, policy::FailureClass::retryable_capacity);
  EXPECT_EQ(r.select("g", {}, 0.0), 0u) << "one failure is allowed";
  circuits.on_failure(0, policy::FailureClass::retryable_capacity);
  for (double x : {0.0, 0.3, 0.6, 0.99}) EXPECT_EQ(r.select("g", {}, x), 1u);
  clock.advance(milliseconds(1999));
  EXPECT_EQ(r.select("g", {}, 0.0), 1u);
  clock.advance(milliseconds(1));
  EXPECT_EQ(r.select("g", {}, 0.0), 0u) << "half-open: selectable for its probe";
}

TEST(Router, WholeGroupOpenHasNoDeployment) {
  auto cfg = load(with_strategy("simple-shuffle"));
  core::ManualClock clock;
  policy::Circuits circuits(policy::Circuits::setup_from(*cfg), clock);
  routing::RouterState r(cfg, clock, &circuits);
  circuits.open_deployment(0, "test");
  circuits.open_deployment(1, "test");
  EXPECT_FALSE(r.select("g", {}, 0.5));
}

TEST(Router, LeastBusyPicksFewestInFlight) {
  auto cfg = load(with_strategy("least-busy"));
  core::ManualClock clock;
  routing::RouterState r(cfg, clock);
  r.on_attempt_start(0);
  r.on_attempt_start(0);
  r.on_attempt_start(1);
  EXPECT_EQ(r.select("g", {}, 0.0), 1u);
  r.on_attempt_start(1);
  r.on_attempt_start(1);
  EXPECT_EQ(r.select("g", {}, 0.0), 0u);
}

TEST(Router, LatencyBasedPrefersTheFasterDeployment) {
  auto cfg = load(with_strategy("latency-based-routing"));
  core::ManualClock clock;
  routing::RouterState r(cfg, clock);
  r.on_attempt_start(0);
  r.on_attempt_end(0, false, milliseconds(300), 10);
  r.on_attempt_start(1);
  r.on_attempt_end(1, false, milliseconds(50), 10);
  for (double x : {0.0, 0.5, 0.99}) EXPECT_EQ(r.select("g", {}, x), 1u);
}

TEST(Router, RpmLimitTakesADeploymentOutForTheMinute) {
  auto cfg = load(R"(
model_list:
  - model_name: g
    litellm_params: {model: openai/a, api_base: "http://127.0.0.1:1/v1", rpm: 2}
  - model_name: g
    litellm_params: {model: openai/b, api_base: "http://127.0.0.1:1/v1", rpm: 1000}
)");
  core::ManualClock clock;
  routing::RouterState r(cfg, clock);
  r.on_attempt_start(0);
  r.on_attempt_start(0);
  for (double x : {0.0, 0.001, 0.5}) EXPECT_EQ(r.select("g", {}, x), 1u);
  clock.advance(std::chrono::minutes(1));
  EXPECT_EQ(r.select("g", {}, 0.0), 0u);
}

TEST(Fallbacks, OrderFollowsTheFailureClass) {
  auto cfg = load(R"(
model_list:
  - {model_name: a, litellm_params: {model: openai/a, api_base: "http://x:1/v1"}}
  - {model_name: b, litellm_params: {model: openai/b, api_base: "http://x:1/v1"}}
  - {model_name: c, litellm_params: {model: openai/c, api_base: "http://x:1/v1"}}
  - {model_name: big, litellm_params: {model: openai/big, api_base: "http://x:1/v1"}}
  - {model_name: safe, litellm_params: {model: openai/safe, api_base: "http://x:1/v1"}}
  - {model_name: d, litellm_params: {model: openai/d, api_base: "http://x:1/v1"}}
litellm_settings:
  fallbacks: [{"a": ["b", "c"]}]
  context_window_fallbacks: [{"a": ["big"]}]
  content_policy_fallbacks: [{"a": ["safe"]}]
  default_fallbacks: ["d", "b"]
)");
  using C = policy::FailureClass;
  EXPECT_EQ(routing::fallback_groups(*cfg, "a", C::retryable_capacity), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(routing::fallback_groups(*cfg, "a", C::transient_provider_error), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(routing::fallback_groups(*cfg, "a", C::context_overflow), (std::vector<std::string>{"big"}));
  EXPECT_EQ(routing::fallback_groups(*cfg, "a", C::content_policy), (std::vector<std::string>{"safe"}));
  // A group without its own rule falls back to default_fallbacks, never to itself.
  EXPECT_EQ(routing::fallback_groups(*cfg, "b", C::retryable_capacity), (std::vector<std::string>{"d"}));
  EXPECT_TRUE(routing::fallback_groups(*cfg, "b", C::context_overflow).empty());
}

TEST(Fallbacks, WildcardRuleAppliesToGroupsWithoutTheirOwn) {
  auto cfg = load(R"(
model_list:
  - {model_name: a, litellm_params: {model: openai/a, api_base: "http://x:1/v1"}}
  - {model_name: b, litellm_params: {model: openai/b, api_base: "http://x:1/v1"}}
  - {model_name: c, litellm_params: {model: openai/c, api_base: "http://x:1/v1"}}
litellm_settings:
  fallbacks: [{"*": ["b", "c"]}]
)");
  // The list is not cut here: the request's fallback budget (max_fallbacks) bounds the walk.
  EXPECT_EQ(routing::fallback_groups(*cfg, "a", policy::FailureClass::retryable_capacity),
            (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(routing::fallback_groups(*cfg, "b", policy::FailureClass::retryable_capacity),
            (std::vector<std::string>{"c"}));
}

TEST(Router, ADeploymentTollgateCannotCallIsChosenOnlyWhenItsGroupHasNoCallableOne) {
  auto cfg = load(R"(
model_list:
  - model_name: g
    litellm_params: {model: replicate/x}
  - model_name: g
    litellm_params: {model: openai/a, api_base: "http://127.0.0.1:1/v1"}
  - model_name: only
    litellm_params: {model: replicate/y}
)");
  core::ManualClock clock;
  policy::Circuits circuits(policy::Circuits::setup_from(*cfg), clock);
  routing::RouterState r(cfg, clock, &circuits);
  for (double x : {0.0, 0.5, 0.99}) EXPECT_EQ(r.select("g", {}, x), 1u);
  circuits.open_deployment(1, "test");
  EXPECT_FALSE(r.select("g", {}, 0.0)) << "the callable one cools down: the group answers as it does, not with a 400";
  EXPECT_EQ(r.select("only", {}, 0.3), 2u);
  EXPECT_FALSE(r.select("only", {2}, 0.3)) << "never twice";
}

TEST(ModelGroups, AWildcardServesNamesNoGroupHasMostSpecificFirst) {
  auto cfg = load(R"(
model_list:
  - model_name: "*"
    litellm_params: {model: "openai/*", api_base: "http://127.0.0.1:1/v1"}
  - model_name: "anthropic/*"
    litellm_params: {model: "anthropic/*"}
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o, api_base: "http://127.0.0.1:1/v1"}
)");
  routing::ModelGroups g(*cfg);
  ASSERT_TRUE(g.find("gpt-4o"));
  EXPECT_EQ(g.find("gpt-4o")->front(), 2u) << "an exact group wins";
  EXPECT_EQ(g.find("anthropic/claude-3-haiku")->front(), 1u);
  EXPECT_EQ(g.find("mistral-large")->front(), 0u);
  EXPECT_TRUE(g.contains("anything"));
}
