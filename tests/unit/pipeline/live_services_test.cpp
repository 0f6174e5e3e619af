// Config hot reload in the pipeline: Services::next shares the process-wide components, rebuilds
// the config's own, carries circuit state by deployment id; LiveServices swaps snapshots while a
// holder of the old one keeps it whole.
#include "pipeline/live_services.hpp"

#include <gtest/gtest.h>

#include "config/loader.hpp"

namespace tollgate::pipeline {
namespace {

std::shared_ptr<const config::Config> config_of(const std::string& yaml) {
  auto r =
      config::load_config_string(yaml, "live.yaml", config::EnvLookup([](std::string_view) { return std::nullopt; }));
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors.front().to_string());
  return r.config;
}

constexpr const char* kFirst = R"(
model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o-mini, api_key: k, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: dep-a}
  - model_name: b
    litellm_params: {model: openai/gpt-4o-mini, api_key: k}
    model_info: {id: dep-b}
router_settings: {allowed_fails: 0, cooldown_time: 60}
)";

constexpr const char* kSecond = R"(
model_list:
  - model_name: c
    litellm_params: {model: openai/gpt-4o-mini, api_key: k}
    model_info: {id: dep-c}
  - model_name: b
    litellm_params: {model: openai/gpt-4o, api_key: k, input_cost_per_token: 0.000003, output_cost_per_token: 0.000004}
    model_info: {id: dep-b}
router_settings: {allowed_fails: 0, cooldown_time: 60}
)";

TEST(ServicesNext, SharesProcessStateRebuildsConfigStateCarriesCircuitsById) {
  core::ManualClock clock;
  auto first = Services::make(config_of(kFirst), clock);
  first->circuits->on_failure(1, config::FailureClass::retryable_capacity);  // dep-b opens (allowed_fails 0)
  ASSERT_EQ(first->circuits->deployment_state(1), policy::CircuitState::open);

  auto next = Services::next(*first, config_of(kSecond));
  ASSERT_TRUE(next) << next.error();
  const auto& s = **next;
  // Shared: the ledger, limiter, metrics, stale cache.
  EXPECT_EQ(s.ledger, first->ledger);
  EXPECT_EQ(s.limiter, first->limiter);
  EXPECT_EQ(s.metrics, first->metrics);
  EXPECT_EQ(s.stale_cache, first->stale_cache);
  // Rebuilt: groups, prices, circuits (dep-b now at index 1 again, dep-c new at 0).
  EXPECT_TRUE(s.groups->contains("c"));
  EXPECT_FALSE(s.groups->contains("a"));
  EXPECT_TRUE(first->groups->contains("a"));  // the old snapshot is untouched
  EXPECT_NE(s.circuits, first->circuits);
  EXPECT_EQ(s.circuits->deployment_state(0), policy::CircuitState::closed);
  EXPECT_EQ(s.circuits->deployment_state(1), policy::CircuitState::open);
  ASSERT_EQ(s.prices.size(), 2u);
  EXPECT_EQ(s.prices[1].price.input.picos, 3'000'000);  // dep-b's new override: $0.000003 = 3e6 pico
  EXPECT_EQ(first->prices[0].price.input.picos, 1'000'000);
  // Scrape-time metrics read the latest snapshot's circuits.
  EXPECT_EQ(s.latest, first->latest);
  EXPECT_EQ(s.latest->circuits, s.circuits);
}

TEST(LiveServices, ARequestKeepsTheSnapshotItTook) {
  core::ManualClock clock;
  auto first = Services::make(config_of(kFirst), clock);
  LiveServices live(first);
  auto held = live.current();  // a request in flight
  auto next = Services::next(*first, config_of(kSecond));
  ASSERT_TRUE(next);
  live.install(*next);
  first.reset();
  EXPECT_EQ(live.current(), *next);
  EXPECT_TRUE(held->groups->contains("a"));  // still whole
  EXPECT_EQ(held->config->model_list.size(), 2u);
  EXPECT_EQ(held->config->model_list[0].id, "dep-a");
}

}  // namespace
}  // namespace tollgate::pipeline
