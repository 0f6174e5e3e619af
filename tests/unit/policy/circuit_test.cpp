#include "policy/circuit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

using namespace tollgate;
using config::FailureClass;
using policy::CircuitState;
using policy::Circuits;
using policy::CircuitTransition;
using policy::Permit;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr FailureClass kCap = FailureClass::retryable_capacity;

/// Deployments: 0 a1 (openai, group g), 1 a2 (openai, g), 2 b1 (anthropic, h).
Circuits::Setup setup(policy::CircuitSettings s = {}) {
  Circuits::Setup st;
  st.deployment_ids = {"a1", "a2", "b1"};
  st.deployment_groups = {"g", "g", "h"};
  st.deployment_providers = {"openai", "openai", "anthropic"};
  st.deployment_settings = {s, s, s};
  st.provider.open_ratio = 1.0;
  st.provider.min_deployments = 2;
  st.provider.cooldown = milliseconds{30000};
  st.provider.commercial_limit_cooldown = milliseconds{300000};
  return st;
}

policy::CircuitSettings consecutive(int n, milliseconds cooldown = milliseconds{5000}) {
  policy::CircuitSettings s;
  s.consecutive_failures = n;
  s.cooldown = cooldown;
  return s;
}

struct Recorder {
  std::vector<CircuitTransition> seen;
  std::function<void(const CircuitTransition&)> fn() {
    return [this](const CircuitTransition& t) { seen.push_back(t); };
  }
};

const policy::CircuitView* find_view(const std::vector<policy::CircuitView>& v, std::string_view scope, std::string_view id) {
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& x) { return x.scope == scope && x.id == id; });
  return it == v.end() ? nullptr : &*it;
}

}  // namespace

TEST(Circuit, OpensAfterConsecutiveFailures) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(3)), clock, rec.fn());
  c.on_failure(0, kCap);
  c.on_failure(0, kCap);
  c.on_success(0);  // resets the count
  c.on_failure(0, kCap);
  c.on_failure(0, kCap);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  EXPECT_EQ(c.acquire(0), Permit::closed);
  c.on_failure(0, kCap);
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
  EXPECT_FALSE(c.available(0));
  EXPECT_EQ(c.acquire(0), Permit::denied);
  EXPECT_TRUE(c.available(1));  // other deployments unaffected
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].scope, "deployment");
  EXPECT_EQ(rec.seen[0].id, "a1");
  EXPECT_EQ(rec.seen[0].from, CircuitState::closed);
  EXPECT_EQ(rec.seen[0].to, CircuitState::open);
  EXPECT_EQ(rec.seen[0].reason, "3 consecutive failures");
}

TEST(Circuit, CallerErrorsDoNotCount) {
  core::ManualClock clock;
  Circuits c(setup(consecutive(2)), clock);
  c.on_failure(0, kCap);
  c.on_failure(0, FailureClass::caller_fix_required);  // the deployment answered: resets
  c.on_failure(0, kCap);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  c.on_failure(0, FailureClass::unknown_outcome);
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
}

TEST(Circuit, RatioOpensOnlyWithMinRequests) {
  core::ManualClock clock;
  policy::CircuitSettings s;
  s.consecutive_failures = 100;
  s.failure_ratio = 0.5;
  s.window = milliseconds{60000};
  s.min_requests = 10;
  Recorder rec;
  Circuits c(setup(s), clock, rec.fn());
  // 4 failures / 4 requests: ratio 1.0 but below min_requests.
  for (int i = 0; i < 4; ++i) c.on_failure(0, kCap);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  for (int i = 0; i < 5; ++i) c.on_success(0);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);  // 4/9, 9 < 10
  c.on_success(0);                                         // 4/10 < 0.5
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  c.on_failure(0, kCap);                                   // 5/11 < 0.5
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  c.on_failure(0, kCap);                                   // 6/12 = 0.5: opens
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].reason, "failure ratio 0.50 over 60000 ms");
  const auto snap = c.snapshot();
  const auto* v = find_view(snap, "deployment", "a1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->window_requests, 12);
  EXPECT_EQ(v->window_failures, 6);
  EXPECT_EQ(v->opened_total, 1u);
}

