// JobRunner::stop (rolling restarts, docs/operations.md): a job in flight is cut at the drain's
// deadline and queued again; with nothing in flight the runner stops at once (its poll wait is
// woken). Claims when several runners share one store (each job run once; a live claim is never
// taken, an expired one is; a long run renews its claim), retention and the per-key queue limit.
// A real SQLite store in a temporary directory and a transport that never answers.
#include "pipeline/job_runner.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/loader.hpp"
#include "store/sqlite/sqlite_store.hpp"

namespace tollgate::pipeline {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// Never answers: waits until its deadline or until the attempt is cancelled.
class HangingTransport final : public http::Transport {
 public:
  net::awaitable<std::expected<std::unique_ptr<http::UpstreamExchange>, http::TransportError>> start(
      const http::OutgoingRequest&, http::SteadyTime deadline, http::CancelToken* token) override {
    auto exec = co_await net::this_coro::executor;
    net::steady_timer timer(exec, deadline);
    if (token) token->hook = [&timer] { timer.cancel(); };
    started = true;
    auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
    if (token) token->hook = nullptr;
    if (token && token->cancelled) cancelled = true;
    http::TransportError e;
    e.kind = http::TransportError::Kind::cancelled;
    e.sent = true;
    e.message = "cancelled";
    co_return std::unexpected(e);
  }
  std::atomic<bool> started{false};
  std::atomic<bool> cancelled{false};
};

/// Ignores cancellation: answers nothing for 30 s whatever happens (a run the cut cannot end).
class DeafTransport final : public http::Transport {
 public:
  net::awaitable<std::expected<std::unique_ptr<http::UpstreamExchange>, http::TransportError>> start(
      const http::OutgoingRequest&, http::SteadyTime, http::CancelToken*) override {
    auto exec = co_await net::this_coro::executor;
    net::steady_timer timer(exec, 30s);
    started = true;
    auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
    finished = true;
    http::TransportError e;
    e.kind = http::TransportError::Kind::timeout;
    e.sent = true;
    co_return std::unexpected(e);
  }
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tg_jobs_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 10000ms) {
  const auto end = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

constexpr const char* kConfig = R"(model_list:
  - model_name: g
    litellm_params:
      model: openai/x
      api_base: http://127.0.0.1:9/v1
      api_key: sk-unused
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
router_settings:
  num_retries: 0
litellm_settings:
  max_budget: 100
)";

store::JobRecord queued_job() {
  store::JobRecord job;
  job.id = "job-1";
  job.model_group = "g";
  job.call_type = "acompletion";
  job.request_body = R"({"model":"g","max_tokens":10,"messages":[{"role":"user","content":"hi"}]})";
  return job;
}

struct Fixture {
  /// `shared`: another fixture's store (a second instance on the same database); `extra`: YAML
  /// appended to the config; `lease`: the runner's claim lease.
  explicit Fixture(std::chrono::milliseconds poll, std::shared_ptr<http::Transport> t = nullptr,
                   std::shared_ptr<store::Store> shared = nullptr, std::string extra = {},
                   std::chrono::milliseconds lease = 30000ms)
      : transport_used(t ? std::move(t) : transport) {
    auto loaded = config::load_config_string(std::string(kConfig) + extra, "jobs.yaml",
                                             [](std::string_view) { return std::nullopt; });
    if (!loaded.ok()) throw std::runtime_error("config does not load");
    if (shared) {
      db = std::move(shared);
    } else {
      auto opened = store::sqlite::open_sqlite_store(dir.file("t.db"), {});
      if (!opened) throw std::runtime_error(opened.error().message);
      db = std::move(*opened);
    }
    services = Services::make(loaded.config, core::SystemClock::instance(), db);
    services->transport = transport_used;
    auto resolve = [](const store::JobRecord&, boost::json::object&)
        -> std::expected<std::shared_ptr<const auth::Principal>, core::Error> {
      return std::make_shared<const auth::Principal>();
    };
    JobRunner::Options o;
    o.poll = poll;
    o.claim_lease = lease;
    runner = std::make_unique<JobRunner>(services, resolve, http::ClientOptions{}, o);
    services->jobs = runner.get();
  }
  ~Fixture() {
    runner.reset();
    services->jobs = nullptr;
  }
  TempDir dir;
  std::shared_ptr<HangingTransport> transport = std::make_shared<HangingTransport>();
  std::shared_ptr<http::Transport> transport_used;
  std::shared_ptr<store::Store> db;
  std::shared_ptr<Services> services;
  std::unique_ptr<JobRunner> runner;
};

TEST(JobRunnerStop, CutsTheJobInFlightAtTheDeadlineAndQueuesItAgain) {
  Fixture f(20ms);
  ASSERT_TRUE(f.db->create_job(queued_job()));
  f.runner->start();
  ASSERT_TRUE(eventually([&] { return f.transport->started.load(); }));
  const auto t0 = Clock::now();
  f.runner->stop(Clock::now() + 100ms);
  EXPECT_LT(Clock::now() - t0, 5s);  // cut at the deadline, not at the attempt's own (600 s)
  EXPECT_TRUE(f.transport->cancelled);
  auto stored = f.db->get_job("job-1");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, "queued");  // runs again after the next start
  EXPECT_EQ(stored->attempts, 1);
  f.runner->stop();  // idempotent
  // Its reservation settled as an unknown outcome (sent, not answered): charged in full.
  const auto global = f.services->ledger->state(budget::ScopeId{budget::ScopeKind::global, "global"},
                                                std::chrono::system_clock::now());
  ASSERT_TRUE(global);
  EXPECT_EQ(global->reserved, 0);
  EXPECT_GT(global->unknown, 0);
  EXPECT_EQ(global->spent, global->unknown);
}

