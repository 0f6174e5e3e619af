#include "policy/rate_limit.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace tollgate;
using std::chrono::seconds;

TEST(RateLimit, RpmPerMinuteWindow) {
  core::ManualClock clock;
  policy::RateLimiter rl(clock);
  std::vector<policy::RateSubject> s{{"key:a", 2, std::nullopt, std::nullopt}};
  EXPECT_FALSE(rl.acquire(s));
  rl.release(s, 0);
  EXPECT_FALSE(rl.acquire(s));
  rl.release(s, 0);
  auto d = rl.acquire(s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->limit, "rpm_limit");
  EXPECT_GE(d->retry_after.count(), 1000);
  clock.advance(std::chrono::minutes(1));
  EXPECT_FALSE(rl.acquire(s));
}

TEST(RateLimit, TpmCountsTokensOfFinishedRequests) {
  core::ManualClock clock;
  policy::RateLimiter rl(clock);
  std::vector<policy::RateSubject> s{{"team:t", std::nullopt, 100, std::nullopt}};
  EXPECT_FALSE(rl.acquire(s));
  rl.release(s, 100);
  auto d = rl.acquire(s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->limit, "tpm_limit");
}

TEST(RateLimit, AllOrNoneAcrossSubjects) {
  core::ManualClock clock;
  policy::RateLimiter rl(clock);
  std::vector<policy::RateSubject> key{{"key:a", 10, std::nullopt, std::nullopt}};
  std::vector<policy::RateSubject> both{{"key:a", 10, std::nullopt, std::nullopt}, {"team:t", 0, std::nullopt, std::nullopt}};
  EXPECT_TRUE(rl.acquire(both));  // the team allows nothing: the key is not charged either
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(rl.acquire(key)) << i;
  EXPECT_TRUE(rl.acquire(key));
}

TEST(RateLimit, MaxParallelUnderConcurrency) {
  core::ManualClock clock;
  policy::RateLimiter rl(clock);
  std::vector<policy::RateSubject> s{{"key:p", std::nullopt, std::nullopt, 3}};
  std::atomic<int> in{0}, peak{0}, denied{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        if (rl.acquire(s)) {
          ++denied;
          continue;
        }
        const int now = ++in;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        --in;
        rl.release(s, 0);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_LE(peak.load(), 3);
}

TEST(RateLimit, MaxParallelRefusesTheNextUntilOneEnds) {
  core::ManualClock clock;
  policy::RateLimiter rl(clock);
  std::vector<policy::RateSubject> s{{"key:p", std::nullopt, std::nullopt, 2}};
  EXPECT_FALSE(rl.acquire(s));
  EXPECT_FALSE(rl.acquire(s));
  auto d = rl.acquire(s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->limit, "max_parallel_requests");
  rl.release(s, 0);
  EXPECT_FALSE(rl.acquire(s));
}