TEST(Circuit, RatioWindowForgetsOldAttempts) {
  core::ManualClock clock;
  policy::CircuitSettings s;
  s.consecutive_failures = 100;
  s.failure_ratio = 0.5;
  s.window = milliseconds{60000};
  s.min_requests = 4;
  Circuits c(setup(s), clock);
  for (int i = 0; i < 3; ++i) c.on_failure(0, kCap);
  clock.advance(seconds(61));  // those three leave the window
  c.on_failure(0, kCap);
  c.on_success(0);
  c.on_success(0);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);  // 1/3 in the window
  const auto views = c.snapshot();
  const auto* v = find_view(views, "deployment", "a1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->window_requests, 3);
  EXPECT_EQ(v->window_failures, 1);
  c.on_failure(0, kCap);  // 2/4 = 0.5
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
}

TEST(Circuit, CooldownHalfOpenSingleProbeThenSuccessCloses) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(1, milliseconds{5000})), clock, rec.fn());
  c.on_failure(0, kCap);
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
  clock.advance(milliseconds{4999});
  EXPECT_EQ(c.acquire(0), Permit::denied);
  const auto views = c.snapshot();
  const auto* v = find_view(views, "deployment", "a1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->retry_in_ms, 1);
  clock.advance(milliseconds{1});
  EXPECT_TRUE(c.available(0));
  EXPECT_EQ(c.deployment_state(0), CircuitState::half_open);
  EXPECT_EQ(c.acquire(0), Permit::probe);
  EXPECT_EQ(c.acquire(0), Permit::denied);  // exactly one probe
  EXPECT_FALSE(c.available(0));
  c.on_success(0);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  EXPECT_EQ(c.acquire(0), Permit::closed);
  EXPECT_EQ(c.acquire(0), Permit::closed);
  ASSERT_EQ(rec.seen.size(), 3u);
  EXPECT_EQ(rec.seen[1].from, CircuitState::open);
  EXPECT_EQ(rec.seen[1].to, CircuitState::half_open);
  EXPECT_EQ(rec.seen[2].from, CircuitState::half_open);
  EXPECT_EQ(rec.seen[2].to, CircuitState::closed);
  EXPECT_EQ(rec.seen[2].reason, "probe succeeded");
}

TEST(Circuit, ProbeFailureReopensForAnotherCooldown) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(1, milliseconds{5000})), clock, rec.fn());
  c.on_failure(0, kCap);
  clock.advance(milliseconds{5000});
  ASSERT_EQ(c.acquire(0), Permit::probe);
  c.on_failure(0, kCap);
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
  clock.advance(milliseconds{4000});
  EXPECT_EQ(c.acquire(0), Permit::denied);
  clock.advance(milliseconds{1000});
  EXPECT_EQ(c.acquire(0), Permit::probe);
  ASSERT_GE(rec.seen.size(), 3u);
  EXPECT_EQ(rec.seen[2].from, CircuitState::half_open);
  EXPECT_EQ(rec.seen[2].to, CircuitState::open);
  EXPECT_EQ(rec.seen[2].reason, "probe failed");
  const auto views = c.snapshot();
  const auto* v = find_view(views, "deployment", "a1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->opened_total, 2u);
}

TEST(Circuit, ReleaseFreesTheProbe) {
  core::ManualClock clock;
  Circuits c(setup(consecutive(1)), clock);
  c.on_failure(0, kCap);
  clock.advance(seconds(5));
  ASSERT_EQ(c.acquire(0), Permit::probe);
  EXPECT_EQ(c.acquire(0), Permit::denied);
  c.release(0, Permit::probe);
  EXPECT_EQ(c.deployment_state(0), CircuitState::half_open);
  EXPECT_EQ(c.acquire(0), Permit::probe);
  // Releasing a closed permit changes nothing.
  c.release(0, Permit::closed);
  EXPECT_EQ(c.acquire(0), Permit::denied);
}

