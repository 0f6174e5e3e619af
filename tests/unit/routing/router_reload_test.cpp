// Config hot reload: a reloaded config's routing state carries the running one's rpm minute
// counts by deployment id; in-flight counts start at 0 (the attempts in flight report to the old).
#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "routing/router.hpp"

using namespace tollgate;

namespace {

std::shared_ptr<const config::Config> load(const std::string& yaml) {
  auto r = config::load_config_string(
      yaml, "<test>", config::EnvLookup([](std::string_view) -> std::optional<std::string> { return std::nullopt; }));
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.config;
}

TEST(RouterReload, RpmCountsFollowTheDeploymentId) {
  auto before = load(R"(
model_list:
  - model_name: g
    litellm_params: {model: openai/a, api_base: "http://127.0.0.1:1/v1", rpm: 1}
    model_info: {id: a}
router_settings: {routing_strategy: least-busy}
)");
  core::ManualClock clock;
  routing::RouterState running(before, clock);
  ASSERT_EQ(running.select("g", {}, 0.5), 0u);
  running.on_attempt_start(0);  // a's one request of this minute
  EXPECT_FALSE(running.select("g", {}, 0.5));

  auto after = load(R"(
model_list:
  - model_name: g
    litellm_params: {model: openai/b, api_base: "http://127.0.0.1:1/v1", rpm: 1}
    model_info: {id: b}
  - model_name: g
    litellm_params: {model: openai/a, api_base: "http://127.0.0.1:1/v1", rpm: 1}
    model_info: {id: a}
router_settings: {routing_strategy: least-busy}
)");
  routing::RouterState next(after, clock, nullptr, running);
  EXPECT_EQ(next.in_flight(1), 0);  // a's attempt in flight reports to `running`
  EXPECT_EQ(running.in_flight(0), 1);
  // a (now index 1) is still at its limit this minute; b (new) is not.
  EXPECT_EQ(next.select("g", {}, 0.5), 0u);
  EXPECT_EQ(next.select("g", {0}, 0.5), 0u);  // only b is available, even when avoided
  next.on_attempt_start(0);
  EXPECT_FALSE(next.select("g", {}, 0.5));
  // The next minute both are free again.
  clock.advance(std::chrono::minutes(1));
  EXPECT_TRUE(next.select("g", {}, 0.5));
}

}  // namespace
