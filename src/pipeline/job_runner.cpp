#include "pipeline/job_runner.hpp"
#include "core/json_parse.hpp"

#include <algorithm>
#include <mutex>

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "core/ids.hpp"
#include "pipeline/capture_sink.hpp"
#include "policy/request_budget.hpp"

namespace tollgate::pipeline {
namespace net = boost::asio;
namespace json = boost::json;

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

JobRunner::JobRunner(std::shared_ptr<Services> services, Resolve resolve, http::ClientOptions client, Options options)
    : s_(std::move(services)), resolve_(std::move(resolve)), client_(std::move(client)), options_(std::move(options)) {
  if (options_.owner.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    options_.owner = std::string(host[0] ? host : "tollgate") + ":" + std::to_string(::getpid()) + ":" +
                     core::new_uuid().substr(28, 8);  // random bits: a UUIDv7 starts with the time
  }
  if (options_.claim_lease < std::chrono::milliseconds(3)) options_.claim_lease = std::chrono::milliseconds(3);
}

JobRunner::~JobRunner() { stop(); }

void JobRunner::start() {
  if (!svc()->store || thread_.joinable()) return;
  // No requeue of "running" jobs here: with several instances on one store, a running job may be
  // a live instance's. One whose claim expired (its process died) is claimed again in loop().
  thread_ = std::thread([this] {
    http::UpstreamPool pool(ioc_, client_);
    http::UpstreamPool::install(&pool);
    net::co_spawn(ioc_, loop(), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::error("deferred-job runner stopped: {}", ex.what());
      } catch (...) {
        spdlog::error("deferred-job runner stopped by an unknown exception");
      }
    });
    ioc_.run();
    // Stopped with a run still suspended (stop()'s grace over): its frame is destroyed here,
    // while the pool its connection came from is alive.
    ioc_.abandon_pending();
    http::UpstreamPool::install(nullptr);
    std::lock_guard lk(done_mu_);
    done_ = true;
    done_cv_.notify_all();
  });
}

void JobRunner::begin_drain() {
  stopping_ = true;
  net::post(ioc_, [this] {
    if (poll_timer_) poll_timer_->cancel();
  });
}

void JobRunner::stop(std::chrono::steady_clock::time_point finish_by, std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  begin_drain();
  std::unique_lock lk(done_mu_);
  if (!done_cv_.wait_until(lk, finish_by, [this] { return done_; })) {
    net::post(ioc_, [this] {
      if (auto cut = std::move(cut_)) cut();
    });
    if (!done_cv_.wait_for(lk, grace, [this] { return done_; })) {
      spdlog::warn("deferred-job runner: the job in flight did not end {} ms after it was cut; abandoning it",
                   grace.count());
      ioc_.stop();
    }
  }
  lk.unlock();
  thread_.join();
}

net::awaitable<std::expected<store::JobRecord, DeferRefused>> JobRunner::defer(store::JobRecord job,
                                                                              core::SteadyTime deadline) {
  using Result = std::expected<store::JobRecord, DeferRefused>;
  using Why = DeferRefused::Why;
  if (!svc()->store) co_return std::unexpected(DeferRefused{Why::unavailable, "no store is configured"});
  job.id = "job-" + core::new_uuid();
  job.status = "queued";
  job.created_ms = job.updated_ms = now_ms();
  // The insert is a blocking store write: it runs on the runner's thread and the request waits
  // for it without blocking its own, at most until its deadline. A job whose request gave up
  // waiting is marked failed rather than run behind the client's back.
  struct Shared {
    std::mutex mu;
    std::optional<Result> result;
    bool abandoned = false;
  };
  auto shared = std::make_shared<Shared>();
  auto exec = co_await net::this_coro::executor;
  auto timer = std::make_shared<net::steady_timer>(exec, deadline);
  const std::int64_t max_jobs = svc()->config->tollgate_settings.max_queued_jobs_per_key;
  // The runner holds the caller's timer weakly: the lambda may be destroyed on the runner's thread
  // after the caller's context is gone, and must not then destroy a timer of that context (a
  // use-after-free found by AddressSanitizer). It posts the wake-up under the mutex, so a caller
  // that returns normally cannot have done so while the post is made (one destroyed unresumed by
  // its context's shutdown does not take the mutex: that narrow window remains).
  net::post(ioc_, [this, max_jobs, job, shared, weak_timer = std::weak_ptr<net::steady_timer>(timer), exec]() mutable {
    {
      std::lock_guard lk(shared->mu);
      if (shared->abandoned) return;
    }
    auto& store = *svc()->store;
    // The per-key bound, counted in the store (so across instances) just before the insert.
    std::optional<Result> refused;
    if (max_jobs == 0) {
      refused = std::unexpected(DeferRefused{Why::queue_full, "tollgate_settings.max_queued_jobs_per_key is 0: no job is queued"});
    } else if (auto n = store.count_active_jobs(job.api_key); !n) {
      refused = std::unexpected(DeferRefused{Why::unavailable, n.error().message});
    } else if (*n >= max_jobs) {
      refused = std::unexpected(DeferRefused{
          Why::queue_full, "the key already has " + std::to_string(*n) +
                               " deferred job(s) queued or running (tollgate_settings.max_queued_jobs_per_key: " +
                               std::to_string(max_jobs) + ")"});
    }
    std::optional<store::StoreResult<store::JobRecord>> r;
    if (!refused) r = store.create_job(job);
    Result res = refused ? std::move(*refused)
                 : *r    ? Result(**r)
                         : Result(std::unexpected(DeferRefused{Why::unavailable, r->error().message}));
    bool abandoned = false;
    {
      std::lock_guard lk(shared->mu);
      abandoned = shared->abandoned;
      if (!abandoned) {
        shared->result = std::move(res);
        if (auto t = weak_timer.lock()) net::post(exec, [t = std::move(t)] { t->cancel(); });
      }
    }
    if (abandoned && r && *r) {
      // Claimed first, so that a runner (of any instance) that took it meanwhile keeps it.
      auto claimed = store.claim_job(job.id, options_.owner, now_ms(), options_.claim_lease.count());
      if (claimed && *claimed) {
        auto failed = **claimed;
        failed.status = "failed";
        failed.attempts = 0;
        failed.error = R"({"error":{"message":"the request's deadline passed before its job was stored","type":"api_error","code":"deferral_timeout"}})";
        failed.updated_ms = now_ms();
        finish(failed);
      }
    }
  });
  for (;;) {
    {
      std::lock_guard lk(shared->mu);
      if (shared->result) co_return std::move(*shared->result);
      if (std::chrono::steady_clock::now() >= deadline) {
        shared->abandoned = true;
        co_return std::unexpected(
            DeferRefused{Why::unavailable, "the job store did not answer before the request's deadline"});
      }
    }
    auto [ec] = co_await timer->async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
  }
}

