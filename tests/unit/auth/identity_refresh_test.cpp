// IdentityRefresher over a real (in-memory SQLite) store: a key written to the store after the
// index was loaded is found after the first refused request; refreshes asked for by refused keys
// are rate-limited and cover every request that arrived before they started; the poll picks up
// changes by itself; stopping answers whoever still waits.
#include "auth/identity_refresher.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "auth/keys.hpp"
#include "store/sqlite/sqlite_store.hpp"

namespace tollgate::auth {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class IdentityRefresh : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::sqlite::open_sqlite_store(":memory:");
    ASSERT_TRUE(s);
    store_ = std::move(*s);
    ids_ = std::make_shared<Identities>();
    ASSERT_TRUE(ids_->reload(*store_));
  }
  void add_key(const std::string& secret) {
    store::KeyRecord k;
    k.token_hash = sha256_hex(secret);
    ASSERT_TRUE(store_->create_key(k));
  }
  bool knows(const std::string& secret) { return ids_->current()->key(sha256_hex(secret)) != nullptr; }
  static std::future<bool> miss(IdentityRefresher& r, const IdentityIndex* refused_by, Clock::time_point arrived) {
    auto p = std::make_shared<std::promise<bool>>();
    auto f = p->get_future();
    r.after_miss(refused_by, arrived, [p](bool retry) { p->set_value(retry); });
    return f;
  }

  std::shared_ptr<store::Store> store_;
  std::shared_ptr<Identities> ids_;
};

TEST_F(IdentityRefresh, AKeyCreatedElsewhereIsFoundAfterTheFirstMiss) {
  IdentityRefresher r(ids_, store_, {.poll = std::chrono::hours(1)});
  add_key("sk-new");  // as another instance would: the store has it, this index does not
  ASSERT_FALSE(knows("sk-new"));
  EXPECT_TRUE(miss(r, ids_->current().get(), Clock::now()).get());
  EXPECT_TRUE(knows("sk-new"));
  // An unknown key changes nothing: no reason to authenticate again.
  EXPECT_FALSE(miss(r, ids_->current().get(), Clock::now()).get());
}

TEST_F(IdentityRefresh, RefreshesAreRateLimitedAndCoverEveryEarlierArrival) {
  IdentityRefresher r(ids_, store_, {.poll = std::chrono::hours(1), .min_interval = milliseconds(300)});
  EXPECT_FALSE(miss(r, ids_->current().get(), Clock::now()).get());  // one refresh, nothing new
  add_key("sk-later");
  const auto t0 = Clock::now();
  auto a = miss(r, ids_->current().get(), Clock::now());
  auto b = miss(r, ids_->current().get(), Clock::now());
  EXPECT_TRUE(a.get());
  EXPECT_TRUE(b.get());
  EXPECT_GE(Clock::now() - t0, milliseconds(200)) << "the second refresh waited for the interval";
  EXPECT_TRUE(knows("sk-later"));
}

TEST_F(IdentityRefresh, ThePollPicksUpChangesByItself) {
  IdentityRefresher r(ids_, store_, {.poll = milliseconds(20)});
  add_key("sk-polled");
  for (int i = 0; i < 200 && !knows("sk-polled"); ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(knows("sk-polled"));
}

TEST_F(IdentityRefresh, StoppingAnswersWhoeverStillWaits) {
  auto r = std::make_unique<IdentityRefresher>(ids_, store_,
                                               RefresherOptions{.poll = std::chrono::hours(1), .min_interval = std::chrono::hours(1)});
  EXPECT_FALSE(miss(*r, ids_->current().get(), Clock::now()).get());  // the first refresh: the next is an hour away
  auto waiting = miss(*r, ids_->current().get(), Clock::now());
  EXPECT_EQ(waiting.wait_for(milliseconds(50)), std::future_status::timeout);
  r.reset();
  ASSERT_EQ(waiting.wait_for(milliseconds(0)), std::future_status::ready);
  EXPECT_FALSE(waiting.get());
}

}  // namespace
}  // namespace tollgate::auth
