// Deferred jobs (degradation mode `deferred`, issue 4): CRUD on every engine, listing
// order and filter, survival across a restart, and migration 3 from a version-2 database.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "store/sqlite/sqlite_store.hpp"
#include "test_util.hpp"

namespace tollgate::store {
namespace {

using testing::open_or_die;

JobRecord job(const std::string& id, std::int64_t created, std::string status = "queued") {
  JobRecord j;
  j.id = id;
  j.created_ms = created;
  j.updated_ms = created;
  j.status = std::move(status);
  j.model_group = "gpt-4o";
  j.call_type = "acompletion";
  j.api_key = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  j.request_body = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";
  return j;
}

class JobStoreTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (not_ready()) return;
    store_ = db_->open();
    ASSERT_TRUE(store_);
  }
  std::vector<std::string> ids(std::optional<std::string> status, int limit = 100) {
    std::vector<std::string> out;
    auto r = store_->list_jobs(std::move(status), limit);
    EXPECT_TRUE(r) << r.error().message;
    if (r)
      for (const auto& j : *r) out.push_back(j.id);
    return out;
  }
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Engines, JobStoreTest, testing::kEngines, testing::engine_name);

using V = std::vector<std::string>;

TEST_P(JobStoreTest, CreateGetRoundTripsEveryField) {
  JobRecord j = job("job-1", 1'700'000'000'000);
  j.attempts = 2;
  j.result = R"({"id":"chatcmpl-1"})";
  j.error = R"({"error":{"message":"x"}})";
  j.request_id = "req-9";
  auto created = store_->create_job(j);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(*created, j);
  EXPECT_EQ(store_->get_job("job-1").value(), j);
}

TEST_P(JobStoreTest, TimesDefaultToNow) {
  JobRecord j = job("job-1", 0);
  j.updated_ms = 0;
  auto created = store_->create_job(j);
  ASSERT_TRUE(created);
  EXPECT_GT(created->created_ms, 1'600'000'000'000);
  EXPECT_EQ(created->updated_ms, created->created_ms);
  EXPECT_EQ(store_->get_job("job-1").value(), *created);
}

TEST_P(JobStoreTest, ErrorsAreValues) {
  ASSERT_TRUE(store_->create_job(job("job-1", 1)));
  auto dup = store_->create_job(job("job-1", 2));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, StoreErrorCode::conflict);
  EXPECT_EQ(dup.error().field, "id");

  auto empty = store_->create_job(job("", 1));
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, StoreErrorCode::invalid);
  EXPECT_EQ(empty.error().field, "id");

  auto bad = store_->create_job(job("job-2", 1, "done"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, StoreErrorCode::invalid);
  EXPECT_EQ(bad.error().field, "status");
  EXPECT_EQ(store_->update_job(job("job-1", 1, "paused")).error().code, StoreErrorCode::invalid);

  EXPECT_EQ(store_->get_job("nope").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->update_job(job("nope", 1)).error().code, StoreErrorCode::not_found);
}

TEST_P(JobStoreTest, UpdateReplacesFieldsKeepsCreated) {
  ASSERT_TRUE(store_->create_job(job("job-1", 1000)));
  JobRecord running = job("job-1", 0, "running");
  running.updated_ms = 0;  // → now
  running.attempts = 1;
  auto r = store_->update_job(running);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->created_ms, 1000);
  EXPECT_GT(r->updated_ms, 1000);
  EXPECT_EQ(store_->get_job("job-1").value(), *r);

  JobRecord done = *r;
  done.status = "succeeded";
  done.result = R"({"choices":[]})";
  done.request_id = "req-42";
  done.updated_ms = r->updated_ms + 5;  // an explicit time is kept
  ASSERT_TRUE(store_->update_job(done));
  EXPECT_EQ(store_->get_job("job-1").value(), done);
}

TEST_P(JobStoreTest, ListIsOldestFirstFilteredAndLimited) {
  ASSERT_TRUE(store_->create_job(job("c", 3000)));
  ASSERT_TRUE(store_->create_job(job("a", 1000, "running")));
  ASSERT_TRUE(store_->create_job(job("b2", 2000)));
  ASSERT_TRUE(store_->create_job(job("b1", 2000, "failed")));
  ASSERT_TRUE(store_->create_job(job("d", 4000, "succeeded")));
  EXPECT_EQ(ids(std::nullopt), (V{"a", "b1", "b2", "c", "d"}));  // created_ms, then id
  EXPECT_EQ(ids("queued"), (V{"b2", "c"}));
  EXPECT_EQ(ids("running"), (V{"a"}));
  EXPECT_EQ(ids("nope"), V{});
  EXPECT_EQ(ids(std::nullopt, 2), (V{"a", "b1"}));
  EXPECT_EQ(ids(std::nullopt, 0), V{});
  EXPECT_EQ(ids(std::nullopt, -1), V{});
}