bool JobRunner::group_open_for_traffic(const std::string& group) const {
  const auto s = svc();  // one snapshot: its groups' indices are its circuits'
  if (s->circuits->feature_state(group) == policy::CircuitState::open) return false;
  const auto* members = s->groups->find(group);
  if (!members) return false;
  for (auto i : *members)
    if (s->circuits->available(i)) return true;
  return false;
}

void JobRunner::sweep_finished(std::int64_t now) {
  if (now < next_sweep_ms_) return;
  const std::int64_t retention = svc()->config->tollgate_settings.job_retention.count();
  next_sweep_ms_ = now + std::clamp<std::int64_t>(retention / 2, 500, 60000);
  auto gone = svc()->store->delete_finished_jobs(now - retention);
  if (!gone)
    spdlog::warn("deferred jobs: cannot delete finished jobs: {}", gone.error().message);
  else if (*gone > 0)
    spdlog::info("deferred jobs: deleted {} finished job(s) older than {} ms", *gone, retention);
}

void JobRunner::finish(const store::JobRecord& job) {
  auto r = svc()->store->finish_job_run(job, options_.owner);
  if (!r)
    spdlog::warn("deferred job {}: cannot record its run ({}); it runs again once its claim expires", job.id,
                 r.error().message);
  else if (!*r)
    spdlog::warn("deferred job {}: its claim was lost (expired and taken by another runner); this run's outcome ({}) "
                 "is dropped",
                 job.id, job.status);
}

net::awaitable<void> JobRunner::loop() {
  auto exec = co_await net::this_coro::executor;
  net::steady_timer timer(exec);
  poll_timer_ = &timer;
  struct Unlink {
    net::steady_timer*& t;
    ~Unlink() { t = nullptr; }
  } unlink{poll_timer_};
  while (!stopping_) {
    sweep_finished(now_ms());
    // Every queued job is looked at, oldest first: one that cannot run now (its group is down,
    // its backoff not over) does not hold up the others. Then the running jobs whose claim
    // expired: their instance died mid-run.
    std::vector<store::JobRecord> candidates;
    if (auto queued = svc()->store->list_jobs(std::string("queued"), 10000)) candidates = std::move(*queued);
    if (auto running = svc()->store->list_jobs(std::string("running"), 10000)) {
      const auto now = now_ms();
      for (auto& j : *running)
        if (j.claim_expires_ms <= now) candidates.push_back(std::move(j));
    }
    for (auto& job : candidates) {
      if (stopping_) break;
      co_await consider(std::move(job));
    }
    if (stopping_) break;
    timer.expires_after(options_.poll);
    auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
  }
}

net::awaitable<void> JobRunner::consider(store::JobRecord job) {
  const bool configured = svc()->groups->contains(job.model_group);
  if (configured) {
    if (job.attempts > 0) {
      const auto shift = std::min<std::int64_t>(job.attempts - 1, 6);
      const auto wait = std::min<std::int64_t>(options_.first_backoff.count() << shift, 60000);
      if (now_ms() < job.updated_ms + wait) co_return;
    }
    if (!group_open_for_traffic(job.model_group)) co_return;
  }
  // Compare-and-set: of the instances looking at this job now, one gets it.
  auto claimed = svc()->store->claim_job(job.id, options_.owner, now_ms(), options_.claim_lease.count());
  if (!claimed) {
    spdlog::warn("deferred job {}: cannot claim it: {}", job.id, claimed.error().message);
    co_return;
  }
  if (!*claimed) co_return;  // another runner has it
  store::JobRecord mine = std::move(**claimed);
  if (!configured) {
    mine.status = "failed";
    mine.error = R"({"error":{"message":"the job's model group is no longer configured","type":"invalid_request_error","code":"model_not_found"}})";
    mine.updated_ms = now_ms();
    finish(mine);
    co_return;
  }
  co_await run_one(std::move(mine));
}

