#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "store/sqlite/sqlite_store.hpp"
#include "test_util.hpp"

namespace tollgate::store {
namespace {

using testing::TempDir;
using testing::open_or_die;

LedgerRecord reserve(std::uint64_t id, std::int64_t amount, std::vector<LedgerScope> scopes) {
  LedgerRecord r;
  r.reservation_id = id;
  r.kind = LedgerKind::reserve;
  r.amount_nanos = amount;
  r.scopes = std::move(scopes);
  r.request_id = "req-" + std::to_string(id);
  r.model = "gpt-4o";
  r.at_ms = 1000;
  return r;
}

LedgerRecord settle(std::uint64_t id, std::int64_t amount, std::int64_t actual, std::string kind) {
  LedgerRecord r;
  r.reservation_id = id;
  r.kind = LedgerKind::settle;
  r.amount_nanos = amount;
  r.actual_nanos = actual;
  r.settle_kind = std::move(kind);
  r.at_ms = 2000;
  return r;
}

const LedgerScope kKey{"key", "hash-1", 0};
const LedgerScope kKeyDay{"key_window", "hash-1", 86'400'000};
const LedgerScope kTeam{"team", "team-a", 0};
const LedgerScope kOtherKey{"key", "hash-2", 0};

std::map<LedgerScope, std::int64_t> as_map(const std::vector<ScopeSpend>& v) {
  std::map<LedgerScope, std::int64_t> m;
  for (const auto& s : v) m[s.scope] = s.spent_nanos;
  return m;
}

using testing::append_sync;

// Every engine; the SQLite-only fault tests (a locked file, a full disk) are plain TESTs below.
class Ledger : public testing::EngineTest {};
INSTANTIATE_TEST_SUITE_P(Engines, Ledger, testing::kLedgerEngines, testing::engine_name);

TEST_P(Ledger, GroupCommitManyThreadsAllDurableOnce) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  constexpr int kThreads = 8, kPerThread = 1250;  // 10,000 records
  std::vector<std::atomic<int>> fired(kThreads * kPerThread);
  std::atomic<int> durable{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int id = t * kPerThread + i;
        store->append_ledger(reserve(static_cast<std::uint64_t>(id + 1), 10, {kKey, kTeam}),
                             [&, id](bool ok) {
                               fired[static_cast<std::size_t>(id)]++;
                               (ok ? durable : failed)++;
                             });
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(store->flush());
  EXPECT_EQ(durable.load(), kThreads * kPerThread);
  EXPECT_EQ(failed.load(), 0);
  for (auto& f : fired) ASSERT_EQ(f.load(), 1);
  const WriterStats st = store->writer_stats();
  EXPECT_EQ(st.ledger_records, static_cast<std::uint64_t>(kThreads * kPerThread));
  // Through the journal each record is its own write (without an fsync there is nothing for a
  // batch to share); the fold into the database is what batches.
  if (GetParam() != testing::Engine::sqlite_journal) {
    EXPECT_LT(st.batches, st.ledger_records) << "group commit should batch";
  }
  EXPECT_GT(st.max_batch, 1u);
  EXPECT_GT(st.p99_us, 0);
  EXPECT_LE(st.p50_us, st.p99_us);
  std::printf("group commit: %llu records in %llu batches, max batch %llu, p50 %lld us, p99 %lld us, max %lld us\n",
              static_cast<unsigned long long>(st.ledger_records),
              static_cast<unsigned long long>(st.batches),
              static_cast<unsigned long long>(st.max_batch), static_cast<long long>(st.p50_us),
              static_cast<long long>(st.p99_us), static_cast<long long>(st.max_us));
  auto all = store->read_ledger(0, 1'000'000);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), static_cast<std::size_t>(kThreads * kPerThread));
}

// Closed loop like the request path: each thread waits for durability before its next record.
// Reports the enqueue→durable latency the pipeline would see (printed, not asserted on timing).
TEST_P(Ledger, ClosedLoopLatency) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  constexpr int kThreads = 16, kPerThread = 200;
  std::atomic<int> durable{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i)
        if (append_sync(*store, reserve(static_cast<std::uint64_t>(t * kPerThread + i + 1), 10, {kKey, kTeam})))
          durable++;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(durable.load(), kThreads * kPerThread);
  const WriterStats st = store->writer_stats();
  if (GetParam() != testing::Engine::sqlite_journal) {
    EXPECT_LT(st.batches, st.ledger_records);  // as above
  }
  std::printf("closed loop (%d threads): %llu records in %llu batches (%.1f per batch), p50 %lld us, p99 %lld us, max %lld us\n",
              kThreads, static_cast<unsigned long long>(st.ledger_records),
              static_cast<unsigned long long>(st.batches),
              static_cast<double>(st.ledger_records) / static_cast<double>(st.batches),
              static_cast<long long>(st.p50_us), static_cast<long long>(st.p99_us),
              static_cast<long long>(st.max_us));
}