TEST(Circuit, OpenDeploymentNow) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(5, milliseconds{2000})), clock, rec.fn());
  c.open_deployment(2, "deployment_misconfigured: 401");
  EXPECT_EQ(c.deployment_state(2), CircuitState::open);
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].reason, "deployment_misconfigured: 401");
  clock.advance(seconds(2));
  EXPECT_EQ(c.acquire(2), Permit::probe);
}

TEST(Circuit, ProviderOpensWhenAllItsDeploymentsAreOpen) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(1, milliseconds{5000})), clock, rec.fn());
  c.on_failure(0, kCap);
  EXPECT_EQ(c.provider_state("openai"), CircuitState::closed);  // 1 of 2 < ratio 1.0
  c.on_failure(1, kCap);
  EXPECT_EQ(c.provider_state("openai"), CircuitState::open);
  EXPECT_EQ(c.provider_state("anthropic"), CircuitState::closed);
  ASSERT_EQ(rec.seen.size(), 3u);
  EXPECT_EQ(rec.seen[2].scope, "provider");
  EXPECT_EQ(rec.seen[2].id, "openai");
  EXPECT_EQ(rec.seen[2].to, CircuitState::open);
  EXPECT_EQ(rec.seen[2].reason, "2 of 2 deployments open");

  // The deployments' own cooldown passes, but the provider is still open: denied.
  clock.advance(seconds(5));
  EXPECT_EQ(c.deployment_state(0), CircuitState::half_open);
  EXPECT_EQ(c.acquire(0), Permit::denied);
  EXPECT_EQ(c.acquire(1), Permit::denied);
  EXPECT_EQ(c.acquire(2), Permit::closed);

  // Provider cooldown (30 s): half-open, one probe for the whole provider.
  clock.advance(seconds(25));
  EXPECT_EQ(c.provider_state("openai"), CircuitState::half_open);
  EXPECT_EQ(c.acquire(0), Permit::probe);
  EXPECT_EQ(c.acquire(1), Permit::denied);
  c.on_success(0);
  EXPECT_EQ(c.provider_state("openai"), CircuitState::closed);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  EXPECT_EQ(c.acquire(0), Permit::closed);
  EXPECT_EQ(c.acquire(1), Permit::probe);  // its own half-open probe
}

TEST(Circuit, ProviderProbeFailureReopensProvider) {
  core::ManualClock clock;
  Circuits c(setup(consecutive(1, milliseconds{5000})), clock);
  c.on_failure(0, kCap);
  c.on_failure(1, kCap);
  clock.advance(seconds(30));
  ASSERT_EQ(c.acquire(1), Permit::probe);
  c.on_failure(1, kCap);
  EXPECT_EQ(c.provider_state("openai"), CircuitState::open);
  EXPECT_EQ(c.acquire(0), Permit::denied);
  clock.advance(seconds(30));
  EXPECT_EQ(c.provider_state("openai"), CircuitState::half_open);
}

TEST(Circuit, ProviderProbeReleasedByItsCarrierOnly) {
  core::ManualClock clock;
  Circuits c(setup(consecutive(1, milliseconds{5000})), clock);
  c.on_failure(0, kCap);
  c.on_failure(1, kCap);
  clock.advance(seconds(30));
  ASSERT_EQ(c.acquire(0), Permit::probe);
  c.release(1, Permit::probe);  // not the carrier
  EXPECT_EQ(c.acquire(1), Permit::denied);
  c.release(0, Permit::probe);
  EXPECT_EQ(c.acquire(1), Permit::probe);
}

