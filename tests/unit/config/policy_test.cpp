// `fallback_policy:` — names, parsing, validation and the fallback-cycle check (issue 4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config/config.hpp"
#include "config/loader.hpp"
#include "config/policy.hpp"
#include "load_helpers.hpp"

namespace tollgate::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

LoadResult load(const std::string& yaml, std::map<std::string, std::string> vars = {}) {
  return testing_helpers::load(yaml, std::move(vars), "policy.yaml");
}
using testing_helpers::all;
using testing_helpers::only;

/// Four model groups on lines 2-5; whatever is appended starts on line 6.
constexpr const char* kGroups = R"(model_list:
  - {model_name: a, litellm_params: {model: openai/a}}
  - {model_name: b, litellm_params: {model: openai/b}}
  - {model_name: c, litellm_params: {model: openai/c}}
  - {model_name: small, litellm_params: {model: openai/small}}
)";

LoadResult with_groups(const std::string& rest) { return load(std::string(kGroups) + rest); }

// ---------------------------------------------------------------------------------------
// Names

TEST(PolicyNames, EveryEnumeratorRoundTrips) {
  for (int i = 0; i < kFailureClassCount; ++i) {
    const auto c = static_cast<FailureClass>(i);
    EXPECT_EQ(parse_failure_class(to_string(c)), c) << to_string(c);
  }
  for (auto a : {PolicyAction::retry_then_fallback, PolicyAction::retry_with_circuit, PolicyAction::fallback,
                 PolicyAction::next_deployment, PolicyAction::degrade, PolicyAction::fail_fast,
                 PolicyAction::stop_and_alert})
    EXPECT_EQ(parse_policy_action(to_string(a)), a) << to_string(a);
  for (auto e : {TransportEvent::none, TransportEvent::connect_failed, TransportEvent::failed_before_send,
                 TransportEvent::reset_after_send, TransportEvent::timeout_after_send,
                 TransportEvent::malformed_body, TransportEvent::oversized_body})
    EXPECT_EQ(parse_transport_event(to_string(e)), e) << to_string(e);
  for (auto m : {DegradationMode::none, DegradationMode::equivalent, DegradationMode::reduced,
                 DegradationMode::stale_cache, DegradationMode::deferred, DegradationMode::fail_fast})
    EXPECT_EQ(parse_degradation_mode(to_string(m)), m) << to_string(m);
}

TEST(PolicyNames, ExactNamesAndTheRetryAlias) {
  EXPECT_EQ(to_string(FailureClass::retryable_capacity), "retryable_capacity");
  EXPECT_EQ(to_string(FailureClass::unknown_outcome), "unknown_outcome");
  EXPECT_EQ(to_string(PolicyAction::stop_and_alert), "stop_and_alert");
  EXPECT_EQ(to_string(TransportEvent::reset_after_send), "reset_after_send");
  EXPECT_EQ(to_string(DegradationMode::stale_cache), "stale_cache");

  EXPECT_EQ(parse_policy_action("retry"), PolicyAction::retry_then_fallback);
  EXPECT_EQ(parse_policy_action("Retry"), std::nullopt);
  EXPECT_EQ(parse_failure_class("Commercial_Limit"), std::nullopt);
  EXPECT_EQ(parse_failure_class("commercial-limit"), std::nullopt);
  EXPECT_EQ(parse_failure_class(""), std::nullopt);
  EXPECT_EQ(parse_transport_event("timeout"), std::nullopt);
  EXPECT_EQ(parse_degradation_mode("cheap"), std::nullopt);
  EXPECT_EQ(parse_policy_action("unknown"), std::nullopt);
}

// ---------------------------------------------------------------------------------------
// A full, valid section