TEST_P(Ledger, SettleCopiesReserveScopesAndReadBack) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(append_sync(*store, reserve(7, 500, {kKey, kTeam})));
  ASSERT_TRUE(append_sync(*store, settle(7, 500, 120, "actual")));
  auto recs = store->read_ledger(0, 100);
  ASSERT_TRUE(recs);
  ASSERT_EQ(recs->size(), 2u);
  EXPECT_EQ((*recs)[0].kind, LedgerKind::reserve);
  EXPECT_EQ((*recs)[1].kind, LedgerKind::settle);
  EXPECT_LT((*recs)[0].sequence, (*recs)[1].sequence);
  EXPECT_EQ((*recs)[1].settle_kind, "actual");
  EXPECT_EQ((*recs)[1].actual_nanos, 120);
  EXPECT_EQ((*recs)[1].scopes.size(), 2u);
  auto rec = store->recover_ledger(5000);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->recovered.empty());
  auto m = as_map(rec->spent);
  EXPECT_EQ(m[kKey], 120);
  EXPECT_EQ(m[kTeam], 120);
  EXPECT_EQ(rec->max_reservation_id, 7u);
}

TEST_P(Ledger, SettleRecordFindsTheSettleOfOneReservation) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(append_sync(*store, reserve(41, 900, {kKey})));
  ASSERT_TRUE(append_sync(*store, reserve(42, 700, {kKey})));
  ASSERT_TRUE(append_sync(*store, settle(42, 700, 55, "actual")));
  auto open = store->settle_record(41);
  ASSERT_TRUE(open);
  EXPECT_FALSE(open->has_value()) << "41 has no settle record yet";
  auto settled = store->settle_record(42);
  ASSERT_TRUE(settled);
  ASSERT_TRUE(settled->has_value());
  EXPECT_EQ((*settled)->kind, LedgerKind::settle);
  EXPECT_EQ((*settled)->actual_nanos, 55);
  EXPECT_EQ((*settled)->settle_kind, "actual");
  auto none = store->settle_record(999);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

// A child process writes reservations (some settled), waits until they are durable, then
// SIGKILLs itself: no destructor, no clean close. The parent reopens and recovers.
TEST_P(Ledger, RecoveryAfterSigkillSettlesOpenReservationsConservatively) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto s = db_->try_open();
    if (!s) ::_exit(2);
    Store& store = **s;
    std::atomic<int> ok{0};
    auto cb = [&](bool d) { if (d) ok++; };
    // 1: settled at actual 30 (key, team); 2: open 100 (key, team); 3: open 40 (key-day window);
    // 4: unknown outcome settled at its reservation 70 (other key); 5: no usage → 0.
    store.append_ledger(reserve(1, 100, {kKey, kTeam}), cb);
    store.append_ledger(reserve(2, 100, {kKey, kTeam}), cb);
    store.append_ledger(reserve(3, 40, {kKey, kKeyDay}), cb);
    store.append_ledger(reserve(4, 70, {kOtherKey}), cb);
    store.append_ledger(reserve(5, 90, {kOtherKey}), cb);
    store.append_ledger(settle(1, 100, 30, "actual"), cb);
    store.append_ledger(settle(4, 70, 70, "unknown"), cb);
    store.append_ledger(settle(5, 90, 0, "no_usage"), cb);
    if (!store.flush() || ok.load() != 8) ::_exit(3);
    ::kill(::getpid(), SIGKILL);
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit code " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  auto store = db_->open();
  ASSERT_TRUE(store);
  auto rec = store->recover_ledger(9999);
  ASSERT_TRUE(rec) << rec.error().message;
  ASSERT_EQ(rec->recovered.size(), 2u);
  EXPECT_EQ(rec->recovered[0].reservation_id, 2u);
  EXPECT_EQ(rec->recovered[0].actual_nanos, 100);
  EXPECT_EQ(rec->recovered[0].settle_kind, "recovered");
  EXPECT_EQ(rec->recovered[0].at_ms, 9999);
  EXPECT_EQ(rec->recovered[0].scopes, (std::vector<LedgerScope>{kKey, kTeam}));
  EXPECT_EQ(rec->recovered[1].reservation_id, 3u);
  EXPECT_EQ(rec->recovered[1].actual_nanos, 40);
  EXPECT_GT(rec->recovered[1].sequence, rec->recovered[0].sequence);
  auto m = as_map(rec->spent);
  EXPECT_EQ(m[kKey], 30 + 100 + 40);
  EXPECT_EQ(m[kTeam], 30 + 100);
  EXPECT_EQ(m[kKeyDay], 40);
  EXPECT_EQ(m[kOtherKey], 70);
  EXPECT_EQ(rec->max_reservation_id, 5u);

  // The recovered settlements are durable: a second recovery (also after reopen) finds nothing.
  auto again = store->recover_ledger(10000);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->recovered.empty());
  EXPECT_EQ(as_map(again->spent), m);
  store.reset();
  auto reopened = db_->open();
  ASSERT_TRUE(reopened);
  auto third = reopened->recover_ledger(10001);
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->recovered.empty());
  EXPECT_EQ(as_map(third->spent), m);
}