TEST(Circuit, ProviderNeedsMinDeployments) {
  core::ManualClock clock;
  Circuits c(setup(consecutive(1)), clock);
  c.on_failure(2, kCap);  // anthropic has one deployment < min_deployments 2
  EXPECT_EQ(c.deployment_state(2), CircuitState::open);
  EXPECT_EQ(c.provider_state("anthropic"), CircuitState::closed);
}

TEST(Circuit, ProviderOpenRatioBelowOne) {
  core::ManualClock clock;
  auto st = setup(consecutive(1));
  st.provider.open_ratio = 0.5;
  Circuits c(std::move(st), clock);
  c.on_failure(1, kCap);  // 1 of 2 >= 0.5
  EXPECT_EQ(c.provider_state("openai"), CircuitState::open);
  EXPECT_EQ(c.acquire(0), Permit::denied);
}

TEST(Circuit, CommercialLimitOpensProviderAtOnce) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(4)), clock, rec.fn());
  c.on_failure(0, FailureClass::commercial_limit);
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);  // one failure of four
  EXPECT_EQ(c.provider_state("openai"), CircuitState::open);
  EXPECT_EQ(c.acquire(0), Permit::denied);
  EXPECT_EQ(c.acquire(1), Permit::denied);
  EXPECT_FALSE(c.available(1));
  EXPECT_EQ(c.acquire(2), Permit::closed);
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].scope, "provider");
  EXPECT_EQ(rec.seen[0].reason, "commercial_limit");
  // Open for commercial_limit_cooldown (300 s), not the ratio cooldown (30 s).
  clock.advance(seconds(299));
  EXPECT_EQ(c.provider_state("openai"), CircuitState::open);
  const auto views = c.snapshot();
  const auto* v = find_view(views, "provider", "openai");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->retry_in_ms, 1000);
  EXPECT_EQ(v->reason, "commercial_limit");
  clock.advance(seconds(1));
  EXPECT_EQ(c.provider_state("openai"), CircuitState::half_open);
  EXPECT_EQ(c.acquire(1), Permit::probe);
}

TEST(Circuit, OpenProviderByName) {
  core::ManualClock clock;
  Circuits c(setup(), clock);
  c.open_provider("anthropic", "operator", milliseconds{1000});
  EXPECT_EQ(c.acquire(2), Permit::denied);
  clock.advance(seconds(1));
  EXPECT_EQ(c.acquire(2), Permit::probe);
  c.on_success(2);
  EXPECT_EQ(c.provider_state("anthropic"), CircuitState::closed);
  EXPECT_EQ(c.provider_state("nobody"), CircuitState::closed);
}

TEST(Circuit, FeatureCircuitOpensHalfOpensAndCloses) {
  core::ManualClock clock;
  Recorder rec;
  auto st = setup();
  st.feature_settings["g"] = policy::FeatureCircuitSettings{2, milliseconds{10000}};
  Circuits c(std::move(st), clock, rec.fn());
  EXPECT_EQ(c.acquire_feature("g"), Permit::closed);
  c.on_feature_result("g", false, Permit::closed);
  c.on_feature_result("g", true, Permit::closed);  // resets
  c.on_feature_result("g", false, Permit::closed);
  EXPECT_EQ(c.feature_state("g"), CircuitState::closed);
  c.on_feature_result("g", false, Permit::closed);
  EXPECT_EQ(c.feature_state("g"), CircuitState::open);
  EXPECT_EQ(c.acquire_feature("g"), Permit::denied);
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].scope, "feature");
  EXPECT_EQ(rec.seen[0].id, "g");
  EXPECT_EQ(rec.seen[0].reason, "2 requests in a row missed their budget");

  clock.advance(seconds(10));
  EXPECT_EQ(c.acquire_feature("g"), Permit::probe);
  EXPECT_EQ(c.acquire_feature("g"), Permit::denied);
  c.on_feature_result("g", false, Permit::probe);  // probe missed: open again
  EXPECT_EQ(c.feature_state("g"), CircuitState::open);
  clock.advance(seconds(10));
  auto p = c.acquire_feature("g");
  ASSERT_EQ(p, Permit::probe);
  c.on_feature_result("g", true, p);
  EXPECT_EQ(c.feature_state("g"), CircuitState::closed);
  EXPECT_EQ(c.acquire_feature("g"), Permit::closed);
  EXPECT_EQ(rec.seen.back().from, CircuitState::half_open);
  EXPECT_EQ(rec.seen.back().to, CircuitState::closed);
}

