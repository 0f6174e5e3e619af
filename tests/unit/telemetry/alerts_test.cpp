// Alerts: ring buffer (newest first, bounded), counts per kind, de-duplication, log line,
// metrics export, thread safety.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "telemetry/alerts.hpp"
#include "telemetry/metrics.hpp"

namespace tollgate::telemetry {
namespace {

struct FakeWall {
  std::shared_ptr<std::atomic<std::int64_t>> t = std::make_shared<std::atomic<std::int64_t>>(1'700'000'000'000);
  Alerts::WallClock fn() const {
    return [t = t] { return t->load(); };
  }
  void advance(std::int64_t ms) { *t += ms; }
};

TEST(Alerts, RecentIsNewestFirstWithWallClockTimes) {
  FakeWall wall;
  Alerts alerts({}, wall.fn());
  EXPECT_TRUE(alerts.raise("commercial_limit", "openai", "insufficient_quota on dep-1"));
  wall.advance(5);
  EXPECT_TRUE(alerts.raise("deployment_misconfigured", "azure-eu", "401 from the deployment"));
  auto r = alerts.recent();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (Alert{"deployment_misconfigured", "azure-eu", "401 from the deployment", 1'700'000'000'005, 0}));
  EXPECT_EQ(r[1], (Alert{"commercial_limit", "openai", "insufficient_quota on dep-1", 1'700'000'000'000, 0}));
}

TEST(Alerts, RingKeepsTheLastCapacityAlertsAndCountsEveryOne) {
  FakeWall wall;
  Alerts alerts({.dedup_window_ms = 0}, wall.fn());
  for (int i = 0; i < 250; ++i) {
    alerts.raise(i % 5 == 0 ? "circuit_open" : "commercial_limit", "s" + std::to_string(i), "m");
    wall.advance(1);
  }
  auto r = alerts.recent();
  ASSERT_EQ(r.size(), 200u);  // default capacity
  EXPECT_EQ(r.front().subject, "s249");
  EXPECT_EQ(r.back().subject, "s50");
  EXPECT_EQ(alerts.count("circuit_open"), 50u);
  EXPECT_EQ(alerts.count("commercial_limit"), 200u);
  EXPECT_EQ(alerts.count("nope"), 0u);
  EXPECT_EQ(alerts.total(), 250u);
  EXPECT_EQ(alerts.counts().size(), 2u);
}

TEST(Alerts, IdenticalKindAndSubjectWithinTheWindowIsSuppressedButCounted) {
  FakeWall wall;
  Alerts alerts({}, wall.fn());  // 10 s window
  EXPECT_TRUE(alerts.raise("commercial_limit", "openai", "first"));
  wall.advance(3000);
  EXPECT_FALSE(alerts.raise("commercial_limit", "openai", "again"));
  EXPECT_TRUE(alerts.raise("commercial_limit", "anthropic", "other subject"));
  EXPECT_TRUE(alerts.raise("circuit_open", "openai", "other kind"));
  wall.advance(6999);  // 9999 ms after the first: still inside
  EXPECT_FALSE(alerts.raise("commercial_limit", "openai", "again"));
  wall.advance(1);  // 10 s after the first logged one: logged again
  EXPECT_TRUE(alerts.raise("commercial_limit", "openai", "later"));

  EXPECT_EQ(alerts.count("commercial_limit"), 5u);
  EXPECT_EQ(alerts.suppressed(), 2u);
  auto r = alerts.recent();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].message, "later");
  EXPECT_EQ(r[0].repeats, 0u);
  EXPECT_EQ(r[3].message, "first");
  EXPECT_EQ(r[3].repeats, 2u);
}

TEST(Alerts, LogsAtErrorLevelWithTheAlertPrefix) {
  std::ostringstream os;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(os);
  auto logger = std::make_shared<spdlog::logger>("alerts-test", sink);
  logger->set_pattern("%l %v");
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  {
    Alerts alerts;
    alerts.raise("commercial_limit", "openai", "insufficient_quota");
    alerts.raise("commercial_limit", "openai", "suppressed: not logged");
  }
  spdlog::set_default_logger(previous);
  EXPECT_EQ(os.str(), "error ALERT commercial_limit openai: insufficient_quota\n");
}

TEST(Alerts, ExportedAsACounterByKind) {
  Alerts alerts({.dedup_window_ms = 0});
  Registry reg;
  alerts.register_metrics(reg);
  alerts.raise("circuit_open", "d1", "m");
  alerts.raise("commercial_limit", "openai", "m");
  alerts.raise("commercial_limit", "openai", "m");
  EXPECT_EQ(reg.render(),
            "# HELP tollgate_alerts_total Operator alerts raised, by kind (duplicates included).\n"
            "# TYPE tollgate_alerts_total counter\n"
            "tollgate_alerts_total{kind=\"circuit_open\"} 1\n"
            "tollgate_alerts_total{kind=\"commercial_limit\"} 2\n");
}

TEST(Alerts, ZeroCapacityKeepsNothingButCounts) {
  Alerts alerts({.capacity = 0, .dedup_window_ms = 0});
  alerts.raise("k", "s", "m");
  EXPECT_TRUE(alerts.recent().empty());
  EXPECT_EQ(alerts.count("k"), 1u);
}

TEST(Alerts, ConcurrentRaisesAreAllCounted) {
  auto null_logger = std::make_shared<spdlog::logger>("null");  // no sinks: keep test output quiet
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(null_logger);
  Alerts alerts;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        alerts.raise("k" + std::to_string(t % 2), "s" + std::to_string(i % 50), "m");
        if (i % 100 == 0) (void)alerts.recent();
      }
    });
  for (auto& th : threads) th.join();
  spdlog::set_default_logger(previous);
  EXPECT_EQ(alerts.total(), 4000u);
  EXPECT_EQ(alerts.count("k0") + alerts.count("k1"), 4000u);
  EXPECT_EQ(alerts.recent().size(), 100u);  // 2 kinds × 50 subjects logged once each (10 s window)
  EXPECT_EQ(alerts.suppressed(), 3900u);
}

}  // namespace
}  // namespace tollgate::telemetry