// Settles charged at the saturation value (an upstream that reported 10^15 tokens at a high
// price) sum to it at recovery: a plain SUM failed with "integer overflow", and the gateway
// could then never start again.
TEST_P(Ledger, RecoveryTotalsOfHugeSettlesSaturate) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  {
    auto store = db_->open();
    ASSERT_TRUE(store);
    for (std::uint64_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(append_sync(*store, reserve(id, 100, {kKey})));
      ASSERT_TRUE(append_sync(*store, settle(id, 100, kMax, "actual")));
    }
    ASSERT_TRUE(store->flush());
  }
  auto store = db_->open();
  ASSERT_TRUE(store);
  auto rec = store->recover_ledger(9999);
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_TRUE(rec->recovered.empty());
  EXPECT_EQ(as_map(rec->spent)[kKey], kMax);
}

TEST_P(Ledger, ReusedReservationIdAfterSettleIsTrackedSeparately) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(append_sync(*store, reserve(1, 10, {kKey})));
  ASSERT_TRUE(append_sync(*store, settle(1, 10, 4, "actual")));
  ASSERT_TRUE(append_sync(*store, reserve(1, 20, {kTeam})));  // id reused after a restart
  auto rec = store->recover_ledger(1);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->recovered.size(), 1u);
  EXPECT_EQ(rec->recovered[0].actual_nanos, 20);
  auto m = as_map(rec->spent);
  EXPECT_EQ(m[kKey], 4);
  EXPECT_EQ(m[kTeam], 20);
}

// Another connection holds the database's write lock longer than the busy timeout: the
// writer cannot commit, so every record reports on_durable(false) and health() says so.
TEST(LedgerSqlite, LockedDatabaseReportsNotDurableAndUnhealthyThenRecovers) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  auto store = open_or_die(path, {.busy_timeout_ms = 50});
  ASSERT_TRUE(store);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);

  std::atomic<int> ok{0}, bad{0};
  for (int i = 0; i < 10; ++i)
    store->append_ledger(reserve(static_cast<std::uint64_t>(i + 1), 1, {kKey}),
                         [&](bool d) { (d ? ok : bad)++; });
  EXPECT_FALSE(store->flush());
  EXPECT_EQ(ok.load(), 0);
  EXPECT_EQ(bad.load(), 10);
  StoreHealth h = store->health();
  EXPECT_FALSE(h.writable);
  EXPECT_FALSE(h.last_error.empty());
  EXPECT_EQ(store->writer_stats().failed_ledger_records, 10u);
  EXPECT_EQ(store->create_user({.user_id = "x"}).error().code, StoreErrorCode::unavailable);

  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_TRUE(append_sync(*store, reserve(100, 1, {kKey})));
  EXPECT_TRUE(store->health().writable);
  // The failed records are not in the ledger.
  EXPECT_EQ(store->read_ledger(0, 100).value().size(), 1u);
}