TEST(Circuit, FeatureOfUnconfiguredGroupUsesDefaultsAndAppearsAfterAResult) {
  core::ManualClock clock;
  Circuits c(setup(), clock);
  EXPECT_EQ(c.acquire_feature("h"), Permit::closed);
  EXPECT_EQ(find_view(c.snapshot(), "feature", "h"), nullptr);
  for (int i = 0; i < 5; ++i) c.on_feature_result("h", false, Permit::closed);  // default threshold 5
  EXPECT_EQ(c.feature_state("h"), CircuitState::open);
  EXPECT_NE(find_view(c.snapshot(), "feature", "h"), nullptr);
  // A denied permit reports nothing.
  c.on_feature_result("x", false, Permit::denied);
  EXPECT_EQ(find_view(c.snapshot(), "feature", "x"), nullptr);
}

TEST(Circuit, SnapshotListsEverything) {
  core::ManualClock clock;
  auto st = setup(consecutive(1));
  st.feature_settings["h"] = {};
  Circuits c(std::move(st), clock);
  c.on_failure(0, kCap);
  const auto snap = c.snapshot();
  ASSERT_EQ(snap.size(), 3u + 2u + 1u);
  EXPECT_EQ(snap[0].scope, "deployment");
  EXPECT_EQ(snap[0].id, "a1");
  EXPECT_EQ(snap[0].state, CircuitState::open);
  EXPECT_EQ(snap[0].reason, "1 consecutive failures");
  EXPECT_EQ(snap[0].consecutive_failures, 1);
  EXPECT_EQ(snap[0].retry_in_ms, 5000);
  EXPECT_EQ(snap[1].id, "a2");
  EXPECT_EQ(snap[1].state, CircuitState::closed);
  EXPECT_EQ(snap[1].reason, "");
  EXPECT_EQ(snap[3].scope, "provider");
  EXPECT_EQ(snap[3].id, "openai");
  EXPECT_EQ(snap[4].id, "anthropic");
  EXPECT_EQ(snap[5].scope, "feature");
  EXPECT_EQ(snap[5].id, "h");
  // A lazily reached half-open shows up in the snapshot (and is reported).
  clock.advance(seconds(5));
  EXPECT_EQ(c.snapshot()[0].state, CircuitState::half_open);
  EXPECT_EQ(c.snapshot()[0].retry_in_ms, 0);
}

TEST(Circuit, CallbackRunsWithoutTheLock) {
  core::ManualClock clock;
  Circuits* self = nullptr;
  int calls = 0;
  Circuits c(setup(consecutive(1)), clock, [&](const CircuitTransition&) {
    ++calls;
    // Re-entering the registry from the callback would deadlock if the mutex were held.
    (void)self->snapshot();
    (void)self->available(0);
  });
  self = &c;
  c.on_failure(0, kCap);
  EXPECT_EQ(calls, 1);
}