TEST(FallbackPolicy, AbsentSectionKeepsDefaults) {
  LoadResult r = with_groups("");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const FallbackPolicyConfig& fp = r.config->fallback_policy;
  EXPECT_EQ(fp.deadline_slack, 50ms);
  EXPECT_EQ(fp.provider_circuit.open_ratio, 1.0);
  EXPECT_EQ(fp.provider_circuit.min_deployments, 2);
  EXPECT_EQ(fp.provider_circuit.cooldown, 30000ms);
  EXPECT_EQ(fp.provider_circuit.commercial_limit_cooldown, 300000ms);
  EXPECT_TRUE(fp.defaults.classes.empty());
  EXPECT_FALSE(fp.defaults.budgets.max_retries);
  EXPECT_FALSE(fp.defaults.degradation);
  EXPECT_TRUE(fp.model_groups.empty());
}

constexpr const char* kFullPolicy = R"(fallback_policy:
  deadline_slack_ms: 25
  provider_circuit: {open_ratio: 0.5, min_deployments: 3, cooldown_ms: 10000, commercial_limit_cooldown_ms: 0}
  defaults:
    classes:
      commercial_limit: {codes: [insufficient_quota, billing_hard_limit_reached], action: stop_and_alert}
      retryable_capacity: {status: [429, 503, 529], action: retry}
      unknown_outcome:
        transport: [timeout_after_send, reset_after_send]
        action: degrade
      caller_fix_required: {messages: ["invalid schema"], status: []}
    budgets: {max_retries: 2, max_fallbacks: 1, deadline_ms: 30000, min_time_left_ms: 0, max_request_cost: 2.5e-1}
    circuit: {consecutive_failures: 4, failure_ratio: 0.5, window_ms: 60000, min_requests: 20, cooldown_ms: 0}
    feature_circuit: {consecutive_failures: 5, cooldown_ms: 30000}
    degradation: {mode: reduced, model: small, max_tokens: 256, caveat: "shorter answer"}
  model_groups:
    a:
      budgets: {max_retries: 0, deadline_ms: 8000}
      classes:
        transient_provider_error: {status: [500, 502], transport: [connect_failed, malformed_body], action: retry_with_circuit}
      degradation: {mode: stale_cache, max_age_ms: 600000}
    b:
      degradation: {mode: equivalent, model: c}
    small:
      degradation: {mode: fail_fast}
    c:
      degradation: {mode: deferred}
)";

