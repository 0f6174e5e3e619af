// JobRunner::stop (rolling restarts, docs/operations.md): a job in flight is cut at the drain's
// deadline and queued again; with nothing in flight the runner stops at once (its poll wait is
// woken). A real SQLite store in a temporary directory and a transport that never answers.
#include "pipeline/job_runner.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <boost/asio/as_tuple.hpp>
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
  explicit Fixture(std::chrono::milliseconds poll, std::shared_ptr<http::Transport> t = nullptr)
      : transport_used(t ? std::move(t) : transport) {
    auto loaded = config::load_config_string(kConfig, "jobs.yaml", [](std::string_view) { return std::nullopt; });
    if (!loaded.ok()) throw std::runtime_error("config does not load");
    auto opened = store::sqlite::open_sqlite_store(dir.file("t.db"), {});
    if (!opened) throw std::runtime_error(opened.error().message);
    db = std::move(*opened);
    services = Services::make(loaded.config, core::SystemClock::instance(), db);
    services->transport = transport_used;
    auto resolve = [](const store::JobRecord&, boost::json::object&)
        -> std::expected<std::shared_ptr<const auth::Principal>, core::Error> {
      return std::make_shared<const auth::Principal>();
    };
    JobRunner::Options o;
    o.poll = poll;
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
  EXPECT_EQ(stored->status, "running");  // requeued at the next start
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

}  // namespace
}  // namespace tollgate::pipeline