TEST(Circuit, SetupFromConfigLayersThresholds) {
  config::Config cfg;
  cfg.router_settings.allowed_fails = 2;
  cfg.router_settings.cooldown_time = milliseconds{7000};
  auto dep = [](std::string group, std::string provider, std::string id) {
    config::Deployment d;
    d.model_name = std::move(group);
    d.provider_prefix = std::move(provider);
    d.id = std::move(id);
    return d;
  };
  cfg.model_list = {dep("gpt-4o", "openai", "gpt-4o/0"), dep("gpt-4o", "azure", "gpt-4o/1"),
                    dep("claude", "anthropic", "claude/0"), dep("mini", "openai", "mini/0")};
  auto& fp = cfg.fallback_policy;
  fp.provider_circuit.min_deployments = 3;
  fp.defaults.circuit.failure_ratio = 0.5;
  fp.defaults.circuit.min_requests = 10;
  config::GroupPolicyConfig g;
  g.group = "gpt-4o";
  g.circuit.consecutive_failures = 6;
  g.circuit.window = milliseconds{30000};
  g.feature_circuit.consecutive_failures = 3;
  fp.model_groups.push_back(g);
  config::GroupPolicyConfig cl;
  cl.group = "claude";
  cl.degradation = config::DegradationConfig{config::DegradationMode::stale_cache, "", {}, "", {}};
  fp.model_groups.push_back(cl);

  const auto s = Circuits::setup_from(cfg);
  EXPECT_EQ(s.deployment_ids, (std::vector<std::string>{"gpt-4o/0", "gpt-4o/1", "claude/0", "mini/0"}));
  EXPECT_EQ(s.deployment_groups, (std::vector<std::string>{"gpt-4o", "gpt-4o", "claude", "mini"}));
  EXPECT_EQ(s.deployment_providers, (std::vector<std::string>{"openai", "azure", "anthropic", "openai"}));
  ASSERT_EQ(s.deployment_settings.size(), 4u);
  const auto& a = s.deployment_settings[0];
  EXPECT_EQ(a.consecutive_failures, 6);            // group
  EXPECT_EQ(a.window, milliseconds{30000});        // group
  EXPECT_DOUBLE_EQ(a.failure_ratio, 0.5);          // defaults
  EXPECT_EQ(a.min_requests, 10);                   // defaults
  EXPECT_EQ(a.cooldown, milliseconds{7000});       // router cooldown_time
  const auto& m = s.deployment_settings[3];
  EXPECT_EQ(m.consecutive_failures, 3);            // allowed_fails + 1
  EXPECT_EQ(m.window, milliseconds{60000});
  EXPECT_DOUBLE_EQ(m.failure_ratio, 0.5);
  EXPECT_EQ(s.provider.min_deployments, 3);
  // Feature circuits: gpt-4o (feature_circuit section) and claude (degradation), not mini.
  ASSERT_EQ(s.feature_settings.size(), 2u);
  EXPECT_EQ(s.feature_settings.at("gpt-4o").consecutive_failures, 3);
  EXPECT_EQ(s.feature_settings.at("gpt-4o").cooldown, milliseconds{30000});
  EXPECT_EQ(s.feature_settings.at("claude").consecutive_failures, 5);
  EXPECT_FALSE(s.feature_settings.contains("mini"));
}

TEST(Circuit, SetupFromDefaultsWithoutPolicy) {
  config::Config cfg;
  config::Deployment d;
  d.model_name = "g";
  d.provider_prefix = "openai";
  d.id = "g/0";
  cfg.model_list.push_back(d);
  const auto s = Circuits::setup_from(cfg);
  ASSERT_EQ(s.deployment_settings.size(), 1u);
  EXPECT_EQ(s.deployment_settings[0].consecutive_failures, 4);  // allowed_fails 3 + 1
  EXPECT_EQ(s.deployment_settings[0].cooldown, milliseconds{5000});
  EXPECT_EQ(s.deployment_settings[0].failure_ratio, 0);
  EXPECT_EQ(s.deployment_settings[0].min_requests, 20);
  EXPECT_TRUE(s.feature_settings.empty());
  // Defaults with a degradation give every group a feature circuit.
  cfg.fallback_policy.defaults.degradation = config::DegradationConfig{config::DegradationMode::fail_fast, "", {}, "", {}};
  EXPECT_EQ(Circuits::setup_from(cfg).feature_settings.size(), 1u);
  core::ManualClock clock;
  Circuits c(Circuits::setup_from(cfg), clock);
  EXPECT_EQ(c.snapshot().size(), 3u);  // deployment, provider, feature
}

