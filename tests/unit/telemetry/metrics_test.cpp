// The Prometheus registry: exact text exposition (format 0.0.4), escaping, histogram buckets,
// collectors, registration rules and concurrent updates.
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/metrics.hpp"

namespace tollgate::telemetry {
namespace {

TEST(Metrics, RenderIsExactForASmallRegistry) {
  Registry reg;
  auto& requests = reg.counter("tollgate_requests_total", "Client requests.", {"model_group", "status"});
  auto& inflight = reg.gauge("tollgate_inflight_requests", "Requests in flight.");
  auto& up = reg.counter("tollgate_restarts_total", "Restarts.");
  requests.inc({"gpt-4o", "200"});
  requests.inc({"gpt-4o", "200"});
  requests.add({"claude", "429"}, 3);
  requests.inc({"claude", "200"});
  inflight.set({}, 7);
  inflight.dec();
  (void)up;  // unlabeled families exist at 0 from registration
  EXPECT_EQ(reg.render(),
            "# HELP tollgate_requests_total Client requests.\n"
            "# TYPE tollgate_requests_total counter\n"
            "tollgate_requests_total{model_group=\"claude\",status=\"200\"} 1\n"
            "tollgate_requests_total{model_group=\"claude\",status=\"429\"} 3\n"
            "tollgate_requests_total{model_group=\"gpt-4o\",status=\"200\"} 2\n"
            "# HELP tollgate_inflight_requests Requests in flight.\n"
            "# TYPE tollgate_inflight_requests gauge\n"
            "tollgate_inflight_requests 6\n"
            "# HELP tollgate_restarts_total Restarts.\n"
            "# TYPE tollgate_restarts_total counter\n"
            "tollgate_restarts_total 0\n");
  EXPECT_EQ(requests.value({"claude", "429"}), 3);
  EXPECT_EQ(requests.value({"nope", "x"}), 0);
  EXPECT_EQ(requests.size(), 3u);  // value() does not create children
  EXPECT_EQ(inflight.value(), 6);
}

// The hot paths find children by views, the rest by strings: both reach the same child, and
// values that only differ in where one label ends and the next begins are different children.
TEST(Metrics, ViewsAndStringsFindTheSameChild) {
  Registry reg;
  auto& c = reg.counter("tollgate_x_total", "X.", {"a", "b"});
  const std::string a = "gpt", b = "200";
  c.inc(std::array<std::string_view, 2>{a, b});
  c.inc({"gpt", "200"});
  c.add(std::array<std::string_view, 2>{"gpt", "200"}, 2);
  c.inc(std::array<std::string_view, 2>{"gpt2", "00"});
  c.inc(std::array<std::string_view, 2>{"", "gpt200"});
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.value({"gpt", "200"}), 4);
  EXPECT_EQ(c.value({"gpt2", "00"}), 1);
  EXPECT_EQ(c.value({"", "gpt200"}), 1);
}

TEST(Metrics, LabeledFamilyWithoutChildrenRendersHeaderOnly) {
  Registry reg;
  reg.counter("a_total", "A.", {"x"});
  EXPECT_EQ(reg.render(), "# HELP a_total A.\n# TYPE a_total counter\n");
}

TEST(Metrics, LabelValuesAndHelpAreEscaped) {
  Registry reg;
  auto& c = reg.counter("esc_total", "Help with \\ backslash\nand newline, \"quotes\" kept.", {"v"});
  c.inc({"a\"b\\c\nd"});
  EXPECT_EQ(reg.render(),
            "# HELP esc_total Help with \\\\ backslash\\nand newline, \"quotes\" kept.\n"
            "# TYPE esc_total counter\n"
            "esc_total{v=\"a\\\"b\\\\c\\nd\"} 1\n");
  EXPECT_EQ(escape_label_value("plain-ünïcode"), "plain-ünïcode");
}

TEST(Metrics, ValueFormatting) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(1e6), "1000000");
  EXPECT_EQ(format_value(0.25), "0.25");
  EXPECT_EQ(format_value(2.5), "2.5");
  EXPECT_EQ(format_value(1e-7), "1e-07");
  EXPECT_EQ(format_value(1e300), "1e+300");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry reg;
  auto& h = reg.histogram("tollgate_attempt_duration_ms", "Attempt latency.", {"deployment"}, {10, 100, 1000});
  for (double v : {5.0, 10.0, 10.5, 99.0, 1000.0, 5000.0}) h.observe({"d1"}, v);
  h.observe({"d0"}, 0.5);
  h.observe({"d0"}, std::numeric_limits<double>::quiet_NaN());  // ignored
  EXPECT_EQ(reg.render(),
            "# HELP tollgate_attempt_duration_ms Attempt latency.\n"
            "# TYPE tollgate_attempt_duration_ms histogram\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d0\",le=\"10\"} 1\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d0\",le=\"100\"} 1\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d0\",le=\"1000\"} 1\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d0\",le=\"+Inf\"} 1\n"
            "tollgate_attempt_duration_ms_sum{deployment=\"d0\"} 0.5\n"
            "tollgate_attempt_duration_ms_count{deployment=\"d0\"} 1\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d1\",le=\"10\"} 2\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d1\",le=\"100\"} 4\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d1\",le=\"1000\"} 5\n"
            "tollgate_attempt_duration_ms_bucket{deployment=\"d1\",le=\"+Inf\"} 6\n"
            "tollgate_attempt_duration_ms_sum{deployment=\"d1\"} 6124.5\n"
            "tollgate_attempt_duration_ms_count{deployment=\"d1\"} 6\n");
  EXPECT_EQ(h.count({"d1"}), 6u);
  EXPECT_EQ(h.with({"d1"}).cumulative(0), 2u);  // le is inclusive: 10 lands in le="10"
}