TEST_P(JobStoreTest, JobsDoNotMoveTheIdentityGeneration) {
  const auto g0 = store_->identity_generation().value();
  ASSERT_TRUE(store_->create_job(job("j", 1)));
  ASSERT_TRUE(store_->update_job(job("j", 1, "running")));
  EXPECT_EQ(store_->identity_generation().value(), g0);
}

TEST_P(JobStoreTest, JobsSurviveARestart) {
  ASSERT_TRUE(store_->create_job(job("job-queued", 1000)));
  ASSERT_TRUE(store_->create_job(job("job-running", 2000, "running")));
  // A spend row and a ledger record in flight at close are committed by the destructor too.
  store_->append_spend_log(SpendLogRow{.request_id = "r"});
  store_.reset();

  auto again = db_->open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get_job("job-queued").value(), job("job-queued", 1000));
  auto queued = again->list_jobs("queued", 10);
  ASSERT_TRUE(queued);
  ASSERT_EQ(queued->size(), 1u);
  // A job left "running" by the crashed process is visible (its claim expires: claimable again).
  auto running = again->list_jobs("running", 10);
  ASSERT_TRUE(running);
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ(running->front().id, "job-running");
  JobRecord done = running->front();
  done.status = "succeeded";
  done.attempts = 1;
  ASSERT_TRUE(again->update_job(done));
  again.reset();
  auto third = db_->open();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->get_job("job-running").value().status, "succeeded");
}

// --- claims (several instances on one store) ------------------------------------------------

TEST_P(JobStoreTest, OfTwoClaimersExactlyOneWins) {
  ASSERT_TRUE(store_->create_job(job("j", 1000)));
  auto a = store_->claim_job("j", "instance-a", 5000, 30000);
  auto b = store_->claim_job("j", "instance-b", 5001, 30000);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_TRUE(*a);
  EXPECT_FALSE(*b);
  EXPECT_EQ((*a)->status, "running");
  EXPECT_EQ((*a)->claimed_by, "instance-a");
  EXPECT_EQ((*a)->claim_expires_ms, 35000);
  EXPECT_EQ((*a)->attempts, 1);
  EXPECT_EQ((*a)->updated_ms, 5000);
  EXPECT_EQ(store_->get_job("j").value(), **a);
  // Finished, absent: nobody claims.
  EXPECT_FALSE(store_->claim_job("nope", "instance-b", 5002, 30000).value());
  auto bad = store_->claim_job("j", "", 5002, 30000);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, StoreErrorCode::invalid);
}

