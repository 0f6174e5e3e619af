// The response cache in Redis (store/redis/redis_response_cache.hpp), against the test server
// (TOLLGATE_TEST_REDIS_URL, started by scripts/services.sh): an answer stored by one client is
// read by another (two gateway instances), with its ttl; a server that is not there is a miss.
#include "store/redis/redis_response_cache.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "core/ids.hpp"
#include "redis_test_util.hpp"

namespace tollgate::store::redis {
namespace {

/// get() and wait for its answer (it arrives on the client's thread).
std::optional<cache::CachedAnswer> get(cache::ResponseCache& c, const std::string& key) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<cache::CachedAnswer> out;
  c.get(key, [&](std::optional<cache::CachedAnswer> a) {
    std::lock_guard lk(mu);
    out = std::move(a);
    done = true;
    cv.notify_all();
  });
  std::unique_lock lk(mu);
  EXPECT_TRUE(cv.wait_for(lk, std::chrono::seconds(5), [&] { return done; }));
  return out;
}

class RedisResponseCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TG_REQUIRE_REDIS(options_);
    prefix_ = "tgtest:" + core::new_uuid() + ":";
  }
  RedisOptions options_;
  std::string prefix_;
};

TEST_F(RedisResponseCacheTest, AnAnswerOneInstanceStoredIsReadByAnotherWithItsTtl) {
  auto a = std::make_shared<RedisClient>(options_);
  auto b = std::make_shared<RedisClient>(options_);
  RedisResponseCache one(a, prefix_), two(b, prefix_);
  const cache::CachedAnswer answer{R"({"id":"x","choices":[]})", 4200, 1700000000000};
  EXPECT_FALSE(get(two, "k"));
  one.put("k", answer, std::chrono::seconds(30));
  // put() is fire and forget: the same client's later command is answered after it.
  ASSERT_TRUE(a->call({"PING"}));
  EXPECT_EQ(get(two, "k"), answer);
  auto ttl = b->call({"TTL", prefix_ + "cache:k"});
  ASSERT_TRUE(ttl);
  EXPECT_GT(ttl->integer, 0);
  EXPECT_LE(ttl->integer, 30);
  EXPECT_FALSE(get(two, "other"));
  // What is not an answer (another writer's value) is a miss.
  ASSERT_TRUE(a->call({"SET", prefix_ + "cache:bad", "not json"}));
  EXPECT_FALSE(get(two, "bad"));
  a->call({"DEL", prefix_ + "cache:k", prefix_ + "cache:bad"});
}

TEST_F(RedisResponseCacheTest, AServerThatIsNotThereIsAMiss) {
  RedisOptions gone = options_;
  gone.port = 1;  // nothing listens there
  gone.timeout = std::chrono::milliseconds(200);
  RedisResponseCache c(std::make_shared<RedisClient>(gone), prefix_);
  c.put("k", cache::CachedAnswer{"{}", 1, 1}, std::chrono::seconds(5));
  EXPECT_FALSE(get(c, "k"));
}

}  // namespace
}  // namespace tollgate::store::redis
