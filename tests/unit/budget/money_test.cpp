#include "budget/money.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace tollgate::budget {
namespace {

TEST(ParseDollars, PlainDecimals) {
  EXPECT_EQ(parse_dollars("0.0005").value(), 500'000);
  EXPECT_EQ(parse_dollars("100").value(), 100'000'000'000);
  EXPECT_EQ(parse_dollars("0").value(), 0);
  EXPECT_EQ(parse_dollars("0.000000001").value(), 1);
  EXPECT_EQ(parse_dollars("12.5").value(), 12'500'000'000);
  EXPECT_EQ(parse_dollars(".5").value(), 500'000'000);
  EXPECT_EQ(parse_dollars("5.").value(), 5'000'000'000);
  EXPECT_EQ(parse_dollars("+1.25").value(), 1'250'000'000);
  EXPECT_EQ(parse_dollars("  7 ").value(), 7'000'000'000);
  EXPECT_EQ(parse_dollars("000123.4500").value(), 123'450'000'000);
}

TEST(ParseDollars, Scientific) {
  EXPECT_EQ(parse_dollars("1e-3").value(), 1'000'000);
  EXPECT_EQ(parse_dollars("2.5E+2").value(), 250'000'000'000);
  EXPECT_EQ(parse_dollars("1e-9").value(), 1);
  EXPECT_EQ(parse_dollars("0e400").value(), 0);
  EXPECT_EQ(parse_dollars("0.00001e5").value(), 1'000'000'000);
}

TEST(ParseDollars, FinerThanANanoRoundsUp) {
  EXPECT_EQ(parse_dollars("0.0000000001").value(), 1);
  EXPECT_EQ(parse_dollars("0.0000000011").value(), 2);
  EXPECT_EQ(parse_dollars("1.0000000000000000000001").value(), 1'000'000'001);
  EXPECT_EQ(parse_dollars("1.0000000010000").value(), 1'000'000'001);  // trailing zeros are exact
  EXPECT_EQ(parse_dollars("1e-400").value(), 1);
}

TEST(ParseDollars, Errors) {
  for (const char* bad : {"", "   ", "-1", "-0", "abc", "1.2.3", "1e", "1e+", "e5", ".", "1,5", "$1", "1 2", "0x10",
                          "1e401", "nan", "inf"}) {
    EXPECT_FALSE(parse_dollars(bad).has_value()) << bad;
  }
  EXPECT_NE(parse_dollars("-1").error().find("negative"), std::string::npos);
}

TEST(ParseDollars, Overflow) {
  // INT64_MAX nanos = 9223372036.854775807 dollars.
  EXPECT_EQ(parse_dollars("9223372036.854775807").value(), std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(parse_dollars("9223372036.854775808").has_value());
  EXPECT_FALSE(parse_dollars("9223372036.8547758071").has_value());  // rounds up past the max
  EXPECT_FALSE(parse_dollars("1e10").has_value());
  EXPECT_FALSE(parse_dollars("99999999999999999999999999").has_value());
  EXPECT_NE(parse_dollars("1e10").error().find("too large"), std::string::npos);
}

TEST(ParsePricePerToken, Picos) {
  EXPECT_EQ(parse_price_per_token("0.0000025").value().picos, 2'500'000);  // $2.50 / M
  EXPECT_EQ(parse_price_per_token("3.75e-8").value().picos, 37'500);       // $0.0375 / M
  EXPECT_EQ(parse_price_per_token("0.0000000375").value().picos, 37'500);
  EXPECT_EQ(parse_price_per_token("0.00000001875").value().picos, 18'750);
  EXPECT_EQ(parse_price_per_token("0").value(), PerTokenPrice{0});
  EXPECT_EQ(parse_price_per_token("1").value().picos, kPicosPerDollar);
}

TEST(ParsePricePerToken, FinerThanAPicoRoundsUp) {
  EXPECT_EQ(parse_price_per_token("0.0000000000001").value().picos, 1);
  EXPECT_EQ(parse_price_per_token("1.5e-12").value().picos, 2);
  EXPECT_FALSE(parse_price_per_token("-0.000001").has_value());
  EXPECT_FALSE(parse_price_per_token("1e7").has_value());  // 1e19 picos > INT64_MAX
}

TEST(FormatDollars, Trimmed) {
  EXPECT_EQ(format_dollars(1'234'567), "0.001234567");
  EXPECT_EQ(format_dollars(100'000'000'000), "100");
  EXPECT_EQ(format_dollars(500'000), "0.0005");
  EXPECT_EQ(format_dollars(0), "0");
  EXPECT_EQ(format_dollars(1), "0.000000001");
  EXPECT_EQ(format_dollars(-1), "-0.000000001");
  EXPECT_EQ(format_dollars(1'500'000'000), "1.5");
  EXPECT_EQ(format_dollars(std::numeric_limits<std::int64_t>::max()), "9223372036.854775807");
  EXPECT_EQ(format_dollars(std::numeric_limits<std::int64_t>::min()), "-9223372036.854775808");
}

TEST(FormatDollars, RoundTrips) {
  for (Nanos v : {Nanos{0}, Nanos{1}, Nanos{999'999'999}, Nanos{1'000'000'000}, Nanos{37'500'000},
                  Nanos{123'456'789'012}, kMaxNanos}) {
    EXPECT_EQ(parse_dollars(format_dollars(v)).value(), v) << v;
  }
  EXPECT_EQ(format_price_per_token(PerTokenPrice{2'500'000}), "0.0000025");
  EXPECT_EQ(parse_price_per_token(format_price_per_token(PerTokenPrice{18'750})).value().picos, 18'750);
}

TEST(ToDollarsForDisplay, Approximate) {
  EXPECT_DOUBLE_EQ(to_dollars_for_display(1'500'000'000), 1.5);
  EXPECT_DOUBLE_EQ(to_dollars_for_display(0), 0.0);
  EXPECT_NEAR(to_dollars_for_display(1'234'567), 0.001234567, 1e-15);
}

TEST(Cost, ExactAtListPrices) {
  // $0.0375 per million tokens × 1M tokens = $0.0375 = 37,500,000 nanos.
  EXPECT_EQ(cost(1'000'000, PerTokenPrice{37'500}), 37'500'000);
  // gpt-4o input $2.50/M × 1,000 tokens = $0.0025.
  EXPECT_EQ(cost(1'000, PerTokenPrice{2'500'000}), 2'500'000);
  EXPECT_EQ(cost(0, PerTokenPrice{2'500'000}), 0);
  EXPECT_EQ(cost(1'000, PerTokenPrice{0}), 0);
}

TEST(Cost, RoundsUpToTheNextNano) {
  EXPECT_EQ(cost(1, PerTokenPrice{37'500}), 38);  // 37.5 nanos → 38
  EXPECT_EQ(cost(1, PerTokenPrice{1}), 1);        // 0.001 nano → 1
  EXPECT_EQ(cost(2, PerTokenPrice{500}), 1);      // exactly 1 nano, no extra
  EXPECT_EQ(cost(3, PerTokenPrice{333}), 1);      // 0.999 → 1
}

TEST(Cost, SaturatesInsteadOfWrapping) {
  const auto max64 = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(cost(max64, PerTokenPrice{max64}), kMaxNanos);
  EXPECT_EQ(cost(max64, PerTokenPrice{1'000}), kMaxNanos);  // exactly INT64_MAX nanos
  EXPECT_EQ(cost(max64 / 1000, PerTokenPrice{1'000}), max64 / 1000);
  EXPECT_EQ(cost(-5, PerTokenPrice{1'000}), 0);
  EXPECT_EQ(cost(5, PerTokenPrice{-1'000}), 0);
}

TEST(SaturatingAdd, Basics) {
  EXPECT_EQ(saturating_add(1, 2), 3);
  EXPECT_EQ(saturating_add(kMaxNanos, 1), kMaxNanos);
  EXPECT_EQ(saturating_add(kMaxNanos - 1, 1), kMaxNanos);
  EXPECT_EQ(saturating_add(-5, 3), 3);
}

}  // namespace
}  // namespace tollgate::budget