TEST(FallbackPolicy, FullExampleParses) {
  LoadResult r = with_groups(kFullPolicy);
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
  const FallbackPolicyConfig& fp = r.config->fallback_policy;
  EXPECT_EQ(fp.deadline_slack, 25ms);
  EXPECT_EQ(fp.provider_circuit.open_ratio, 0.5);
  EXPECT_EQ(fp.provider_circuit.min_deployments, 3);
  EXPECT_EQ(fp.provider_circuit.cooldown, 10000ms);
  EXPECT_EQ(fp.provider_circuit.commercial_limit_cooldown, 0ms);

  const GroupPolicyConfig& d = fp.defaults;
  EXPECT_EQ(d.group, "");
  EXPECT_EQ(d.path, "fallback_policy.defaults");
  EXPECT_EQ(d.line, 9);
  ASSERT_EQ(d.classes.size(), 4u);
  EXPECT_EQ(d.classes[0].cls, FailureClass::commercial_limit);
  EXPECT_THAT(*d.classes[0].codes, ElementsAre("insufficient_quota", "billing_hard_limit_reached"));
  EXPECT_FALSE(d.classes[0].status);
  EXPECT_FALSE(d.classes[0].messages);
  EXPECT_FALSE(d.classes[0].transport);
  EXPECT_EQ(d.classes[0].action, PolicyAction::stop_and_alert);
  EXPECT_EQ(d.classes[1].cls, FailureClass::retryable_capacity);
  EXPECT_THAT(*d.classes[1].status, ElementsAre(429, 503, 529));
  EXPECT_EQ(d.classes[1].action, PolicyAction::retry_then_fallback);  // the "retry" alias
  EXPECT_EQ(d.classes[2].cls, FailureClass::unknown_outcome);
  EXPECT_THAT(*d.classes[2].transport,
              ElementsAre(TransportEvent::timeout_after_send, TransportEvent::reset_after_send));
  EXPECT_EQ(d.classes[2].action, PolicyAction::degrade);
  EXPECT_EQ(d.classes[3].cls, FailureClass::caller_fix_required);
  EXPECT_THAT(*d.classes[3].messages, ElementsAre("invalid schema"));
  ASSERT_TRUE(d.classes[3].status);  // an empty list is a value: "no statuses"
  EXPECT_TRUE(d.classes[3].status->empty());
  EXPECT_FALSE(d.classes[3].action);

  EXPECT_EQ(d.budgets.max_retries, 2);
  EXPECT_EQ(d.budgets.max_fallbacks, 1);
  EXPECT_EQ(d.budgets.deadline, 30000ms);
  EXPECT_EQ(d.budgets.min_time_left, 0ms);
  EXPECT_EQ(d.budgets.max_request_cost, "0.25");  // normalised decimal text
  EXPECT_EQ(d.circuit.consecutive_failures, 4);
  EXPECT_EQ(d.circuit.failure_ratio, 0.5);
  EXPECT_EQ(d.circuit.window, 60000ms);
  EXPECT_EQ(d.circuit.min_requests, 20);
  EXPECT_EQ(d.circuit.cooldown, 0ms);
  EXPECT_EQ(d.feature_circuit.consecutive_failures, 5);
  EXPECT_EQ(d.feature_circuit.cooldown, 30000ms);
  ASSERT_TRUE(d.degradation);
  EXPECT_EQ(d.degradation->mode, DegradationMode::reduced);
  EXPECT_EQ(d.degradation->model, "small");
  EXPECT_EQ(d.degradation->max_tokens, 256);
  EXPECT_EQ(d.degradation->caveat, "shorter answer");
  EXPECT_FALSE(d.degradation->max_age);

  ASSERT_EQ(fp.model_groups.size(), 4u);
  const GroupPolicyConfig& a = fp.model_groups[0];
  EXPECT_EQ(a.group, "a");
  EXPECT_EQ(a.path, "fallback_policy.model_groups.a");
  EXPECT_EQ(a.line, 22);
  EXPECT_EQ(a.budgets.max_retries, 0);
  EXPECT_EQ(a.budgets.deadline, 8000ms);
  EXPECT_FALSE(a.budgets.max_fallbacks);  // layered over defaults by the policy layer, not here
  EXPECT_FALSE(a.budgets.max_request_cost);
  ASSERT_EQ(a.classes.size(), 1u);
  EXPECT_EQ(a.classes[0].cls, FailureClass::transient_provider_error);
  EXPECT_THAT(*a.classes[0].status, ElementsAre(500, 502));
  EXPECT_THAT(*a.classes[0].transport,
              ElementsAre(TransportEvent::connect_failed, TransportEvent::malformed_body));
  EXPECT_EQ(a.classes[0].action, PolicyAction::retry_with_circuit);
  ASSERT_TRUE(a.degradation);
  EXPECT_EQ(a.degradation->mode, DegradationMode::stale_cache);
  EXPECT_EQ(a.degradation->max_age, 600000ms);
  EXPECT_EQ(fp.model_groups[1].group, "b");
  EXPECT_EQ(fp.model_groups[1].degradation->mode, DegradationMode::equivalent);
  EXPECT_EQ(fp.model_groups[1].degradation->model, "c");
  EXPECT_EQ(fp.model_groups[2].degradation->mode, DegradationMode::fail_fast);
  EXPECT_EQ(fp.model_groups[3].degradation->mode, DegradationMode::deferred);
}