TEST(JobRunnerStop, AbandonsARunTheCutCannotEndAndItsReservationStillSettles) {
  auto deaf = std::make_shared<DeafTransport>();
  Fixture f(20ms, deaf);
  ASSERT_TRUE(f.db->create_job(queued_job()));
  f.runner->start();
  ASSERT_TRUE(eventually([&] { return deaf->started.load(); }));
  const auto t0 = Clock::now();
  f.runner->stop(Clock::now(), 100ms);
  EXPECT_LT(Clock::now() - t0, 10s);
  EXPECT_FALSE(deaf->finished);  // its frame was destroyed, not resumed
  // Destroying the run's frame settled its reservation (the Held guard), on the runner thread.
  const auto global = f.services->ledger->state(budget::ScopeId{budget::ScopeKind::global, "global"},
                                                std::chrono::system_clock::now());
  ASSERT_TRUE(global);
  EXPECT_EQ(global->reserved, 0);
  EXPECT_GT(global->spent, 0);
  EXPECT_TRUE(f.db->flush());
  auto stored = f.db->get_job("job-1");
  ASSERT_TRUE(stored);
  // Its claim was released when the frame was destroyed: queued again, claimable at once.
  EXPECT_EQ(stored->status, "queued");
  EXPECT_EQ(stored->claimed_by, "");
  EXPECT_EQ(stored->attempts, 1);
}

TEST(JobRunnerStop, WithNothingInFlightStopsWithoutWaitingForItsPoll) {
  Fixture f(30s);
  f.runner->start();
  std::this_thread::sleep_for(50ms);  // the loop is in its poll wait
  const auto t0 = Clock::now();
  f.runner->stop(Clock::now() + 60s);
  EXPECT_LT(Clock::now() - t0, 10s);
  EXPECT_FALSE(f.transport->started);
}

// --- several instances on one store (docs/scale_out.md) ----------------------------------------

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(JobRunnerClaims, TwoRunnersOnOneStoreRunAJobOnce) {
  Fixture a(10ms);
  auto second = std::make_shared<HangingTransport>();
  Fixture b(10ms, second, a.db);
  for (int i = 0; i < 3; ++i) {
    auto j = queued_job();
    j.id = "job-" + std::to_string(i);
    ASSERT_TRUE(a.db->create_job(j));
  }
  a.runner->start();
  b.runner->start();
  // Each runner takes one job (its run hangs); the third waits for a free runner.
  ASSERT_TRUE(eventually([&] { return a.transport->started.load() && second->started.load(); }));
  std::this_thread::sleep_for(200ms);  // many polls of both
  auto running = a.db->list_jobs(std::string("running"), 10).value();
  ASSERT_EQ(running.size(), 2u);
  EXPECT_NE(running[0].claimed_by, running[1].claimed_by);
  for (const auto& j : running) {
    EXPECT_TRUE(j.claimed_by == a.runner->owner() || j.claimed_by == b.runner->owner()) << j.claimed_by;
    EXPECT_EQ(j.attempts, 1) << j.id;
  }
  EXPECT_EQ(a.db->list_jobs(std::string("queued"), 10).value().size(), 1u);
  a.runner->stop(Clock::now());
  b.runner->stop(Clock::now());
}

TEST(JobRunnerClaims, ALiveInstancesRunningJobIsNotStolenAtStartAnExpiredOneIsTakenOver) {
  Fixture f(10ms);
  auto live = queued_job();
  live.id = "job-live";
  live.status = "running";
  live.attempts = 1;
  live.claimed_by = "another-instance";
  live.claim_expires_ms = wall_ms() + 600000;
  live = f.db->create_job(live).value();
  f.runner->start();
  std::this_thread::sleep_for(300ms);  // many polls
  EXPECT_FALSE(f.transport->started);
  EXPECT_EQ(f.db->get_job("job-live").value(), live);

  // Its instance died: once the claim expires the job is this runner's.
  auto dead = queued_job();
  dead.id = "job-dead";
  dead.status = "running";
  dead.attempts = 1;
  dead.updated_ms = wall_ms() - 10000;  // past the backoff after one run
  dead.claimed_by = "dead-instance";
  dead.claim_expires_ms = wall_ms() - 1;
  ASSERT_TRUE(f.db->create_job(dead));
  ASSERT_TRUE(eventually([&] { return f.transport->started.load(); }));
  auto taken = f.db->get_job("job-dead").value();
  EXPECT_EQ(taken.status, "running");
  EXPECT_EQ(taken.claimed_by, f.runner->owner());
  EXPECT_EQ(taken.attempts, 2);
  EXPECT_EQ(f.db->get_job("job-live").value(), live);
  f.runner->stop(Clock::now());
}