TEST(Metrics, UnlabeledHistogramAndFractionalBounds) {
  Registry reg;
  auto& h = reg.histogram("lat_ms", "L.", {}, {0.5, 2.5});
  h.observe({}, 1);
  EXPECT_EQ(reg.render(),
            "# HELP lat_ms L.\n# TYPE lat_ms histogram\n"
            "lat_ms_bucket{le=\"0.5\"} 0\nlat_ms_bucket{le=\"2.5\"} 1\nlat_ms_bucket{le=\"+Inf\"} 1\n"
            "lat_ms_sum 1\nlat_ms_count 1\n");
}

TEST(Metrics, CollectorsWriteAtScrapeTimeAfterFamiliesAndMerge) {
  Registry reg;
  reg.counter("x_total", "X.").inc();
  int state = 0;  // e.g. a circuit owned by another component
  reg.on_collect([&](Exposition& out) {
    out.begin("tollgate_circuit_state", "Circuit state (0 closed, 1 half-open, 2 open).");
    out.sample("tollgate_circuit_state", {{"scope", "deployment"}, {"id", "d1"}}, state);
  });
  reg.on_collect([](Exposition& out) {
    out.gauge("tollgate_up", "Always 1.", {}, 1);
    // Back to a family begun by another collector: merged, one HELP/TYPE.
    out.begin("tollgate_circuit_state", "ignored", MetricType::counter);
    out.sample("tollgate_circuit_state", {{"scope", "provider"}, {"id", "openai"}}, 0);
  });
  reg.on_collect([](Exposition&) { throw std::runtime_error("broken collector"); });
  const std::string expected_prefix =
      "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n"
      "# HELP tollgate_circuit_state Circuit state (0 closed, 1 half-open, 2 open).\n"
      "# TYPE tollgate_circuit_state gauge\n";
  EXPECT_EQ(reg.render(), expected_prefix +
                              "tollgate_circuit_state{scope=\"deployment\",id=\"d1\"} 0\n"
                              "tollgate_circuit_state{scope=\"provider\",id=\"openai\"} 0\n"
                              "# HELP tollgate_up Always 1.\n# TYPE tollgate_up gauge\ntollgate_up 1\n");
  state = 2;
  EXPECT_NE(reg.render().find("tollgate_circuit_state{scope=\"deployment\",id=\"d1\"} 2\n"), std::string::npos);
}

TEST(Metrics, CollectorMayCallIntoTheRegistry) {
  Registry reg;
  reg.on_collect([&](Exposition&) { reg.gauge("late", "Registered during a scrape.").set({}, 1); });
  (void)reg.render();  // no deadlock
  EXPECT_NE(reg.render().find("late 1\n"), std::string::npos);
}

TEST(Metrics, RegistrationRules) {
  Registry reg;
  auto& a = reg.counter("a_total", "A.", {"x"});
  EXPECT_EQ(&reg.counter("a_total", "other help", {"x"}), &a);  // same family
  EXPECT_THROW(reg.counter("a_total", "A.", {"y"}), std::invalid_argument);
  EXPECT_THROW(reg.gauge("a_total", "A.", {"x"}), std::invalid_argument);
  EXPECT_THROW(reg.counter("bad-name", "B."), std::invalid_argument);
  EXPECT_THROW(reg.counter("9lives", "B."), std::invalid_argument);
  EXPECT_THROW(reg.counter("ok", "B.", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(reg.counter("ok2", "B.", {"bad label"}), std::invalid_argument);
  EXPECT_THROW(reg.histogram("h", "H.", {"le"}, {1}), std::invalid_argument);
  EXPECT_THROW(reg.histogram("h", "H.", {}, {}), std::invalid_argument);
  EXPECT_THROW(reg.histogram("h", "H.", {}, {2, 1}), std::invalid_argument);
  EXPECT_THROW(reg.histogram("h", "H.", {}, {1, std::numeric_limits<double>::infinity()}), std::invalid_argument);
  reg.histogram("h", "H.", {}, {1, 2});
  EXPECT_THROW(reg.histogram("h", "H.", {}, {1, 3}), std::invalid_argument);
  EXPECT_TRUE(valid_metric_name("tollgate:rule_total"));
  EXPECT_THROW(a.inc({}), std::invalid_argument);              // wrong number of label values
  EXPECT_THROW(a.inc({"1", "2"}), std::invalid_argument);
}

TEST(Metrics, CounterIgnoresNegativeAndNaN) {
  Registry reg;
  auto& c = reg.counter("c_total", "C.");
  c.add({}, 2.5);
  c.add({}, -1);
  c.add({}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(c.value(), 2.5);
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  Registry reg;
  auto& c = reg.counter("hits_total", "H.", {"t"});
  auto& h = reg.histogram("lat_ms", "L.", {"t"}, {1, 10});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const std::string label = t % 2 ? "odd" : "even";
      Counter& cached = c.with({label});
      for (int i = 0; i < 5000; ++i) {
        cached.inc();
        c.inc({"all"});
        h.observe({label}, i % 20);
        if (i % 1000 == 0) (void)reg.render();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(c.value({"all"}), 40000);
  EXPECT_EQ(c.value({"odd"}), 20000);
  EXPECT_EQ(h.count({"even"}), 20000u);
}

}  // namespace
}  // namespace tollgate::telemetry
