#include "budget/window.hpp"

#include <gtest/gtest.h>

using namespace tollgate::budget;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

SystemTime at(year_month_day d, hours h = 0h, minutes m = 0min, seconds s = 0s) {
  return SystemTime(sys_days(d) + h + m + s);
}

BudgetPeriod parse(std::string_view text) {
  auto p = parse_budget_duration(text);
  EXPECT_TRUE(p.has_value()) << text << ": " << (p ? "" : p.error());
  return p.value_or(BudgetPeriod{});
}

const ResetTimezone kUtc{};
const ResetTimezone kIst{5h + 30min};
const ResetTimezone kPst{-8h};

}  // namespace

TEST(BudgetDuration, ParsesLiteLLMStrings) {
  EXPECT_EQ(parse("30s"), (BudgetPeriod{PeriodUnit::seconds, 30}));
  EXPECT_EQ(parse("10m"), (BudgetPeriod{PeriodUnit::seconds, 600}));
  EXPECT_EQ(parse("1h"), (BudgetPeriod{PeriodUnit::seconds, 3600}));
  EXPECT_EQ(parse("1d"), (BudgetPeriod{PeriodUnit::days, 1}));
  EXPECT_EQ(parse("7d"), (BudgetPeriod{PeriodUnit::days, 7}));
  EXPECT_EQ(parse("1w"), (BudgetPeriod{PeriodUnit::days, 7}));
  EXPECT_EQ(parse("1mo"), (BudgetPeriod{PeriodUnit::months, 1}));
  EXPECT_EQ(parse("3mo"), (BudgetPeriod{PeriodUnit::months, 3}));
  EXPECT_EQ(parse(" 2d "), (BudgetPeriod{PeriodUnit::days, 2}));
}

TEST(BudgetDuration, ThirtyDaysIsMonthlyLikeLiteLLM) {
  EXPECT_EQ(parse("30d"), parse("1mo"));
  EXPECT_EQ(parse("31d"), (BudgetPeriod{PeriodUnit::days, 31}));
}

TEST(BudgetDuration, RejectsBadInput) {
  for (const char* bad : {"", "d", "0d", "-1d", "5x", "1D", "1 d", "1.5h", "mo", "99999999999999999999d", "36600000d",
                          "1d1h"}) {
    auto p = parse_budget_duration(bad);
    EXPECT_FALSE(p.has_value()) << bad;
    if (!p) {
      EXPECT_FALSE(p.error().empty());
    }
  }
}

TEST(BudgetDuration, ToStringRoundTrips) {
  for (const char* text : {"30s", "10m", "1h", "1d", "7d", "1mo", "3mo", "90s", "2h"}) {
    const BudgetPeriod p = parse(text);
    EXPECT_EQ(to_string(p), text);
    EXPECT_EQ(parse(to_string(p)), p);
  }
}

TEST(ResetTimezoneParse, FixedOffsetsAndUtc) {
  EXPECT_EQ(parse_reset_timezone("UTC").value(), kUtc);
  EXPECT_EQ(parse_reset_timezone("Etc/UTC").value(), kUtc);
  EXPECT_EQ(parse_reset_timezone("+05:30").value(), kIst);
  EXPECT_EQ(parse_reset_timezone("UTC+05:30").value(), kIst);
  EXPECT_EQ(parse_reset_timezone("+0530").value(), kIst);
  EXPECT_EQ(parse_reset_timezone("-08:00").value(), kPst);
  EXPECT_EQ(parse_reset_timezone("-08").value(), kPst);
  EXPECT_EQ(kIst.to_string(), "+05:30");
  EXPECT_EQ(kPst.to_string(), "-08:00");
  EXPECT_EQ(kUtc.to_string(), "UTC");
}

TEST(ResetTimezoneParse, RejectsIanaNamesAndBadOffsets) {
  for (const char* bad : {"Asia/Kolkata", "America/Los_Angeles", "+25:00", "+05:60", "5:30", "+5:30", "", "UTC+"}) {
    EXPECT_FALSE(parse_reset_timezone(bad).has_value()) << bad;
  }
  EXPECT_NE(parse_reset_timezone("Asia/Kolkata").error().find("+05:30"), std::string::npos);
}

TEST(ResetTimezoneParse, FallsBackToUtcWithWarning) {
  std::string warning;
  EXPECT_EQ(reset_timezone_or_utc("Asia/Kolkata", &warning), kUtc);
  EXPECT_NE(warning.find("falling back to UTC"), std::string::npos);
  warning.clear();
  EXPECT_EQ(reset_timezone_or_utc("", &warning), kUtc);
  EXPECT_TRUE(warning.empty());
  EXPECT_EQ(reset_timezone_or_utc("+05:30", &warning), kIst);
  EXPECT_TRUE(warning.empty());
}

TEST(Window, SecondsAlignToEpoch) {
  const BudgetPeriod p = parse("30s");
  const SystemTime t = SystemTime(seconds(1000)) + 500ms;
  const Window w = window_of(p, t, kUtc);
  EXPECT_EQ(w.start, SystemTime(seconds(990)));
  EXPECT_EQ(w.end, SystemTime(seconds(1020)));
  // The boundary itself belongs to the next window.
  EXPECT_EQ(window_start(p, SystemTime(seconds(1020)), kUtc), SystemTime(seconds(1020)));
  EXPECT_EQ(window_start(p, SystemTime(seconds(1020)) - 1ns, kUtc), SystemTime(seconds(990)));
}

