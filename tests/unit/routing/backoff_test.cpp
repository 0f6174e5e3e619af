#include "routing/backoff.hpp"

#include <gtest/gtest.h>

using namespace tollgate::routing;
using std::chrono::milliseconds;

TEST(Backoff, DoublesPerRetryUpToTheCap) {
  BackoffPolicy p;
  p.initial = milliseconds(100);
  p.max = milliseconds(1000);
  p.jitter = 0.0;
  EXPECT_EQ(backoff_delay(p, 1, std::nullopt, 0.5), milliseconds(100));
  EXPECT_EQ(backoff_delay(p, 2, std::nullopt, 0.5), milliseconds(200));
  EXPECT_EQ(backoff_delay(p, 3, std::nullopt, 0.5), milliseconds(400));
  EXPECT_EQ(backoff_delay(p, 4, std::nullopt, 0.5), milliseconds(800));
  EXPECT_EQ(backoff_delay(p, 5, std::nullopt, 0.5), milliseconds(1000));
  EXPECT_EQ(backoff_delay(p, 60, std::nullopt, 0.5), milliseconds(1000));
}

TEST(Backoff, JitterShrinksWithinItsBand) {
  BackoffPolicy p;
  p.initial = milliseconds(1000);
  p.jitter = 0.25;
  EXPECT_EQ(backoff_delay(p, 1, std::nullopt, 0.0), milliseconds(1000));
  EXPECT_EQ(backoff_delay(p, 1, std::nullopt, 0.5), milliseconds(875));
  EXPECT_EQ(backoff_delay(p, 1, std::nullopt, 0.999999), milliseconds(750));
}

TEST(Backoff, RetryAfterHintWinsWhenLonger) {
  BackoffPolicy p;
  p.initial = milliseconds(100);
  p.jitter = 0;
  EXPECT_EQ(backoff_delay(p, 1, milliseconds(1500), 0.3), milliseconds(1500));
  EXPECT_EQ(backoff_delay(p, 1, milliseconds(10), 0.3), milliseconds(100));
}

TEST(Backoff, RouterRetryAfterIsAFloor) {
  BackoffPolicy p;
  p.initial = milliseconds(100);
  p.minimum = milliseconds(2000);
  EXPECT_EQ(backoff_delay(p, 1, std::nullopt, 0.0), milliseconds(2000));
}

TEST(RetryAfter, ParsesSecondsAndMilliseconds) {
  EXPECT_EQ(parse_retry_after("1", 0), milliseconds(1000));
  EXPECT_EQ(parse_retry_after(" 2.5 ", 0), milliseconds(2500));
  EXPECT_EQ(parse_retry_after_ms("1500"), milliseconds(1500));
  EXPECT_EQ(parse_retry_after_ms("12.2"), milliseconds(13));
  EXPECT_FALSE(parse_retry_after("soon", 0));
  EXPECT_FALSE(parse_retry_after("-1", 0));
  EXPECT_FALSE(parse_retry_after_ms("abc"));
  EXPECT_FALSE(parse_retry_after_ms(""));
}

TEST(RetryAfter, ParsesHttpDateRelativeToNow) {
  // Sun, 06 Nov 1994 08:49:37 GMT = 784111777
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111770), milliseconds(7000));
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111800), milliseconds(0));
  EXPECT_FALSE(parse_retry_after("Sun, 06 Nov 1994", 0));
}