// A settle cannot be refused: one whose batch failed is kept and written once the database can
// be written again (never dropped: the next start would charge its whole reservation). A reserve
// that failed is reported and forgotten, and its settle dropped: no settle without its reserve.
TEST(LedgerSqlite, SettleOfAFailedBatchIsWrittenLaterAndAFailedReservesSettleDropped) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  auto store = open_or_die(path, {.busy_timeout_ms = 50});
  ASSERT_TRUE(store);
  ASSERT_TRUE(append_sync(*store, reserve(1, 50, {kKey})));
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);

  std::promise<bool> settled1;
  store->append_ledger(settle(1, 50, 20, "actual"), [&](bool d) { settled1.set_value(d); });
  std::promise<bool> reserved2;
  store->append_ledger(reserve(2, 70, {kKey}), [&](bool d) { reserved2.set_value(d); });
  EXPECT_FALSE(reserved2.get_future().get());  // refused: the attempt is not sent
  std::promise<bool> settled2;
  store->append_ledger(settle(2, 70, 0, "no_usage"), [&](bool d) { settled2.set_value(d); });
  auto f1 = settled1.get_future();
  EXPECT_EQ(f1.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);  // kept, not failed
  EXPECT_GE(store->writer_stats().failed_batches, 2u);

  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_TRUE(f1.get());
  EXPECT_TRUE(settled2.get_future().get());
  ASSERT_TRUE(store->flush());
  auto rows = store->read_ledger(0, 100).value();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kind, LedgerKind::reserve);
  EXPECT_EQ(rows[1].kind, LedgerKind::settle);
  EXPECT_EQ(rows[1].reservation_id, 1u);
  EXPECT_EQ(rows[1].actual_nanos, 20);
  auto rec = store->recover_ledger(3000);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->recovered.empty());
  EXPECT_EQ(as_map(rec->spent)[kKey], 20);
}

// Stopping while a kept settle still cannot be written does not hang: it gets one last try, then
// its callback reports the failure (recovery at the next start settles the reservation).
TEST(LedgerSqlite, StopGivesUpAKeptSettle) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  std::promise<bool> settled;
  auto f = settled.get_future();
  sqlite3* other = nullptr;
  {
    auto store = open_or_die(path, {.busy_timeout_ms = 50});
    ASSERT_TRUE(store);
    ASSERT_TRUE(append_sync(*store, reserve(1, 50, {kKey})));
    ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    store->append_ledger(settle(1, 50, 20, "actual"), [&](bool d) { settled.set_value(d); });
    EXPECT_FALSE(store->flush());
  }
  EXPECT_FALSE(f.get());
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  auto store = open_or_die(path, {});
  auto rec = store->recover_ledger(3000);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->recovered.size(), 1u);
  EXPECT_EQ(rec->recovered[0].actual_nanos, 50);
}

// A full disk (simulated by a page cap) fails the batch, never crashes.
TEST(LedgerSqlite, FullDatabaseReportsNotDurable) {
  TempDir dir;
  auto store = open_or_die(dir.file("tg.db"), {.max_page_count = 48});  // the schema takes ~40
  ASSERT_TRUE(store);
  std::atomic<int> ok{0}, bad{0};
  std::string big(4000, 'x');
  for (int i = 0; i < 200; ++i) {
    LedgerRecord r = reserve(static_cast<std::uint64_t>(i + 1), 1, {kKey});
    r.request_id = big + std::to_string(i);
    store->append_ledger(std::move(r), [&](bool d) { (d ? ok : bad)++; });
    if (i % 20 == 19) store->flush();
  }
  store->flush();
  EXPECT_EQ(ok.load() + bad.load(), 200);
  EXPECT_GT(bad.load(), 0);
  EXPECT_FALSE(store->health().writable);
}

TEST_P(Ledger, CallbackExceptionsAreContained) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  store->append_ledger(reserve(1, 1, {}), [](bool) { throw std::runtime_error("boom"); });
  std::promise<bool> p;
  store->append_ledger(reserve(2, 1, {}), [&](bool d) { p.set_value(d); });
  EXPECT_TRUE(p.get_future().get());
}

TEST_P(Ledger, DestructorCommitsPendingRecords) {
  std::atomic<int> ok{0};
  {
    auto store = db_->open();
    ASSERT_TRUE(store);
    for (int i = 0; i < 100; ++i)
      store->append_ledger(reserve(static_cast<std::uint64_t>(i + 1), 1, {kKey}), [&](bool d) { if (d) ok++; });
  }
  EXPECT_EQ(ok.load(), 100);
  auto store = db_->open();
  EXPECT_EQ(store->read_ledger(0, 1000).value().size(), 100u);
}

TEST(LedgerSqlite, SynchronousFullWorks) {
  TempDir dir;
  auto store = open_or_die(dir.file("tg.db"), {.synchronous_full = true});
  ASSERT_TRUE(store);
  EXPECT_TRUE(append_sync(*store, reserve(1, 1, {kKey})));
}

}  // namespace
}  // namespace tollgate::store