TEST(FallbackPolicy, EnvironmentReferencesAndNullsWork) {
  LoadResult r = load(std::string(kGroups) + R"(fallback_policy:
  defaults:
    budgets: {deadline_ms: os.environ/DEADLINE, max_request_cost: os.environ/COST, max_retries: null}
    degradation:
  model_groups:
    a:
)",
                      {{"DEADLINE", "1500"}, {"COST", "0.10"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const GroupPolicyConfig& d = r.config->fallback_policy.defaults;
  EXPECT_EQ(d.budgets.deadline, 1500ms);
  EXPECT_EQ(d.budgets.max_request_cost, "0.10");
  EXPECT_FALSE(d.budgets.max_retries);
  EXPECT_FALSE(d.degradation);
  ASSERT_EQ(r.config->fallback_policy.model_groups.size(), 1u);
  EXPECT_EQ(r.config->fallback_policy.model_groups[0].group, "a");
}

TEST(FallbackPolicy, UnknownKeysWarnWithTheirPath) {
  LoadResult r = with_groups(R"(fallback_policy:
  deadline_slack: 5
  defaults:
    budget: {max_retries: 1}
    budgets: {max_retry: 1}
    classes:
      commercial_limit: {code: [x]}
    degradation: {mode: stale_cache, model: small, max_tokens: 10, caveat: x}
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_THAT(only(r.warnings, "fallback_policy.deadline_slack").message, HasSubstr("unknown key"));
  EXPECT_EQ(only(r.warnings, "fallback_policy.deadline_slack").line, 7);
  only(r.warnings, "fallback_policy.defaults.budget");
  only(r.warnings, "fallback_policy.defaults.budgets.max_retry");
  only(r.warnings, "fallback_policy.defaults.classes.commercial_limit.code");
  // Keys the mode does not use load, but say so.
  EXPECT_THAT(only(r.warnings, "fallback_policy.defaults.degradation.model").message,
              HasSubstr("ignored for mode stale_cache"));
  only(r.warnings, "fallback_policy.defaults.degradation.max_tokens");
  only(r.warnings, "fallback_policy.defaults.degradation.caveat");
  EXPECT_EQ(r.warnings.size(), 7u) << all(r.warnings);
}

// ---------------------------------------------------------------------------------------
// Bad input: each a Problem with its YAML path and line; the config does not load

TEST(FallbackPolicyErrors, UnknownNames) {
  LoadResult r = with_groups(R"(fallback_policy:
  defaults:
    classes:
      capacity: {action: fallback}
      commercial_limit: {action: escalate}
      unknown_outcome: {transport: [reset_after_send, timeout]}
      transient_provider_error: {transport: [none]}
    degradation: {mode: cheaper}
)");
  EXPECT_FALSE(r.ok());
  Problem cls = only(r.errors, "fallback_policy.defaults.classes.capacity");
  EXPECT_EQ(cls.line, 9);
  EXPECT_THAT(cls.message, HasSubstr("unknown failure class \"capacity\""));
  EXPECT_THAT(cls.message, HasSubstr("retryable_capacity"));
  Problem action = only(r.errors, "fallback_policy.defaults.classes.commercial_limit.action");
  EXPECT_EQ(action.line, 10);
  EXPECT_THAT(action.message, HasSubstr("unknown action \"escalate\""));
  EXPECT_THAT(action.message, HasSubstr("stop_and_alert"));
  Problem event = only(r.errors, "fallback_policy.defaults.classes.unknown_outcome.transport[1]");
  EXPECT_EQ(event.line, 11);
  EXPECT_THAT(event.message, HasSubstr("unknown transport event \"timeout\""));
  EXPECT_THAT(only(r.errors, "fallback_policy.defaults.classes.transient_provider_error.transport[0]").message,
              HasSubstr("\"none\" cannot be matched"));
  Problem mode = only(r.errors, "fallback_policy.defaults.degradation.mode");
  EXPECT_EQ(mode.line, 13);
  EXPECT_THAT(mode.message, HasSubstr("unknown degradation mode \"cheaper\""));
  EXPECT_EQ(r.errors.size(), 5u) << all(r.errors);
}

TEST(FallbackPolicyErrors, ModelGroupsMustNameModelGroups) {
  LoadResult r = with_groups(R"(fallback_policy:
  model_groups:
    a: {budgets: {max_retries: 1}}
    gpt-5: {budgets: {max_retries: 1}}
    "*": {budgets: {max_retries: 1}}
)");
  EXPECT_FALSE(r.ok());
  Problem ghost = only(r.errors, "fallback_policy.model_groups.gpt-5");
  EXPECT_EQ(ghost.line, 9);
  EXPECT_THAT(ghost.message, HasSubstr("model group \"gpt-5\" is not in model_list"));
  Problem star = only(r.errors, "fallback_policy.model_groups.*");
  EXPECT_EQ(star.line, 10);
  EXPECT_THAT(star.message, HasSubstr("fallback_policy.defaults"));
  EXPECT_EQ(r.errors.size(), 2u) << all(r.errors);
}

TEST(FallbackPolicyErrors, NegativeBudgetsAndOutOfRangeValues) {
  LoadResult r = with_groups(R"(fallback_policy:
  deadline_slack_ms: -1
  provider_circuit: {open_ratio: 0, min_deployments: 0, cooldown_ms: -1, commercial_limit_cooldown_ms: -5}
  defaults:
    budgets: {max_retries: -1, max_fallbacks: -2, deadline_ms: 0, min_time_left_ms: -5, max_request_cost: -0.5}
    circuit: {consecutive_failures: 0, failure_ratio: 1.5, window_ms: 0, min_requests: 0, cooldown_ms: -1}
    feature_circuit: {consecutive_failures: 0, cooldown_ms: -1}
  model_groups:
    a:
      budgets: {max_retries: 1.5, max_request_cost: lots}
      circuit: {failure_ratio: -0.1}
      degradation: {mode: reduced, model: small, max_tokens: 0}
    b:
      degradation: {mode: stale_cache, max_age_ms: 0}
)");
  EXPECT_FALSE(r.ok());
  const std::vector<std::pair<std::string, std::string>> expected{
      {"fallback_policy.deadline_slack_ms", "at least 0"},
      {"fallback_policy.provider_circuit.open_ratio", "greater than 0 and at most 1"},
      {"fallback_policy.provider_circuit.min_deployments", "at least 1"},
      {"fallback_policy.provider_circuit.cooldown_ms", "at least 0"},
      {"fallback_policy.provider_circuit.commercial_limit_cooldown_ms", "at least 0"},
      {"fallback_policy.defaults.budgets.max_retries", "at least 0, got -1"},
      {"fallback_policy.defaults.budgets.max_fallbacks", "at least 0, got -2"},
      {"fallback_policy.defaults.budgets.deadline_ms", "at least 1, got 0"},
      {"fallback_policy.defaults.budgets.min_time_left_ms", "at least 0, got -5"},
      {"fallback_policy.defaults.budgets.max_request_cost", "must not be negative"},
      {"fallback_policy.defaults.circuit.consecutive_failures", "at least 1"},
      {"fallback_policy.defaults.circuit.failure_ratio", "at most 1, got 1.5"},
      {"fallback_policy.defaults.circuit.window_ms", "at least 1"},
      {"fallback_policy.defaults.circuit.min_requests", "at least 1"},
      {"fallback_policy.defaults.circuit.cooldown_ms", "at least 0"},
      {"fallback_policy.defaults.feature_circuit.consecutive_failures", "at least 1"},
      {"fallback_policy.defaults.feature_circuit.cooldown_ms", "at least 0"},
      {"fallback_policy.model_groups.a.budgets.max_retries", "expected an integer"},
      {"fallback_policy.model_groups.a.budgets.max_request_cost", "decimal"},
      {"fallback_policy.model_groups.a.circuit.failure_ratio", "must not be negative"},
      {"fallback_policy.model_groups.a.degradation.max_tokens", "at least 1"},
      {"fallback_policy.model_groups.b.degradation.max_age_ms", "at least 1"},
  };
  for (const auto& [path, text] : expected) {
    Problem p = only(r.errors, path);
    EXPECT_THAT(p.message, HasSubstr(text)) << path;
    EXPECT_GT(p.line, 5) << path;
  }
  EXPECT_EQ(only(r.errors, "fallback_policy.defaults.budgets.max_request_cost").line, 10);
  EXPECT_EQ(r.errors.size(), expected.size()) << all(r.errors);
}

TEST(FallbackPolicyErrors, ZeroRatioAndZeroCostEdges) {
  LoadResult zero = with_groups("fallback_policy:\n  defaults:\n    circuit: {failure_ratio: 0.0}\n");
  EXPECT_THAT(only(zero.errors, "fallback_policy.defaults.circuit.failure_ratio").message,
              HasSubstr("greater than 0"));
  LoadResult ok = with_groups(
      "fallback_policy:\n  defaults:\n    circuit: {failure_ratio: 1}\n    budgets: {max_request_cost: 0}\n");
  ASSERT_TRUE(ok.ok()) << all(ok.errors);
  EXPECT_EQ(ok.config->fallback_policy.defaults.circuit.failure_ratio, 1.0);
  EXPECT_EQ(ok.config->fallback_policy.defaults.budgets.max_request_cost, "0");
}

TEST(FallbackPolicyErrors, WrongTypes) {
  LoadResult r = with_groups(R"(fallback_policy:
  provider_circuit: [1, 2]
  defaults:
    classes: [commercial_limit]
    budgets: 3
  model_groups:
    a:
      classes:
        retryable_capacity: {status: 429, codes: rate_limit_exceeded, action: [retry]}
    b: fast
)");
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(only(r.errors, "fallback_policy.provider_circuit").message, HasSubstr("expected a map, got a list"));
  EXPECT_THAT(only(r.errors, "fallback_policy.defaults.classes").message, HasSubstr("expected a map"));
  EXPECT_THAT(only(r.errors, "fallback_policy.defaults.budgets").message, HasSubstr("expected a map, got a scalar"));
  Problem status = only(r.errors, "fallback_policy.model_groups.a.classes.retryable_capacity.status");
  EXPECT_EQ(status.line, 14);
  EXPECT_THAT(status.message, HasSubstr("expected a list"));
  EXPECT_THAT(only(r.errors, "fallback_policy.model_groups.a.classes.retryable_capacity.codes").message,
              HasSubstr("expected a list of strings"));
  EXPECT_THAT(only(r.errors, "fallback_policy.model_groups.a.classes.retryable_capacity.action").message,
              HasSubstr("expected a string"));
  EXPECT_THAT(only(r.errors, "fallback_policy.model_groups.b").message, HasSubstr("expected a map"));
  EXPECT_EQ(r.errors.size(), 7u) << all(r.errors);

  LoadResult top = with_groups("fallback_policy: [a]\n");
  EXPECT_THAT(only(top.errors, "fallback_policy").message, HasSubstr("expected a map"));
}

TEST(FallbackPolicyErrors, StatusOutsideHttpRange) {
  LoadResult r = with_groups(R"(fallback_policy:
  defaults:
    classes:
      retryable_capacity: {status: [429, 99, 600, 599, 100]}
      transient_provider_error: {status: [five-hundred]}
)");
  EXPECT_FALSE(r.ok());
  Problem low = only(r.errors, "fallback_policy.defaults.classes.retryable_capacity.status[1]");
  EXPECT_EQ(low.line, 9);
  EXPECT_THAT(low.message, HasSubstr("not an HTTP status (100..599): 99"));
  EXPECT_THAT(only(r.errors, "fallback_policy.defaults.classes.retryable_capacity.status[2]").message,
              HasSubstr("600"));
  EXPECT_THAT(only(r.errors, "fallback_policy.defaults.classes.transient_provider_error.status[0]").message,
              HasSubstr("expected an integer"));
  EXPECT_EQ(r.errors.size(), 3u) << all(r.errors);
}

TEST(FallbackPolicyErrors, DegradationNeedsWhatItsModeUses) {
  LoadResult r = with_groups(R"(fallback_policy:
  defaults:
    degradation: {mode: equivalent}
  model_groups:
    a:
      degradation: {mode: reduced, model: tiny, max_tokens: 100}
    b:
      degradation: {mode: reduced, model: small}
    c:
      degradation: {model: small}
    small:
      degradation: {mode: equivalent, model: "*"}
)");
  EXPECT_FALSE(r.ok());
  Problem no_model = only(r.errors, "fallback_policy.defaults.degradation.model");
  EXPECT_EQ(no_model.line, 8);
  EXPECT_THAT(no_model.message, HasSubstr("mode equivalent needs model"));
  Problem unknown = only(r.errors, "fallback_policy.model_groups.a.degradation.model");
  EXPECT_EQ(unknown.line, 11);
  EXPECT_THAT(unknown.message, HasSubstr("model group \"tiny\" is not in model_list"));
  Problem no_cap = only(r.errors, "fallback_policy.model_groups.b.degradation.max_tokens");
  EXPECT_EQ(no_cap.line, 13);
  EXPECT_THAT(no_cap.message, HasSubstr("mode reduced needs max_tokens"));
  EXPECT_THAT(only(r.errors, "fallback_policy.model_groups.c.degradation.mode").message,
              HasSubstr("mode is required"));
  EXPECT_THAT(only(r.errors, "fallback_policy.model_groups.small.degradation.model").message,
              HasSubstr("\"*\" is not in model_list"));
  EXPECT_EQ(r.errors.size(), 5u) << all(r.errors);
}

TEST(FallbackPolicyErrors, DuplicateKeysAreErrors) {
  LoadResult r = with_groups(R"(fallback_policy:
  model_groups:
    a: {budgets: {max_retries: 1}}
    a: {budgets: {max_retries: 2}}
)");
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(only(r.errors, "fallback_policy.model_groups.a").message, HasSubstr("duplicate key"));
}

// ---------------------------------------------------------------------------------------
// Circular fallback chains

TEST(FallbackCycles, TwoGroupsFallingBackToEachOther) {
  LoadResult r = with_groups(R"(litellm_settings:
  fallbacks: [{a: [c, b]}, {b: [a]}]
)");
  EXPECT_TRUE(r.ok()) << all(r.errors);  // a warning: LiteLLM loads it, and the walk is one level
  Problem p = only(r.warnings, "litellm_settings.fallbacks[1].b[0]");
  EXPECT_EQ(p.line, 7);
  EXPECT_EQ(p.message, "circular fallback chain: a -> b -> a");
  EXPECT_EQ(r.warnings.size(), 1u) << all(r.warnings);
}

TEST(FallbackCycles, AGroupFallingBackToItself) {
  LoadResult r = with_groups(R"(litellm_settings:
  context_window_fallbacks: [{a: [b, a]}]
)");
  EXPECT_TRUE(r.ok()) << all(r.errors);  // a warning: LiteLLM loads it, and the walk is one level
  Problem p = only(r.warnings, "litellm_settings.context_window_fallbacks[0].a[1]");
  EXPECT_EQ(p.message, "circular fallback chain: a -> a");
  EXPECT_EQ(r.warnings.size(), 1u) << all(r.warnings);
}

TEST(FallbackCycles, ThreeGroupsAcrossTheThreeLists) {
  LoadResult r = with_groups(R"(litellm_settings:
  fallbacks: [{a: [b]}]
  context_window_fallbacks: [{b: [c]}]
  content_policy_fallbacks: [{c: [a]}]
)");
  EXPECT_TRUE(r.ok()) << all(r.errors);  // a warning: LiteLLM loads it, and the walk is one level
  Problem p = only(r.warnings, "litellm_settings.content_policy_fallbacks[0].c[0]");
  EXPECT_EQ(p.line, 9);
  EXPECT_EQ(p.message, "circular fallback chain: a -> b -> c -> a");
  EXPECT_EQ(r.warnings.size(), 1u) << all(r.warnings);
}

TEST(FallbackCycles, RouterSettingsFallbacksCount) {
  LoadResult r = with_groups(R"(router_settings:
  fallbacks: [{b: [c]}, {c: [b]}]
)");
  EXPECT_TRUE(r.ok()) << all(r.errors);  // a warning: LiteLLM loads it, and the walk is one level
  EXPECT_EQ(only(r.warnings, "router_settings.fallbacks[1].c[0]").message,
            "circular fallback chain: b -> c -> b");
}

TEST(FallbackCycles, OneReportPerCycleEvenWhenClosedTwice) {
  LoadResult r = with_groups(R"(litellm_settings:
  fallbacks: [{a: [b]}, {b: [a]}]
  context_window_fallbacks: [{b: [a]}]
)");
  EXPECT_TRUE(r.ok()) << all(r.errors);  // a warning: LiteLLM loads it, and the walk is one level
  EXPECT_EQ(r.warnings.size(), 1u) << all(r.warnings);
  EXPECT_THAT(r.warnings[0].message, HasSubstr("a -> b -> a"));
}

TEST(FallbackCycles, ThroughAGroupsDegradationModel) {
  LoadResult r = with_groups(R"(litellm_settings:
  fallbacks: [{a: [b]}]
fallback_policy:
  model_groups:
    b:
      degradation: {mode: equivalent, model: a}
)");
  EXPECT_TRUE(r.ok()) << all(r.errors);  // a warning: LiteLLM loads it, and the walk is one level
  Problem p = only(r.warnings, "fallback_policy.model_groups.b.degradation.model");
  EXPECT_EQ(p.line, 11);
  EXPECT_EQ(p.message, "circular fallback chain: a -> b -> a");
  EXPECT_EQ(r.warnings.size(), 1u) << all(r.warnings);

  LoadResult self = with_groups(R"(fallback_policy:
  model_groups:
    c:
      degradation: {mode: reduced, model: c, max_tokens: 10}
)");
  EXPECT_EQ(only(self.warnings, "fallback_policy.model_groups.c.degradation.model").message,
            "circular fallback chain: c -> c");
}

TEST(FallbackCycles, ThroughTheDefaultDegradation) {
  // Every group without its own degradation degrades to `small`; small falls back to a.
  LoadResult r = with_groups(R"(litellm_settings:
  fallbacks: [{small: [a]}]
fallback_policy:
  defaults:
    degradation: {mode: reduced, model: small, max_tokens: 64}
)");
  EXPECT_TRUE(r.ok()) << all(r.errors);  // a warning: LiteLLM loads it, and the walk is one level
  // Found from a (first in model_list): a -> small (the default degradation), closed by small -> a.
  Problem p = only(r.warnings, "litellm_settings.fallbacks[0].small[0]");
  EXPECT_EQ(p.line, 7);
  EXPECT_EQ(p.message, "circular fallback chain: a -> small -> a");
  EXPECT_EQ(r.warnings.size(), 1u) << all(r.warnings);

  // a's own degradation replaces the default one: no edge a -> small, no cycle.
  LoadResult fixed = with_groups(R"(litellm_settings:
  fallbacks: [{small: [a]}]
fallback_policy:
  defaults:
    degradation: {mode: reduced, model: small, max_tokens: 64}
  model_groups:
    a:
      degradation: {mode: fail_fast}
)");
  EXPECT_TRUE(fixed.ok()) << all(fixed.errors);
}

TEST(FallbackCycles, ChainsWithoutCyclesLoad) {
  LoadResult r = with_groups(R"(litellm_settings:
  fallbacks: [{a: [b, c]}, {b: [c]}, {"*": [a]}]
  context_window_fallbacks: [{a: [b]}, {c: [small]}]
  content_policy_fallbacks: {a: [c], b: []}
  default_fallbacks: [a]
fallback_policy:
  defaults:
    degradation: {mode: reduced, model: small, max_tokens: 64}
  model_groups:
    b:
      degradation: {mode: equivalent, model: c}
)");
  // "*" rules and default_fallbacks are not chains; `small` inheriting the default
  // degradation to itself is no edge (it is the degradation target).
  ASSERT_TRUE(r.ok()) << all(r.warnings);
}

TEST(FallbackCycles, ReportedTogetherWithOtherProblems) {
  LoadResult r = with_groups(R"(litellm_settings:
  fallbacks: [{a: [b, ghost]}, {b: [a]}]
fallback_policy:
  defaults:
    budgets: {max_retries: -1}
)");
  EXPECT_FALSE(r.ok()) << "the other two are errors";
  only(r.errors, "litellm_settings.fallbacks[0].a[1]");
  only(r.errors, "fallback_policy.defaults.budgets.max_retries");
  EXPECT_EQ(r.errors.size(), 2u) << all(r.errors);
  EXPECT_THAT(only(r.warnings, "litellm_settings.fallbacks[1].b[0]").message, HasSubstr("circular fallback chain"));
}

}  // namespace
}  // namespace tollgate::config
