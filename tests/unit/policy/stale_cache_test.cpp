#include "policy/stale_cache.hpp"

#include <gtest/gtest.h>

using namespace tollgate;
using policy::StaleCache;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(StaleCache, PutGetWithAge) {
  core::ManualClock clock;
  StaleCache cache;
  const std::string key = "a-request-key";
  EXPECT_FALSE(cache.get(key, seconds(60), clock.now()));
  cache.put(key, "answer-1", clock.now());
  clock.advance(milliseconds{1500});
  auto hit = cache.get(key, seconds(60), clock.now());
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->body, "answer-1");
  EXPECT_EQ(hit->age, milliseconds{1500});
  EXPECT_EQ(cache.size(), 1u);
}

TEST(StaleCache, TooOldIsNotServed) {
  core::ManualClock clock;
  StaleCache cache;
  cache.put("k", "v", clock.now());
  clock.advance(seconds(60));
  EXPECT_TRUE(cache.get("k", seconds(60), clock.now()));  // exactly max_age: still served
  clock.advance(milliseconds{1});
  EXPECT_FALSE(cache.get("k", seconds(60), clock.now()));
  EXPECT_TRUE(cache.get("k", seconds(3600), clock.now()));
}

TEST(StaleCache, ReplaceRefreshesAnswerAndAge) {
  core::ManualClock clock;
  StaleCache cache;
  cache.put("k", "old", clock.now());
  clock.advance(seconds(10));
  cache.put("k", "new", clock.now());
  auto hit = cache.get("k", seconds(60), clock.now());
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->body, "new");
  EXPECT_EQ(hit->age, milliseconds{0});
  EXPECT_EQ(cache.size(), 1u);
}

TEST(StaleCache, EvictsOldestStoredByCount) {
  core::ManualClock clock;
  StaleCache cache(2);
  cache.put("a", "1", clock.now());
  cache.put("b", "2", clock.now());
  cache.put("a", "1b", clock.now());  // re-stored: now the newest
  cache.put("c", "3", clock.now());   // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.get("a", seconds(1), clock.now()));
  EXPECT_FALSE(cache.get("b", seconds(1), clock.now()));
  EXPECT_TRUE(cache.get("c", seconds(1), clock.now()));
}

TEST(StaleCache, EvictsByBytes) {
  core::ManualClock clock;
  StaleCache cache(100, 30);  // key + body bytes
  cache.put("k1", std::string(10, 'x'), clock.now());  // 12
  cache.put("k2", std::string(10, 'y'), clock.now());  // 24
  cache.put("k3", std::string(10, 'z'), clock.now());  // 36 > 30: k1 goes
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.get("k1", seconds(1), clock.now()));
  EXPECT_TRUE(cache.get("k2", seconds(1), clock.now()));
  EXPECT_TRUE(cache.get("k3", seconds(1), clock.now()));
  // An answer that can never fit is not stored, and does not flush the cache.
  cache.put("big", std::string(100, 'b'), clock.now());
  EXPECT_FALSE(cache.get("big", seconds(1), clock.now()));
  EXPECT_EQ(cache.size(), 2u);
  // Replacing with a too-big answer drops the old one (never serve a stale older answer).
  cache.put("k2", std::string(100, 'b'), clock.now());
  EXPECT_FALSE(cache.get("k2", seconds(1), clock.now()));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(StaleCache, ZeroEntriesStoresNothing) {
  core::ManualClock clock;
  StaleCache cache(0);
  cache.put("k", "v", clock.now());
  EXPECT_EQ(cache.size(), 0u);
}