TEST(Window, HoursIgnoreTimezone) {
  const BudgetPeriod p = parse("1h");
  const SystemTime t = at(2024y / March / 10, 12h, 34min);
  EXPECT_EQ(window_start(p, t, kUtc), at(2024y / March / 10, 12h));
  EXPECT_EQ(window_start(p, t, kIst), at(2024y / March / 10, 12h));
  EXPECT_EQ(next_reset(p, t, kIst), at(2024y / March / 10, 13h));
}

TEST(Window, DayResetsAtUtcMidnight) {
  const BudgetPeriod p = parse("1d");
  const Window w = window_of(p, at(2024y / March / 10, 15h), kUtc);
  EXPECT_EQ(w.start, at(2024y / March / 10));
  EXPECT_EQ(w.end, at(2024y / March / 11));
}

TEST(Window, DayResetsAtMidnightInResetTimezone) {
  const BudgetPeriod p = parse("1d");
  // 20:00 UTC is 01:30 the next day in +05:30: the window began at local midnight = 18:30 UTC.
  Window w = window_of(p, at(2024y / March / 10, 20h), kIst);
  EXPECT_EQ(w.start, at(2024y / March / 10, 18h, 30min));
  EXPECT_EQ(w.end, at(2024y / March / 11, 18h, 30min));
  w = window_of(p, at(2024y / March / 10, 18h, 29min), kIst);
  EXPECT_EQ(w.start, at(2024y / March / 9, 18h, 30min));
  // -08:00: local midnight is 08:00 UTC.
  w = window_of(p, at(2024y / March / 10, 7h), kPst);
  EXPECT_EQ(w.start, at(2024y / March / 9, 8h));
  EXPECT_EQ(w.end, at(2024y / March / 10, 8h));
}

TEST(Window, WeekStartsMonday) {
  const BudgetPeriod p = parse("7d");
  const Window w = window_of(p, at(2024y / March / 13, 10h), kUtc);  // a Wednesday
  EXPECT_EQ(weekday(floor<days>(w.start)), Monday);
  EXPECT_EQ(w.start, at(2024y / March / 11));
  EXPECT_EQ(w.end, at(2024y / March / 18));
  // Sunday 23:00 local in +05:30 still belongs to the week that began Monday local midnight.
  const Window wi = window_of(p, at(2024y / March / 17, 17h, 30min), kIst);
  EXPECT_EQ(wi.start, at(2024y / March / 10, 18h, 30min));
}

TEST(Window, MonthResetsOnTheFirstIncludingLeapYears) {
  const BudgetPeriod p = parse("1mo");
  Window w = window_of(p, at(2024y / February / 29, 23h, 59min, 59s), kUtc);
  EXPECT_EQ(w.start, at(2024y / February / 1));
  EXPECT_EQ(w.end, at(2024y / March / 1));
  w = window_of(p, at(2024y / March / 1), kUtc);
  EXPECT_EQ(w.start, at(2024y / March / 1));
  EXPECT_EQ(w.end, at(2024y / April / 1));
  w = window_of(p, at(2023y / February / 28, 12h), kUtc);
  EXPECT_EQ(w.end, at(2023y / March / 1));
  EXPECT_EQ(w.end - w.start, days(28));
  w = window_of(p, at(2024y / December / 31, 23h), kUtc);
  EXPECT_EQ(w.start, at(2024y / December / 1));
  EXPECT_EQ(w.end, at(2025y / January / 1));
  w = window_of(p, at(2100y / February / 15), kUtc);  // 2100 is not a leap year
  EXPECT_EQ(w.end - w.start, days(28));
}

TEST(Window, MonthInResetTimezone) {
  const BudgetPeriod p = parse("1mo");
  // 19:00 UTC on Jan 31 is 00:30 on Feb 1 in +05:30.
  const Window w = window_of(p, at(2024y / January / 31, 19h), kIst);
  EXPECT_EQ(w.start, at(2024y / January / 31, 18h, 30min));
  EXPECT_EQ(w.end, at(2024y / February / 29, 18h, 30min));
}

TEST(Window, QuartersGroupMonthsFromJanuary) {
  const Window w = window_of(parse("3mo"), at(2024y / May / 20), kUtc);
  EXPECT_EQ(w.start, at(2024y / April / 1));
  EXPECT_EQ(w.end, at(2024y / July / 1));
}

TEST(Window, BeforeTheEpoch) {
  const Window w = window_of(parse("1d"), at(1969y / December / 31, 23h), kUtc);
  EXPECT_EQ(w.start, at(1969y / December / 31));
  EXPECT_EQ(w.end, at(1970y / January / 1));
}

TEST(Window, WindowsContainNowAndTile) {
  const ResetTimezone zones[] = {kUtc, kIst, kPst};
  for (const char* text : {"30s", "10m", "1h", "1d", "2d", "7d", "1mo", "3mo"}) {
    const BudgetPeriod p = parse(text);
    for (const auto& tz : zones) {
      SystemTime t = at(2023y / December / 25, 3h, 17min, 11s) + 123ms;
      for (int i = 0; i < 200; ++i) {
        const Window w = window_of(p, t, tz);
        ASSERT_LE(w.start, t) << text;
        ASSERT_LT(t, w.end) << text;
        ASSERT_EQ(window_of(p, w.end, tz).start, w.end) << text;      // the next window starts at the end
        ASSERT_EQ(window_of(p, w.end - 1ns, tz).start, w.start) << text;
        t += hours(37) + minutes(13);
      }
    }
  }
}
