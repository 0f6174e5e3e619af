#include "cache/local_cache.hpp"

#include <gtest/gtest.h>

namespace tollgate::cache {
namespace {

std::optional<CachedAnswer> get(ResponseCache& c, const std::string& key) {
  std::optional<CachedAnswer> out;
  bool called = false;
  c.get(key, [&](std::optional<CachedAnswer> a) {
    called = true;
    out = std::move(a);
  });
  EXPECT_TRUE(called);
  return out;
}

TEST(LocalResponseCache, KeepsAnAnswerForItsTtl) {
  core::ManualClock clock;
  LocalResponseCache c(10, clock);
  const CachedAnswer a{R"({"choices":[]})", 1234, 99};
  c.put("k", a, std::chrono::seconds(5));
  EXPECT_EQ(get(c, "k"), a);
  EXPECT_FALSE(get(c, "other"));
  clock.advance(std::chrono::milliseconds(4999));
  EXPECT_EQ(get(c, "k"), a);
  clock.advance(std::chrono::milliseconds(1));
  EXPECT_FALSE(get(c, "k"));
  EXPECT_EQ(c.size(), 0u);
}

TEST(LocalResponseCache, EvictsTheLeastRecentlyUsed) {
  core::ManualClock clock;
  LocalResponseCache c(2, clock);
  c.put("a", {"A", 1, 0}, std::chrono::seconds(60));
  c.put("b", {"B", 2, 0}, std::chrono::seconds(60));
  ASSERT_TRUE(get(c, "a"));  // a is now the most recently used
  c.put("c", {"C", 3, 0}, std::chrono::seconds(60));
  EXPECT_TRUE(get(c, "a"));
  EXPECT_FALSE(get(c, "b"));
  EXPECT_TRUE(get(c, "c"));
  EXPECT_EQ(c.size(), 2u);
}

TEST(LocalResponseCache, ReplacingAnEntryRenewsIt) {
  core::ManualClock clock;
  LocalResponseCache c(2, clock);
  c.put("a", {"A", 1, 0}, std::chrono::seconds(1));
  c.put("a", {"A2", 5, 0}, std::chrono::seconds(10));
  clock.advance(std::chrono::seconds(2));
  ASSERT_TRUE(get(c, "a"));
  EXPECT_EQ(get(c, "a")->completion, "A2");
  EXPECT_EQ(c.size(), 1u);
}

TEST(CachedAnswerCodec, RoundTripsAndRefusesGarbage) {
  const CachedAnswer a{"{\"x\":\"\\u00e9\"}", 42, 1700000000000};
  EXPECT_EQ(decode(encode(a)), a);
  EXPECT_FALSE(decode("not json"));
  EXPECT_FALSE(decode(R"({"completion":1,"cost_nanos":1,"stored_ms":1})"));
  EXPECT_FALSE(decode(R"({"completion":"x"})"));
}

}  // namespace
}  // namespace tollgate::cache