net::awaitable<void> JobRunner::renew_claim(std::string id, std::shared_ptr<Renewal> renewal) {
  const auto every = options_.claim_lease / 3;
  while (!renewal->done) {
    renewal->timer.expires_after(every);
    auto [ec] = co_await renewal->timer.async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
    if (renewal->done) break;
    auto r = svc()->store->renew_job_claim(id, options_.owner, now_ms(), options_.claim_lease.count());
    if (!r) {
      spdlog::warn("deferred job {}: cannot renew its claim: {}", id, r.error().message);
    } else if (!*r) {
      spdlog::warn("deferred job {}: its claim was lost while it ran", id);
      break;
    }
  }
}

net::awaitable<void> JobRunner::run_one(store::JobRecord job) {
  // `job` is claimed (status running, attempts counts this run). While it runs its claim is
  // renewed; a frame destroyed before the run ended (stop() abandoned it) releases the claim.
  auto renewal = std::make_shared<Renewal>(co_await net::this_coro::executor);
  struct Release {
    JobRunner* runner;
    store::JobRecord* job;
    std::shared_ptr<Renewal> renewal;
    bool armed = true;
    ~Release() {
      renewal->done = true;
      renewal->timer.cancel();
      if (!armed) return;
      job->status = "queued";
      job->updated_ms = now_ms();
      runner->finish(*job);
    }
  } release{this, &job, renewal};
  net::co_spawn(renewal->timer.get_executor(), renew_claim(job.id, renewal), net::detached);

  if (job.attempts > options_.max_runs) {
    // Claimed again after runs that never ended (their instance died each time).
    release.armed = false;
    job.status = "failed";
    job.error = R"({"error":{"message":"the job was started too many times without finishing","type":"api_error","code":"job_runs_exhausted"}})";
    job.updated_ms = now_ms();
    finish(job);
    spdlog::warn("deferred job {} failed: claimed {} times", job.id, job.attempts);
    co_return;
  }

  boost::system::error_code ec;
  auto parsed = core::parse_json(job.request_body, ec);
  ChatCall call;
  call.model = job.model_group;
  call.call_id = core::new_uuid();
  call.start = svc()->clock->now();
  call.call_type = job.call_type.empty() ? "acompletion" : job.call_type;
  call.allow_degradation = false;
  if (!ec && parsed.is_object()) call.body = std::move(parsed.as_object());
  // The request's effective budgets, stored with it (pipeline's deferred_body): tighten only.
  if (auto* rb = call.body.if_contains("tollgate_request_budget"); rb && rb->is_object()) {
    for (const auto& [k, v] : rb->as_object()) {
      const std::string text = v.is_string() ? std::string(v.as_string()) : json::serialize(v);
      (void)policy::parse_override_field(k, text, call.request_budget);
    }
  }
  call.body.erase("tollgate_request_budget");
  // Validated when the job was accepted; a stored body that no longer reads keeps no limit.
  (void)read_caller_output(call.body, call.output, call.caller_output_fields);
  auto principal = ec ? std::expected<std::shared_ptr<const auth::Principal>, core::Error>(std::unexpected(
                            core::Error::gateway(500, "api_error", "the stored request body is not JSON")))
                      : resolve_(job, call.body);
  if (!principal) {
    release.armed = false;
    job.status = "failed";
    job.error = captured_error_body(principal.error());
    job.updated_ms = now_ms();
    finish(job);
    spdlog::warn("deferred job {} failed: {}", job.id, principal.error().message);
    co_return;
  }
  call.principal = std::move(*principal);
  if (call.principal->key)
    for (const auto& bad : policy::read_key_budget(call.principal->key->metadata, call.key_budget))
      spdlog::warn("deferred job {}: key metadata {} (ignored)", job.id, bad);
  CaptureSink sink(&cut_);
  const RunOutcome out = co_await run_chat(svc(), call, sink);
  cut_ = nullptr;
  release.armed = false;
  job.request_id = call.call_id;
  job.updated_ms = now_ms();
  if (out.served) {
    job.status = "succeeded";
    job.result = std::move(sink.result);
    job.error.clear();
    spdlog::info("deferred job {} completed (request {})", job.id, job.request_id);
  } else if (out.retryable && job.attempts < options_.max_runs) {
    job.status = "queued";
    job.error = std::move(sink.error);
  } else {
    job.status = "failed";
    job.error = std::move(sink.error);
    spdlog::warn("deferred job {} failed after {} run(s)", job.id, job.attempts);
  }
  finish(job);
}

}  // namespace tollgate::pipeline
