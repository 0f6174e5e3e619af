// The Redis ledger against a real Redis server (TOLLGATE_TEST_REDIS_URL, started by
// scripts/services.sh). Each test uses its own key prefix, so tests may run in parallel.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <random>
#include <thread>

#include "budget/ledger.hpp"
#include "store/ledger_state.hpp"
#include "store/redis/redis_ledger.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "redis_test_util.hpp"

namespace tollgate::store::redis {
namespace {

using budget::AmountRange;
using budget::Nanos;
using budget::ScopeId;
using budget::ScopeKind;
using budget::ScopeLimit;
using budget::SettleKind;


std::string unique_prefix() {
  std::random_device rd;
  return "tgtest:" + std::to_string(rd()) + std::to_string(rd()) + ":";
}

class RedisLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TG_REQUIRE_REDIS(redis_);
    prefix_ = unique_prefix();
    auto s = sqlite::open_sqlite_store(":memory:");
    ASSERT_TRUE(s.has_value());
    store_ = std::move(*s);
  }

  std::unique_ptr<RedisLedger> make(std::string instance, std::chrono::milliseconds lease = std::chrono::milliseconds(10000)) {
    RedisLedgerOptions o;
    o.key_prefix = prefix_;
    o.instance_id = std::move(instance);
    o.lease = lease;
    o.id_block = 16;
    o.rebuild_settle_wait = std::chrono::milliseconds(0);
    auto l = std::make_unique<RedisLedger>(std::make_shared<RedisClient>(redis_), o, store_);
    for (int i = 0; i < 200 && !l->ready(); ++i) {
      l->tick();
      if (!l->ready()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return l;
  }

  static budget::ReserveResult reserve(budget::BudgetLedger& l, std::vector<ScopeLimit> scopes, AmountRange r,
                                       budget::SystemTime now = std::chrono::system_clock::now()) {
    std::promise<budget::ReserveResult> p;
    auto f = p.get_future();
    l.reserve_async(std::move(scopes), r, now, [&p](budget::ReserveResult res) { p.set_value(std::move(res)); });
    return f.get();
  }

  /// Deletes every key of this test's prefix: Redis "restarted empty".
  void wipe() {
    RedisClient c(redis_);
    auto keys = c.call({"KEYS", prefix_ + "*"});
    ASSERT_TRUE(keys.has_value());
    for (const auto& k : keys->elements) c.call({"DEL", k.str});
  }

  /// Returns once every command queued so far on `l`'s connection has run: one more reservation
  /// (on a scope of its own) goes out behind them on the same connection and waits for its reply.
  static void sync(RedisLedger& l) {
    auto r = reserve(l, {ScopeLimit{ScopeId{ScopeKind::tag, "barrier"}, budget::kMaxNanos, {}}}, AmountRange{1, 1, 100});
    ASSERT_TRUE(r.has_value());
    l.settle(std::move(*r), 0, SettleKind::no_usage, std::chrono::system_clock::now());
  }

  RedisOptions redis_;
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

ScopeLimit key_scope(const std::string& id, Nanos limit) { return ScopeLimit{ScopeId{ScopeKind::key, id}, limit, {}}; }

TEST_F(RedisLedgerTest, ReservesAllOrNoneAndSettlesToTheCharge) {
  auto l = make("a");
  ASSERT_TRUE(l->ready());
  const std::vector<ScopeLimit> scopes{key_scope("k1", 100), ScopeLimit{ScopeId{ScopeKind::team, "t"}, 1000, {}}};
  auto a = reserve(*l, scopes, AmountRange{60, 60, 100});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->amount(), 60);
  EXPECT_FALSE(a->reduced());
  auto b = reserve(*l, scopes, AmountRange{60, 60, 100});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().reason, budget::RefusalReason::budget_exceeded);
  EXPECT_EQ(b.error().scope, (ScopeId{ScopeKind::key, "k1"}));
  EXPECT_EQ(b.error().limit, 100);
  EXPECT_EQ(b.error().committed, 60);
  // The refused attempt took nothing from the team either.
  l->settle(std::move(*a), 10, SettleKind::actual, std::chrono::system_clock::now());
  auto c = reserve(*l, scopes, AmountRange{90, 90, 100});
  ASSERT_TRUE(c.has_value());
  auto d = reserve(*l, scopes, AmountRange{1, 1, 100});
  EXPECT_FALSE(d.has_value()) << "10 spent + 90 reserved = the whole budget";
  l->settle(std::move(*c), 0, SettleKind::unknown, std::chrono::system_clock::now());
  auto e = reserve(*l, {key_scope("k1", 101)}, AmountRange{1, 1, 100});
  ASSERT_TRUE(e.has_value()) << "unknown charged the 90 reserved: 100 spent of 101";
  auto f = reserve(*l, {key_scope("k1", 101)}, AmountRange{1, 1, 100});
  EXPECT_FALSE(f.has_value());
  l->settle(std::move(*e), 0, SettleKind::no_usage, std::chrono::system_clock::now());
}

// budget::settle_charge in the settle script: an unknown outcome is charged its partial usage's
// price when that is more than the reservation; charges at kMaxNanos saturate the counter
// instead of failing the script (HINCRBY's overflow), and the scope then refuses any budget below
// the saturation value ($9.2 billion).
TEST_F(RedisLedgerTest, UnknownChargesTheLargerPartialUsageAndHugeChargesSaturate) {
  auto l = make("a");
  ASSERT_TRUE(l->ready());
  const auto now = std::chrono::system_clock::now();
  auto a = reserve(*l, {key_scope("k2", budget::kMaxNanos)}, AmountRange{60, 60, 100});
  ASSERT_TRUE(a.has_value());
  l->settle(std::move(*a), 450, SettleKind::unknown, now);
  auto b = reserve(*l, {key_scope("k2", budget::kMaxNanos)}, AmountRange{1, 1, 100});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(l->state(ScopeId{ScopeKind::key, "k2"}, now)->spent, 450);
  l->settle(std::move(*b), budget::kMaxNanos, SettleKind::actual, now);
  auto c = reserve(*l, {key_scope("k3", budget::kMaxNanos)}, AmountRange{1, 1, 100});
  ASSERT_TRUE(c.has_value());
  l->settle(std::move(*c), budget::kMaxNanos, SettleKind::actual, now);
  sync(*l);
  EXPECT_EQ(l->stats().pending_settles, 0u) << "a settle script failed";
  for (const char* k : {"k2", "k3"}) {
    auto refused = reserve(*l, {key_scope(k, 9'000'000'000'000'000'000)}, AmountRange{1, 1, 100});
    ASSERT_FALSE(refused.has_value()) << k;
    EXPECT_EQ(refused.error().reason, budget::RefusalReason::budget_exceeded);
    EXPECT_EQ(refused.error().committed, 9'200'000'000'000'000'000) << k;
  }
}

TEST_F(RedisLedgerTest, RangedGrantsMatchTheInProcessLedger) {
  auto l = make("a");
  budget::Ledger local;
  const auto now = std::chrono::system_clock::now();
  std::vector<ScopeLimit> scopes{key_scope("k", 1'000'000), ScopeLimit{ScopeId{ScopeKind::global, ""}, budget::kMaxNanos, {}}};
  for (int i = 0; i < 12; ++i) {
    const AmountRange r{1000, 400'000, 25};
    auto remote = reserve(*l, scopes, r);
    auto mine = local.reserve(scopes, r, now);
    ASSERT_EQ(remote.has_value(), mine.has_value()) << "step " << i;
    if (!mine) {
      EXPECT_EQ(remote.error().committed, mine.error().committed);
      break;
    }
    EXPECT_EQ(remote->amount(), mine->amount()) << "step " << i;
    EXPECT_EQ(remote->reduced(), mine->reduced());
    EXPECT_EQ(remote->binding_scope(), mine->binding_scope());
    l->settle(std::move(*remote), remote->amount() / 2, SettleKind::actual, now);
    local.settle(std::move(*mine), mine->amount() / 2, SettleKind::actual, now);
  }
}

TEST_F(RedisLedgerTest, TwoInstancesNeverGrantMoreThanTheCap) {
  auto a = make("a");
  auto b = make("b");
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto& l = t % 2 == 0 ? *a : *b;
      for (int i = 0; i < 40; ++i) {
        std::promise<void> p;
        auto f = p.get_future();
        l.reserve_async({key_scope("shared", 1000)}, AmountRange{10, 10, 100}, std::chrono::system_clock::now(),
                        [&](budget::ReserveResult r) {
                          if (r) ++granted;
                          p.set_value();
                        });
        f.wait();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), 100) << "320 attempts of 10 against 1000 from two instances";
}

TEST_F(RedisLedgerTest, ASurvivorSettlesADeadInstancesReservationsWhenItsLeaseExpires) {
  auto survivor = make("survivor", std::chrono::milliseconds(300));
  budget::Reservation r1, r2;
  {
    auto dead = make("dead", std::chrono::milliseconds(300));
    auto a = reserve(*dead, {key_scope("k", 1000)}, AmountRange{300, 300, 100});
    auto b = reserve(*dead, {key_scope("k", 1000)}, AmountRange{200, 200, 100});
    ASSERT_TRUE(a && b);
    r1 = std::move(*a);
    r2 = std::move(*b);
    // The dead instance wrote the settle of the second durably before dying: that charge wins.
    LedgerRecord rec;
    rec.reservation_id = r2.id();
    rec.kind = LedgerKind::settle;
    rec.scopes = {LedgerScope{"key", "k", 0, 0, ""}};
    rec.amount_nanos = 200;
    rec.actual_nanos = 50;
    rec.settle_kind = "actual";
    std::promise<bool> p;
    store_->append_ledger(std::move(rec), [&p](bool ok) { p.set_value(ok); });
    ASSERT_TRUE(p.get_future().get());
  }  // destroyed with two reservations open: its lease is left to expire
  EXPECT_FALSE(reserve(*survivor, {key_scope("k", 1000)}, AmountRange{600, 600, 100}).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  survivor->tick();
  EXPECT_EQ(survivor->stats().recovered, 2u);
  // 300 (unknown: full amount) + 50 (its own record) spent: 650 left.
  auto c = reserve(*survivor, {key_scope("k", 1000)}, AmountRange{650, 650, 100});
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(reserve(*survivor, {key_scope("k", 1000)}, AmountRange{1, 1, 100}).has_value());
  survivor->settle(std::move(*c), 0, SettleKind::no_usage, std::chrono::system_clock::now());
  ASSERT_TRUE(store_->flush());
  auto ledger = store_->read_ledger(0, 100);
  ASSERT_TRUE(ledger.has_value());
  int recovered = 0;
  for (const auto& r : *ledger)
    if (r.settle_kind == "recovered") {
      ++recovered;
      EXPECT_EQ(r.reservation_id, r1.id());
      EXPECT_EQ(r.actual_nanos, 300);
    }
  EXPECT_EQ(recovered, 1) << "one recovered record, for the reservation the dead instance never settled";
  r1.clear();
  r2.clear();
}

TEST_F(RedisLedgerTest, CountersLostByRedisAreRebuiltFromTheStoreBeforeAnyAdmission) {
  // The durable ledger holds 700 spent and 200 still reserved on key k.
  auto append = [&](LedgerRecord r) {
    std::promise<bool> p;
    store_->append_ledger(std::move(r), [&p](bool ok) { p.set_value(ok); });
    ASSERT_TRUE(p.get_future().get());
  };
  LedgerRecord res;
  res.reservation_id = 5;
  res.kind = LedgerKind::reserve;
  res.scopes = {LedgerScope{"key", "k", 0, 0, ""}};
  res.amount_nanos = 800;
  append(res);
  LedgerRecord set = res;
  set.kind = LedgerKind::settle;
  set.actual_nanos = 700;
  set.settle_kind = "actual";
  append(set);
  LedgerRecord open = res;
  open.reservation_id = 9;
  open.amount_nanos = 200;
  append(open);
  auto l = make("a");
  ASSERT_TRUE(l->ready());
  EXPECT_EQ(l->stats().rebuilds, 1u);
  EXPECT_FALSE(reserve(*l, {key_scope("k", 1000)}, AmountRange{101, 101, 100}).has_value());
  auto ok = reserve(*l, {key_scope("k", 1000)}, AmountRange{100, 100, 100});
  ASSERT_TRUE(ok.has_value());
  EXPECT_GT(ok->id(), 9u) << "ids continue past the store's";
  l->settle(std::move(*ok), 0, SettleKind::no_usage, std::chrono::system_clock::now());
}

TEST_F(RedisLedgerTest, AnUnreachableRedisRefusesPaidReservationsAndKeepsSettlements) {
  RedisOptions dead = redis_;
  dead.port = 1;  // nothing listens there
  dead.timeout = std::chrono::milliseconds(200);
  RedisLedgerOptions o;
  o.key_prefix = prefix_;
  o.instance_id = "x";
  RedisLedger l(std::make_shared<RedisClient>(dead), o, store_);
  EXPECT_FALSE(l.ready());
  auto r = reserve(l, {key_scope("k", 1000)}, AmountRange{1, 1, 100});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, budget::RefusalReason::observer_rejected);
  // Free attempts are never blocked.
  EXPECT_TRUE(reserve(l, {key_scope("k", 1000)}, AmountRange{0, 0, 100}).has_value());
}

TEST_F(RedisLedgerTest, ALateSettleNeverMovesAWindowBackNorWipesTheNewWindowsSpend) {
  auto l = make("a");
  const auto period = budget::parse_budget_duration("10s");
  ASSERT_TRUE(period.has_value());
  const ScopeLimit scope{ScopeId{ScopeKind::key, "windowed"}, 1000, *period};
  const auto w1 = budget::SystemTime(std::chrono::seconds(1'800'000'000));  // a window start (10 s aligned)
  const auto w2 = w1 + std::chrono::seconds(10);
  auto early = reserve(*l, {scope}, AmountRange{300, 300, 100}, w1 + std::chrono::seconds(1));
  ASSERT_TRUE(early.has_value());
  auto now = reserve(*l, {scope}, AmountRange{200, 200, 100}, w2 + std::chrono::seconds(1));
  ASSERT_TRUE(now.has_value()) << "a new window: only the 300 still reserved counts";
  l->settle(std::move(*now), 200, SettleKind::actual, w2 + std::chrono::seconds(2));
  // The early reservation settles late, dated in its old window (a retry after an outage).
  l->settle(std::move(*early), 300, SettleKind::actual, w1 + std::chrono::seconds(2));
  sync(*l);
  // The new window paid both: 500 spent of 1000; 501 more does not fit.
  EXPECT_FALSE(reserve(*l, {scope}, AmountRange{501, 501, 100}, w2 + std::chrono::seconds(3)).has_value());
  auto rest = reserve(*l, {scope}, AmountRange{500, 500, 100}, w2 + std::chrono::seconds(3));
  ASSERT_TRUE(rest.has_value());
  l->settle(std::move(*rest), 0, SettleKind::no_usage, w2 + std::chrono::seconds(3));
}

TEST_F(RedisLedgerTest, AfterRedisComesBackEmptyIdsStartPastTheFloorAndBlocksFromBeforeAreDropped) {
  auto l = make("a");
  auto first = reserve(*l, {key_scope("k", 1000)}, AmountRange{10, 10, 100});
  ASSERT_TRUE(first.has_value());
  const auto old_id = first->id();
  // Durable, as the pipeline writes it, then settled.
  LedgerRecord rec;
  rec.reservation_id = old_id;
  rec.kind = LedgerKind::reserve;
  rec.scopes = {LedgerScope{"key", "k", 0, 0, ""}};
  rec.amount_nanos = 10;
  std::promise<bool> p;
  store_->append_ledger(rec, [&p](bool ok) { p.set_value(ok); });
  ASSERT_TRUE(p.get_future().get());
  l->settle(std::move(*first), 10, SettleKind::actual, std::chrono::system_clock::now());
  sync(*l);
  wipe();  // Redis restarted empty: `seq` is gone too
  EXPECT_FALSE(reserve(*l, {key_scope("k", 1000)}, AmountRange{10, 10, 100}).has_value()) << "refused until rebuilt";
  for (int i = 0; i < 200 && !l->ready(); ++i) {
    l->tick();
    if (!l->ready()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(l->ready());
  auto next = reserve(*l, {key_scope("k", 1000)}, AmountRange{10, 10, 100});
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(next->id(), old_id + (1u << 20)) << "no id the store may hold is handed out again";
  l->settle(std::move(*next), 0, SettleKind::no_usage, std::chrono::system_clock::now());
}

TEST_F(RedisLedgerTest, AnIdNamedBeforeTheGrantIsTheOneGrantedUnlessTheScopeIsKnownSpent) {
  auto l = make("a");
  const std::vector<ScopeLimit> scopes{key_scope("k", 100)};
  const auto now = std::chrono::system_clock::now();
  EXPECT_FALSE(l->take_reservation_id(scopes, AmountRange{10, 10, 100}, now).has_value()) << "no block taken yet";
  auto first = reserve(*l, scopes, AmountRange{10, 10, 100});  // takes a block of 16
  ASSERT_TRUE(first.has_value());
  const auto id = l->take_reservation_id(scopes, AmountRange{10, 10, 100}, now);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(*id, first->id() + 1);
  std::promise<budget::ReserveResult> p;
  l->reserve_as_async(*id, scopes, AmountRange{10, 10, 100}, now, [&p](budget::ReserveResult r) { p.set_value(std::move(r)); });
  auto second = p.get_future().get();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->id(), *id);
  EXPECT_NE(l->take_reservation_id(scopes, AmountRange{10, 10, 100}, now), id) << "an id is named once";
  l->settle(std::move(*first), 95, SettleKind::actual, now);
  l->settle(std::move(*second), 0, SettleKind::no_usage, now);
  sync(*l);
  // 95 of 100 spent, as the last answer said: a reserve of 10 would be refused, so no id (the
  // caller asks first and writes nothing); 5 still fits.
  ASSERT_TRUE(reserve(*l, {key_scope("k", 100)}, AmountRange{1, 1, 100}).has_value());
  EXPECT_FALSE(l->take_reservation_id(scopes, AmountRange{10, 10, 100}, now).has_value());
  EXPECT_TRUE(l->take_reservation_id(scopes, AmountRange{2, 10, 100}, now).has_value());
  EXPECT_FALSE(l->take_reservation_id({}, AmountRange{2, 10, 100}, now).has_value()) << "nothing to reserve";
}

TEST_F(RedisLedgerTest, AnIdTheScriptRefusesIsReplacedByOneOfANewBlock) {
  auto l = make("a");
  const std::vector<ScopeLimit> scopes{key_scope("k", 1000)};
  auto first = reserve(*l, scopes, AmountRange{10, 10, 100});
  ASSERT_TRUE(first.has_value());
  const auto used = first->id();
  // An id already in use (its reservation still open): granted under another id.
  std::promise<budget::ReserveResult> p;
  l->reserve_as_async(used, scopes, AmountRange{10, 10, 100}, std::chrono::system_clock::now(),
                      [&p](budget::ReserveResult r) { p.set_value(std::move(r)); });
  auto again = p.get_future().get();
  ASSERT_TRUE(again.has_value());
  EXPECT_NE(again->id(), used);
  EXPECT_EQ(again->amount(), 10);
  auto held = reserve(*l, {key_scope("k", 30)}, AmountRange{11, 11, 100});
  EXPECT_FALSE(held.has_value()) << "both are held: 20 of 30, no room for 11";
  l->settle(std::move(*again), 0, SettleKind::no_usage, std::chrono::system_clock::now());
  l->settle(std::move(*first), 0, SettleKind::no_usage, std::chrono::system_clock::now());
}

TEST_F(RedisLedgerTest, NoIdIsNamedFromABlockNoGrantHasConfirmedNorForAScopeThatJustRefused) {
  auto l = make("a");
  const auto now = std::chrono::system_clock::now();
  // The first reserve takes a block, and is refused: the block is not confirmed (a Redis that
  // lost `seq` hands out ids the durable ledger may hold; only a grant proves the block good).
  EXPECT_FALSE(reserve(*l, {key_scope("empty", 0)}, AmountRange{10, 10, 100}).has_value());
  EXPECT_FALSE(l->take_reservation_id({key_scope("k", 100)}, AmountRange{10, 10, 100}, now).has_value());
  auto held = reserve(*l, {key_scope("k", 100)}, AmountRange{100, 100, 100});
  ASSERT_TRUE(held.has_value());
  EXPECT_TRUE(l->take_reservation_id({key_scope("other", 100)}, AmountRange{10, 10, 100}, now).has_value());
  // k just refused (100 of 100 held): an attempt that would not fit names no id either.
  auto refused = reserve(*l, {key_scope("k", 100)}, AmountRange{10, 10, 100});
  ASSERT_FALSE(refused.has_value());
  EXPECT_FALSE(l->take_reservation_id({key_scope("k", 100)}, AmountRange{10, 10, 100}, now).has_value());
  EXPECT_FALSE(l->take_reservation_id({key_scope("other", 100), key_scope("k", 100)}, AmountRange{10, 10, 100}, now));
  EXPECT_TRUE(l->take_reservation_id({key_scope("k", 200)}, AmountRange{10, 10, 100}, now).has_value())
      << "a raised limit: the refusal does not apply";
  l->settle(std::move(*held), 0, SettleKind::no_usage, now);
}

TEST_F(RedisLedgerTest, ASurvivorReleasesReserveRecordsADeadInstanceNamedAndWasGrantedNothingUnder) {
  auto survivor = make("survivor", std::chrono::milliseconds(300));
  const std::vector<ScopeLimit> scopes{key_scope("k", 100)};
  std::uint64_t named = 0;
  budget::Reservation open;
  {
    auto dead = make("dead", std::chrono::milliseconds(300));
    auto a = reserve(*dead, scopes, AmountRange{60, 60, 100});  // confirms its block
    ASSERT_TRUE(a.has_value());
    open = std::move(*a);
    auto b = reserve(*survivor, scopes, AmountRange{40, 40, 100});
    ASSERT_TRUE(b.has_value());
    survivor->settle(std::move(*b), 40, SettleKind::actual, std::chrono::system_clock::now());
    sync(*survivor);
    // By what `dead` last heard, 30 fits: it names an id and writes the reserve record durably
    // while Redis decides (as the pipeline does); Redis refuses.
    const auto id = dead->take_reservation_id(scopes, AmountRange{30, 30, 100}, std::chrono::system_clock::now());
    ASSERT_TRUE(id.has_value());
    named = *id;
    LedgerRecord rec;
    rec.reservation_id = named;
    rec.kind = LedgerKind::reserve;
    rec.scopes = {LedgerScope{"key", "k", 0, 0, ""}};
    rec.amount_nanos = 30;
    std::promise<bool> p;
    store_->append_ledger(rec, [&p](bool ok) { p.set_value(ok); });
    ASSERT_TRUE(p.get_future().get());
    std::promise<budget::ReserveResult> q;
    dead->reserve_as_async(named, scopes, AmountRange{30, 30, 100}, std::chrono::system_clock::now(),
                           [&q](budget::ReserveResult r) { q.set_value(std::move(r)); });
    auto r = q.get_future().get();
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().reason, budget::RefusalReason::budget_exceeded);
  }  // killed before its release was written (one reservation still open: its lease lapses)
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  survivor->tick();
  EXPECT_EQ(survivor->stats().recovered, 1u);
  ASSERT_TRUE(store_->flush());
  auto state = read_ledger_state(*store_);
  ASSERT_TRUE(state.has_value());
  for (const auto& o : state->open) EXPECT_NE(o.reservation_id, named) << "the refused attempt's record is closed";
  auto release = store_->settle_record(named);
  ASSERT_TRUE(release.has_value() && release->has_value());
  EXPECT_EQ((*release)->settle_kind, "no_usage");
  EXPECT_EQ((*release)->actual_nanos, 0);
  open.clear();
}

}  // namespace
}  // namespace tollgate::store::redis
