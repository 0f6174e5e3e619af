// Config hot reload: a reloaded config's circuits carry the running ones' state by deployment id.
#include <gtest/gtest.h>

#include "policy/circuit.hpp"

using namespace tollgate;
using config::FailureClass;
using policy::Circuits;
using policy::CircuitState;
using policy::Permit;
using std::chrono::milliseconds;

namespace {

Circuits::Setup setup_of(std::vector<std::string> ids) {
  Circuits::Setup st;
  policy::CircuitSettings s;
  s.consecutive_failures = 2;
  s.cooldown = milliseconds{10000};
  st.deployment_ids = ids;
  st.deployment_groups.assign(ids.size(), "g");
  st.deployment_providers.assign(ids.size(), "openai");
  st.deployment_settings.assign(ids.size(), s);
  st.provider.open_ratio = 1.0;
  st.provider.min_deployments = 10;  // the provider never opens in these tests
  return st;
}

TEST(CircuitReload, StateFollowsTheDeploymentIdNotItsIndex) {
  core::ManualClock clock;
  int transitions = 0;
  Circuits running(setup_of({"a", "b"}), clock, [&](const policy::CircuitTransition&) { ++transitions; });
  running.on_failure(1, FailureClass::retryable_capacity);
  running.on_failure(1, FailureClass::retryable_capacity);
  ASSERT_EQ(running.deployment_state(1), CircuitState::open);
  const int before = transitions;

  // "b" moves to index 0, "a" is removed, "c" is new.
  Circuits next(setup_of({"b", "c"}), running);
  EXPECT_EQ(next.deployment_state(0), CircuitState::open);  // b, still cooling down
  EXPECT_EQ(next.acquire(0), Permit::denied);
  EXPECT_EQ(next.deployment_state(1), CircuitState::closed);  // c starts closed
  EXPECT_EQ(next.acquire(1), Permit::closed);

  // The cooldown carried is the one that was running: half-open once it ends, one probe.
  clock.advance(milliseconds{10001});
  EXPECT_EQ(next.acquire(0), Permit::probe);
  next.on_success(0);
  EXPECT_EQ(next.deployment_state(0), CircuitState::closed);
  EXPECT_GT(transitions, before);  // the running circuits' observer is the reloaded ones' too
}

TEST(CircuitReload, ConsecutiveFailuresCarryOver) {
  core::ManualClock clock;
  Circuits running(setup_of({"a"}), clock);
  running.on_failure(0, FailureClass::retryable_capacity);  // one of two
  Circuits next(setup_of({"z", "a"}), running);
  next.on_failure(1, FailureClass::retryable_capacity);  // the second opens it
  EXPECT_EQ(next.deployment_state(1), CircuitState::open);
  EXPECT_EQ(next.deployment_state(0), CircuitState::closed);
}

}  // namespace