TEST(Circuit, ToString) {
  EXPECT_EQ(policy::to_string(CircuitState::closed), "closed");
  EXPECT_EQ(policy::to_string(CircuitState::open), "open");
  EXPECT_EQ(policy::to_string(CircuitState::half_open), "half_open");
}

TEST(Circuit, ConcurrentAcquireGivesExactlyOneProbe) {
  core::ManualClock clock;
  std::atomic<int> transitions{0};
  Circuits c(setup(consecutive(1)), clock, [&](const CircuitTransition&) { ++transitions; });
  c.on_failure(2, kCap);
  clock.advance(seconds(5));
  std::atomic<int> probes{0}, closed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        switch (c.acquire(2)) {
          case Permit::probe: ++probes; break;
          case Permit::closed: ++closed; break;
          case Permit::denied: break;
        }
        (void)c.snapshot();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(probes.load(), 1);
  EXPECT_EQ(closed.load(), 0);
  EXPECT_EQ(transitions.load(), 2);  // closed → open, open → half_open (reported once)
}

TEST(Circuit, ReleasedFeatureProbeIsAvailableAgain) {
  core::ManualClock clock;
  auto st = setup();
  st.feature_settings["g"] = policy::FeatureCircuitSettings{1, milliseconds{1000}};
  Circuits c(std::move(st), clock);
  c.on_feature_result("g", false, Permit::closed);
  ASSERT_EQ(c.feature_state("g"), CircuitState::open);
  clock.advance(seconds(1));
  auto p = c.acquire_feature("g");
  ASSERT_EQ(p, Permit::probe);
  EXPECT_EQ(c.acquire_feature("g"), Permit::denied);
  c.release_feature("g", p);  // the probe's client left: no verdict
  EXPECT_EQ(c.feature_state("g"), CircuitState::half_open);
  EXPECT_EQ(c.acquire_feature("g"), Permit::probe);
}

TEST(Circuit, ALostProbeIsGivenUpAfterItsLease) {
  core::ManualClock clock;
  auto st = setup();
  Circuits c(std::move(st), clock);
  c.open_deployment(0, "test");
  clock.advance(seconds(60));  // past any cooldown of the test setup
  ASSERT_EQ(c.deployment_state(0), CircuitState::half_open);
  ASSERT_EQ(c.acquire(0), Permit::probe);  // ... and never reported
  EXPECT_EQ(c.acquire(0), Permit::denied);
  clock.advance(policy::kProbeLease - milliseconds(1));
  EXPECT_EQ(c.acquire(0), Permit::denied) << "still within the lease";
  clock.advance(milliseconds(1));
  EXPECT_EQ(c.acquire(0), Permit::probe) << "the lost probe is given up";
}

TEST(Circuit, AnOpeningFromAnotherInstanceOpensTheSameCircuitUntilTheSameInstant) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(3)), clock, rec.fn());
  c.on_failure(0, kCap);
  c.on_failure(0, kCap);
  c.on_failure(0, kCap);
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_FALSE(rec.seen[0].remote) << "decided here";
  EXPECT_EQ(rec.seen[0].open_for, milliseconds{5000}) << "its cooldown, for the other instances";
  rec.seen.clear();

  c.open_remote("deployment", "a2", "3 consecutive failures", milliseconds{1200});
  EXPECT_EQ(c.deployment_state(1), CircuitState::open);
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_TRUE(rec.seen[0].remote) << "not to be published again";
  EXPECT_EQ(rec.seen[0].reason, "opened on another instance: 3 consecutive failures");
  clock.advance(milliseconds{1199});
  EXPECT_EQ(c.deployment_state(1), CircuitState::open);
  clock.advance(milliseconds{1});
  EXPECT_EQ(c.deployment_state(1), CircuitState::half_open) << "half-open when the other instance's cooldown ends";
  EXPECT_EQ(c.acquire(1), Permit::probe);

  c.open_remote("provider", "anthropic", "commercial_limit", milliseconds{60000});
  EXPECT_EQ(c.provider_state("anthropic"), CircuitState::open);
  rec.seen.clear();
  c.open_remote("deployment", "no-such-id", "x", milliseconds{1000});
  c.open_remote("nonsense", "a1", "x", milliseconds{1000});
  EXPECT_TRUE(rec.seen.empty()) << "unknown ids and scopes are ignored";
}