TEST(JobRunnerClaims, ALongRunRenewsItsClaimSoNoOtherRunnerTakesIt) {
  Fixture a(10ms, nullptr, nullptr, {}, 300ms);
  auto second = std::make_shared<HangingTransport>();
  ASSERT_TRUE(a.db->create_job(queued_job()));
  a.runner->start();
  ASSERT_TRUE(eventually([&] { return a.transport->started.load(); }));
  Fixture b(10ms, second, a.db, {}, 300ms);
  b.runner->start();
  std::this_thread::sleep_for(1200ms);  // four leases
  EXPECT_FALSE(second->started) << "the claim was renewed";
  auto j = a.db->get_job("job-1").value();
  EXPECT_EQ(j.claimed_by, a.runner->owner());
  EXPECT_GT(j.claim_expires_ms, wall_ms());
  b.runner->stop(Clock::now());
  a.runner->stop(Clock::now());
}

TEST(JobRunnerRetention, FinishedJobsPastTheRetentionAreDeleted) {
  Fixture f(10ms, nullptr, nullptr, "tollgate_settings:\n  job_retention_ms: 60000\n");
  auto old_done = queued_job();
  old_done.id = "old";
  old_done.status = "succeeded";
  old_done.created_ms = old_done.updated_ms = wall_ms() - 120000;
  auto fresh = old_done;
  fresh.id = "fresh";
  fresh.updated_ms = wall_ms() - 1000;
  auto old_failed = old_done;
  old_failed.id = "old-failed";
  old_failed.status = "failed";
  ASSERT_TRUE(f.db->create_job(old_done));
  ASSERT_TRUE(f.db->create_job(fresh));
  ASSERT_TRUE(f.db->create_job(old_failed));
  f.runner->start();
  ASSERT_TRUE(eventually([&] { return !f.db->get_job("old") && !f.db->get_job("old-failed"); }));
  EXPECT_EQ(f.db->get_job("old").error().code, store::StoreErrorCode::not_found);
  EXPECT_TRUE(f.db->get_job("fresh"));
  f.runner->stop(Clock::now());
}

/// Runs defer() on a context of its own.
std::expected<store::JobRecord, DeferRefused> defer_now(JobRunner& runner, store::JobRecord job) {
  net::io_context ioc;
  std::optional<std::expected<store::JobRecord, DeferRefused>> out;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> { out = co_await runner.defer(job, Clock::now() + 10s); },
      net::detached);
  ioc.run();
  return std::move(*out);
}

TEST(JobRunnerQueueLimit, AKeyWithMaxQueuedJobsDefersNoMoreOtherKeysStill) {
  Fixture f(30s, nullptr, nullptr, "tollgate_settings:\n  max_queued_jobs_per_key: 2\n");
  f.runner->start();
  auto mine = queued_job();
  mine.api_key = "hash-a";
  for (int i = 0; i < 2; ++i) {
    auto r = defer_now(*f.runner, mine);
    ASSERT_TRUE(r) << r.error().message;
  }
  auto third = defer_now(*f.runner, mine);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().why, DeferRefused::Why::queue_full);
  EXPECT_NE(third.error().message.find("max_queued_jobs_per_key: 2"), std::string::npos) << third.error().message;
  auto other = queued_job();
  other.api_key = "hash-b";
  EXPECT_TRUE(defer_now(*f.runner, other));
  EXPECT_EQ(f.db->count_active_jobs("hash-a").value(), 2);
  // A finished job no longer counts.
  auto jobs = f.db->list_jobs(std::nullopt, 10).value();
  for (auto j : jobs)
    if (j.api_key == "hash-a") {
      j.status = "succeeded";
      ASSERT_TRUE(f.db->update_job(j));
      break;
    }
  EXPECT_TRUE(defer_now(*f.runner, mine));
  f.runner->stop(Clock::now());
}

TEST(JobRunnerQueueLimit, ZeroQueuesNothing) {
  Fixture f(30s, nullptr, nullptr, "tollgate_settings:\n  max_queued_jobs_per_key: 0\n");
  f.runner->start();
  auto r = defer_now(*f.runner, queued_job());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().why, DeferRefused::Why::queue_full);
  EXPECT_TRUE(f.db->list_jobs(std::nullopt, 10).value().empty());
  f.runner->stop(Clock::now());
}

}  // namespace
}  // namespace tollgate::pipeline