TEST_P(JobStoreTest, ConcurrentClaimersOnTwoStoresExactlyOneWinsEachJob) {
  // Two stores on one database: two instances. Each job is claimed by exactly one of 8 threads.
  auto other = db_->open();
  ASSERT_TRUE(other);
  constexpr int kJobs = 20;
  for (int i = 0; i < kJobs; ++i) ASSERT_TRUE(store_->create_job(job("j" + std::to_string(i), 1000 + i)));
  std::atomic<int> wins{0}, errors{0};
  std::vector<std::thread> threads;
  std::mutex mu;
  std::map<std::string, int> won_by_job;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Store& s = t % 2 ? *other : *store_;
      for (int i = 0; i < kJobs; ++i) {
        auto r = s.claim_job("j" + std::to_string(i), "owner-" + std::to_string(t), 5000, 30000);
        if (!r) {
          ++errors;
          continue;
        }
        if (*r) {
          ++wins;
          std::lock_guard lk(mu);
          ++won_by_job[(*r)->id];
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wins.load(), kJobs);
  EXPECT_EQ(won_by_job.size(), static_cast<std::size_t>(kJobs));
  for (const auto& [id, n] : won_by_job) EXPECT_EQ(n, 1) << id;
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(store_->get_job("j" + std::to_string(i)).value().attempts, 1);
}

TEST_P(JobStoreTest, ALiveClaimIsNotStolenAnExpiredOneIsReclaimable) {
  ASSERT_TRUE(store_->create_job(job("j", 1000)));
  ASSERT_TRUE(store_->claim_job("j", "a", 5000, 1000).value());
  EXPECT_FALSE(store_->claim_job("j", "b", 5999, 1000).value()) << "live claim";
  // Renewal keeps it a's: at 6500 (past the first expiry) it still holds.
  EXPECT_TRUE(store_->renew_job_claim("j", "a", 5900, 1000).value());
  EXPECT_FALSE(store_->renew_job_claim("j", "b", 5900, 1000).value()) << "only the holder renews";
  EXPECT_FALSE(store_->claim_job("j", "b", 6500, 1000).value());
  // a dies: its claim expires at 6900; b takes the job over (a second run).
  auto b = store_->claim_job("j", "b", 6900, 1000).value();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->claimed_by, "b");
  EXPECT_EQ(b->attempts, 2);
  // a, back, can neither renew nor write its outcome.
  EXPECT_FALSE(store_->renew_job_claim("j", "a", 7000, 1000).value());
  JobRecord late = *b;
  late.status = "succeeded";
  late.result = R"({"from":"a"})";
  EXPECT_FALSE(store_->finish_job_run(late, "a").value());
  EXPECT_EQ(store_->get_job("j").value().status, "running");
  // b finishes: the claim is cleared, the outcome stored.
  JobRecord done = *b;
  done.status = "succeeded";
  done.result = R"({"from":"b"})";
  done.request_id = "req-b";
  done.updated_ms = 7100;
  ASSERT_TRUE(store_->finish_job_run(done, "b").value());
  auto stored = store_->get_job("j").value();
  EXPECT_EQ(stored.status, "succeeded");
  EXPECT_EQ(stored.result, R"({"from":"b"})");
  EXPECT_EQ(stored.request_id, "req-b");
  EXPECT_EQ(stored.claimed_by, "");
  EXPECT_EQ(stored.claim_expires_ms, 0);
  EXPECT_EQ(stored.updated_ms, 7100);
  // A finished job is claimable by nobody, even long after.
  EXPECT_FALSE(store_->claim_job("j", "c", 1'000'000, 1000).value());
  EXPECT_FALSE(store_->finish_job_run(done, "b").value()) << "not running any more";
  JobRecord bad = done;
  bad.status = "paused";
  EXPECT_EQ(store_->finish_job_run(bad, "b").error().code, StoreErrorCode::invalid);
}

TEST_P(JobStoreTest, AJobRequeuedByItsRunIsClaimableAgainAtOnce) {
  ASSERT_TRUE(store_->create_job(job("j", 1000)));
  auto a = store_->claim_job("j", "a", 5000, 30000).value();
  ASSERT_TRUE(a);
  a->status = "queued";
  a->updated_ms = 5100;
  ASSERT_TRUE(store_->finish_job_run(*a, "a").value());
  auto b = store_->claim_job("j", "b", 5200, 30000).value();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->attempts, 2);
}

TEST_P(JobStoreTest, CountsAKeysQueuedAndRunningJobs) {
  JobRecord other = job("o", 1);
  other.api_key = "other";
  ASSERT_TRUE(store_->create_job(other));
  ASSERT_TRUE(store_->create_job(job("q", 1)));
  ASSERT_TRUE(store_->create_job(job("r", 2, "running")));
  ASSERT_TRUE(store_->create_job(job("s", 3, "succeeded")));
  ASSERT_TRUE(store_->create_job(job("f", 4, "failed")));
  EXPECT_EQ(store_->count_active_jobs(job("x", 0).api_key).value(), 2);
  EXPECT_EQ(store_->count_active_jobs("other").value(), 1);
  EXPECT_EQ(store_->count_active_jobs("").value(), 0);
}

TEST_P(JobStoreTest, DeletesOnlyFinishedJobsOlderThanTheCutoff) {
  ASSERT_TRUE(store_->create_job(job("old-ok", 1000, "succeeded")));
  ASSERT_TRUE(store_->create_job(job("old-failed", 1500, "failed")));
  ASSERT_TRUE(store_->create_job(job("new-ok", 5000, "succeeded")));
  ASSERT_TRUE(store_->create_job(job("old-queued", 1000)));
  ASSERT_TRUE(store_->create_job(job("old-running", 1000, "running")));
  EXPECT_EQ(store_->delete_finished_jobs(2000).value(), 2);
  EXPECT_EQ(store_->get_job("old-ok").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(store_->get_job("old-failed").error().code, StoreErrorCode::not_found);
  EXPECT_EQ(ids(std::nullopt), (V{"old-queued", "old-running", "new-ok"}));
  EXPECT_EQ(store_->delete_finished_jobs(2000).value(), 0);
}

TEST(JobMemoryStore, WorksOnTheSharedConnection) {
  auto store = open_or_die(":memory:");
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_job(job("j", 1)));
  EXPECT_EQ(store->get_job("j").value(), job("j", 1));
  EXPECT_EQ(store->list_jobs(std::nullopt, 10).value().size(), 1u);
}

}  // namespace
}  // namespace tollgate::store