TEST(Circuit, TheClusterProbeGateDecidesWhoProbesAndARemoteCloseClosesTheCopy) {
  core::ManualClock clock;
  Recorder rec;
  Circuits c(setup(consecutive(1, milliseconds{1000})), clock, rec.fn());
  int asked = 0;
  bool win = false;
  c.set_probe_gate([&](const std::string& scope, const std::string& id) {
    ++asked;
    EXPECT_EQ(scope, "deployment");
    EXPECT_EQ(id, "a1");
    return win;
  });
  c.on_failure(0, kCap);
  clock.advance(milliseconds{1000});
  EXPECT_EQ(c.deployment_state(0), CircuitState::half_open);
  EXPECT_EQ(c.acquire(0), Permit::denied) << "another instance carries the probe";
  EXPECT_EQ(c.acquire(0), Permit::denied);
  EXPECT_EQ(asked, 1) << "asked once per half-open period, not per request";
  c.close_remote("deployment", "a1");
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed) << "that probe succeeded";
  EXPECT_TRUE(rec.seen.back().remote);
  EXPECT_EQ(c.acquire(0), Permit::closed);
  // Next time this instance wins the gate and probes itself.
  win = true;
  c.on_failure(0, kCap);
  clock.advance(milliseconds{1000});
  EXPECT_EQ(c.acquire(0), Permit::probe);
  EXPECT_EQ(asked, 2);
  c.close_remote("deployment", "unknown-id");  // ignored
}

TEST(Circuit, AllowedFailsPolicyGivesAClassItsOwnThreshold) {
  core::ManualClock clock;
  Recorder rec;
  auto s = consecutive(2);
  s.class_allowed_fails[static_cast<std::size_t>(kCap)] = 3;  // RateLimitErrorAllowedFails: 3
  Circuits c(setup(s), clock, rec.fn());
  for (int i = 0; i < 3; ++i) c.on_failure(0, kCap);  // three allowed: still closed
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  c.on_failure(0, FailureClass::transient_provider_error);  // the general count is 1 of 2
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  c.on_failure(0, kCap);  // the fourth rate limit in a row
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].reason, "4 consecutive retryable_capacity failures (allowed_fails_policy)");
}

TEST(Circuit, AllowedFailsPolicyCountResetsOnSuccessAndOtherClassesKeepTheirs) {
  core::ManualClock clock;
  auto s = consecutive(2);
  s.class_allowed_fails[static_cast<std::size_t>(kCap)] = 1;
  Circuits c(setup(s), clock);
  c.on_failure(0, kCap);
  c.on_success(0);
  c.on_failure(0, kCap);  // 1 in a row again: allowed
  EXPECT_EQ(c.deployment_state(0), CircuitState::closed);
  c.on_failure(1, FailureClass::transient_provider_error);
  c.on_failure(1, FailureClass::transient_provider_error);  // no policy for this class: allowed_fails
  EXPECT_EQ(c.deployment_state(1), CircuitState::open);
  c.on_failure(0, kCap);
  EXPECT_EQ(c.deployment_state(0), CircuitState::open);
}
