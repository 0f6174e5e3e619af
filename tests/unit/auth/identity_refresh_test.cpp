// Identities::refresh_after_miss over a real (in-memory SQLite) store: a key written to the store
// after the index was loaded is found on the first refused request; refreshes are rate-limited;
// a request that arrived before a finished refresh needs none of its own.
#include <gtest/gtest.h>

#include <chrono>

#include "auth/identities.hpp"
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
    ASSERT_TRUE(ids_.reload(*store_));
  }
  void add_key(const std::string& secret) {
    store::KeyRecord k;
    k.token_hash = sha256_hex(secret);
    ASSERT_TRUE(store_->create_key(k));
  }
  bool knows(const std::string& secret) { return ids_.current()->key(sha256_hex(secret)) != nullptr; }

  std::shared_ptr<store::Store> store_;
  Identities ids_;
};

TEST_F(IdentityRefresh, AKeyCreatedElsewhereIsFoundOnTheFirstMiss) {
  add_key("sk-new");  // as another instance would: the store has it, this index does not
  ASSERT_FALSE(knows("sk-new"));
  const auto before = ids_.current();
  EXPECT_TRUE(ids_.refresh_after_miss(*store_, milliseconds(5), before.get(), Clock::now()));
  EXPECT_TRUE(knows("sk-new"));
}

TEST_F(IdentityRefresh, AnUnknownKeyChangesNothingAndRefreshesAreRateLimited) {
  const auto before = ids_.current();
  EXPECT_FALSE(ids_.refresh_after_miss(*store_, milliseconds(10000), before.get(), Clock::now()));
  // Inside the interval a new miss does not read the store: the key stays unknown for now.
  add_key("sk-later");
  EXPECT_FALSE(ids_.refresh_after_miss(*store_, milliseconds(10000), ids_.current().get(), Clock::now()));
  EXPECT_FALSE(knows("sk-later"));
  // Once the interval has passed, the next miss refreshes.
  EXPECT_TRUE(ids_.refresh_after_miss(*store_, milliseconds(0), ids_.current().get(), Clock::now()));
  EXPECT_TRUE(knows("sk-later"));
}

TEST_F(IdentityRefresh, ARequestThatArrivedBeforeAFinishedRefreshIsCoveredByIt) {
  add_key("sk-a");
  const auto refused_by = ids_.current();
  const auto arrived = Clock::now();
  // Another refused request refreshes first (it started after `arrived`)...
  EXPECT_TRUE(ids_.refresh_after_miss(*store_, milliseconds(10000), refused_by.get(), Clock::now()));
  // ...so this one, although inside the interval, authenticates again with what it read.
  EXPECT_TRUE(ids_.refresh_after_miss(*store_, milliseconds(10000), refused_by.get(), arrived));
  EXPECT_TRUE(knows("sk-a"));
}

}  // namespace
}  // namespace tollgate::auth
