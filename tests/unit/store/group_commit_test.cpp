// GroupCommitWriter: ledger records commit at once; spend rows wait for a batch of their own
// (a row count or a linger), and every task, reader and stop commits the rows still held.
#include "store/group_commit.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace tollgate::store {
namespace {

using namespace std::chrono_literals;

/// Records the composition of each committed batch: {ledger records, spend rows}.
struct Recorder {
  std::mutex mu;
  std::vector<std::pair<int, int>> batches;
  GroupCommitWriter::CommitFn fn() {
    return [this](const std::vector<GroupCommitWriter::Item>& batch) -> std::optional<std::string> {
      int l = 0, s = 0;
      for (const auto& item : batch) (std::holds_alternative<GroupCommitWriter::LedgerItem>(item) ? l : s)++;
      std::lock_guard lk(mu);
      batches.emplace_back(l, s);
      return std::nullopt;
    };
  }
  int spend_committed() {
    std::lock_guard lk(mu);
    int n = 0;
    for (auto& b : batches) n += b.second;
    return n;
  }
  std::vector<std::pair<int, int>> snapshot() {
    std::lock_guard lk(mu);
    return batches;
  }
};

LedgerRecord reserve(std::uint64_t id) {
  LedgerRecord r;
  r.reservation_id = id;
  r.kind = LedgerKind::reserve;
  return r;
}

SpendLogRow spend(const std::string& id) {
  SpendLogRow r;
  r.request_id = id;
  return r;
}

/// Waits up to `limit` for `pred`.
template <class P>
bool eventually(P pred, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

TEST(GroupCommitWriter, ALedgerRecordDoesNotWaitForTheSpendRowsNorCarriesThem) {
  Recorder rec;
  GroupCommitWriter w({.spend_batch_rows = 1000, .spend_linger = 60s}, rec.fn());
  w.start();
  w.append_spend_log(spend("a"));
  w.append_spend_log(spend("b"));
  std::promise<bool> durable;
  w.append_ledger(reserve(1), [&](bool ok) { durable.set_value(ok); });
  auto f = durable.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(f.get());
  EXPECT_EQ(rec.snapshot(), (std::vector<std::pair<int, int>>{{1, 0}})) << "the reserve's transaction holds no spend row";
  EXPECT_EQ(rec.spend_committed(), 0);
  w.commit_held_now();  // what a reader of the spend log does first
  EXPECT_EQ(rec.spend_committed(), 2);
  EXPECT_EQ(w.stats().spend_rows, 2u);
}

TEST(GroupCommitWriter, HeldSpendRowsCommitAfterTheLingerWithoutAnyOtherWrite) {
  Recorder rec;
  GroupCommitWriter w({.spend_batch_rows = 1000, .spend_linger = 50ms}, rec.fn());
  w.start();
  std::this_thread::sleep_for(20ms);  // the writer is asleep with nothing pending
  const auto t0 = std::chrono::steady_clock::now();
  w.append_spend_log(spend("a"));
  ASSERT_TRUE(eventually([&] { return rec.spend_committed() == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 45ms) << "committed before the linger";
  EXPECT_EQ(rec.snapshot().size(), 1u);
}

TEST(GroupCommitWriter, AFullBatchOfSpendRowsCommitsAtOnceInOneTransaction) {
  Recorder rec;
  GroupCommitWriter w({.spend_batch_rows = 3, .spend_linger = 60s}, rec.fn());
  w.start();
  w.append_spend_log(spend("a"));
  w.append_spend_log(spend("b"));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(rec.spend_committed(), 0) << "two of three: still held";
  w.append_spend_log(spend("c"));
  ASSERT_TRUE(eventually([&] { return rec.spend_committed() == 3; }));
  EXPECT_EQ(rec.snapshot(), (std::vector<std::pair<int, int>>{{0, 3}}));
}

TEST(GroupCommitWriter, StopAndFlushCommitTheHeldRows) {
  Recorder rec;
  {
    GroupCommitWriter w({.spend_batch_rows = 1000, .spend_linger = 60s}, rec.fn());
    w.start();
    w.append_spend_log(spend("a"));
    EXPECT_TRUE(w.flush());
    EXPECT_EQ(rec.spend_committed(), 1);
    w.append_spend_log(spend("b"));
    w.stop();
  }
  EXPECT_EQ(rec.spend_committed(), 2) << "stop commits what is held";
}

TEST(GroupCommitWriter, TheBoundCountsHeldRows) {
  Recorder rec;
  GroupCommitWriter w({.max_pending_spend_rows = 2, .spend_batch_rows = 1000, .spend_linger = 60s}, rec.fn());
  w.start();
  for (int i = 0; i < 5; ++i) w.append_spend_log(spend(std::to_string(i)));
  std::promise<bool> durable;
  w.append_ledger(reserve(1), [&](bool ok) { durable.set_value(ok); });  // moves the rows to held
  durable.get_future().wait();
  w.append_spend_log(spend("x"));
  EXPECT_EQ(w.stats().dropped_spend_rows, 4u) << "two pending (held), three plus one dropped";
  w.commit_held_now();
  EXPECT_EQ(rec.spend_committed(), 2);
}

// A reader that comes while the writer is committing spend rows (their count already back to 0)
// waits for that commit: it reads every row appended before its call.
TEST(GroupCommitWriter, AReaderWaitsForSpendRowsBeingCommitted) {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true}, committed{false};
  GroupCommitWriter w({.spend_batch_rows = 1000, .spend_linger = 0ms},
                      [&](const std::vector<GroupCommitWriter::Item>&) -> std::optional<std::string> {
                        if (first.exchange(false)) {
                          entered.set_value();
                          released.wait();
                          committed = true;
                        }
                        return std::nullopt;
                      });
  w.start();
  w.append_spend_log(spend("a"));
  entered.get_future().wait();  // the writer is inside the commit of "a"
  auto reader = std::async(std::launch::async, [&] {
    w.commit_held_now();
    return committed.load();
  });
  EXPECT_EQ(reader.wait_for(100ms), std::future_status::timeout) << "the reader did not wait for the commit";
  release.set_value();
  EXPECT_TRUE(reader.get());
}

TEST(GroupCommitWriter, ZeroLingerCommitsSpendRowsAsTheyCome) {
  Recorder rec;
  GroupCommitWriter w({.spend_batch_rows = 1000, .spend_linger = 0ms}, rec.fn());
  w.start();
  w.append_spend_log(spend("a"));
  ASSERT_TRUE(eventually([&] { return rec.spend_committed() == 1; }, 2000ms));
}

}  // namespace
}  // namespace tollgate::store
