#pragma once
/// The deferred-job runner (issue 4 §5): stores jobs the `deferred` degradation mode queues, and
/// runs them through the attempt loop once the group lets traffic through again (its feature
/// circuit is not open and at least one deployment's circuit admits an attempt). A job runs as
/// the key that queued it, with that key's budgets and access; a run that fails with a
/// capacity, transient or unknown-outcome class is queued again, run again after a backoff
/// (1 s, 2 s, 4 s … capped at 60 s) and at most `max_runs` times; any
/// other failure ends the job as failed. Jobs left queued by an earlier process are picked up at
/// start: they survive a restart.
///
/// Several instances may share one store (docs/scale_out.md): a runner claims a job before it
/// runs it (Store::claim_job, compare-and-set: exactly one instance runs each run of a job),
/// renews the claim every third of `claim_lease` while the run lasts, and writes the outcome
/// only while it still holds the claim. A job whose claim expired (its instance died, or was
/// killed mid-run) is claimed again by whichever runner looks next; a live instance's claim is
/// never taken. Finished jobs older than tollgate_settings.job_retention_ms are deleted, and a
/// key with tollgate_settings.max_queued_jobs_per_key jobs queued or running defers no more.
///
/// One thread of its own (an io_context with its own upstream pool); store calls are blocking
/// and run there, never on the I/O workers.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "http/client.hpp"
#include "http/io_context.hpp"
#include "pipeline/attempt_loop.hpp"
#include "pipeline/jobs.hpp"

namespace tollgate::pipeline {

class JobRunner final : public JobQueue {
 public:
  /// Resolves the principal a job runs as from the token hash it was queued with (empty =
  /// master key / open gateway) and its request body (end user, tags); the error when the key
  /// can no longer call (deleted, blocked, expired): the job then fails with it.
  using Resolve = std::function<std::expected<std::shared_ptr<const auth::Principal>, core::Error>(
      const store::JobRecord& job, boost::json::object& body)>;

  struct Options {
    std::chrono::milliseconds poll{500};  ///< how often queued jobs are looked at
    int max_runs = 8;                     ///< runs before a job that keeps failing is failed
    /// Wait before a job's next run after a failed one: doubles per run, capped at 60 s.
    std::chrono::milliseconds first_backoff{1000};
    /// How long a claim holds without a renewal: a dead instance's running job runs again
    /// about this long after it died.
    std::chrono::milliseconds claim_lease{30000};
    /// This instance's name in claims (claimed_by); empty = host:pid:random.
    std::string owner;
    /// The services snapshot in force (config hot reload: pipeline/live_services.hpp); each job
    /// run takes one and keeps it. Empty = the services given to the constructor, always.
    std::function<std::shared_ptr<Services>()> current;
  };

  JobRunner(std::shared_ptr<Services> services, Resolve resolve, http::ClientOptions client, Options options);
  ~JobRunner() override;
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  /// Starts the runner thread.
  void start();
  /// Takes no new job from now on (a job in flight runs on). Thread-safe.
  void begin_drain();
  /// Stops the runner: no new job is taken; a job in flight may run until `finish_by`, then
  /// it is cut (its run ends as a request cut by the drain does: the job is queued again and
  /// its reservation settles by its evidence). A run that has not ended `grace` after that is
  /// abandoned: its frame is destroyed on the runner's thread (RAII settles its reservation,
  /// its claim is released: the job is queued again). Returns once the thread has
  /// ended. Idempotent; called by the destructor with `finish_by` = now.
  void stop(std::chrono::steady_clock::time_point finish_by = {},
            std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  /// Refused (queue_full) when the job's key already has max_queued_jobs_per_key jobs queued
  /// or running (counted in the store, so across instances; concurrent deferrals of one key may
  /// pass the count together and exceed it by how many raced).
  boost::asio::awaitable<std::expected<store::JobRecord, DeferRefused>> defer(store::JobRecord job,
                                                                            core::SteadyTime deadline) override;

  /// This runner's name in claims.
  const std::string& owner() const noexcept { return options_.owner; }

 private:
  boost::asio::awaitable<void> loop();
  boost::asio::awaitable<void> run_one(store::JobRecord job);
  /// Claims `job` and runs it when it may run now (group configured, backoff over, group open).
  boost::asio::awaitable<void> consider(store::JobRecord job);
  bool group_open_for_traffic(const std::string& group) const;
  /// Deletes finished jobs past their retention, at most every half retention (≤ 60 s).
  void sweep_finished(std::int64_t now);
  /// Ends the claimed run of `job` with its fields as set; logs when the claim was lost.
  void finish(const store::JobRecord& job);
  /// A run's claim renewal (runner thread): `done` ends it.
  struct Renewal {
    explicit Renewal(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
    boost::asio::steady_timer timer;
    bool done = false;
  };
  boost::asio::awaitable<void> renew_claim(std::string id, std::shared_ptr<Renewal> renewal);

  std::int64_t next_sweep_ms_ = 0;  ///< runner thread

  std::shared_ptr<Services> s_;
  /// The snapshot in force (Options::current, else s_).
  std::shared_ptr<Services> svc() const { return options_.current ? options_.current() : s_; }
  Resolve resolve_;
  http::ClientOptions client_;
  Options options_;
  http::IoContext ioc_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  boost::asio::steady_timer* poll_timer_ = nullptr;  ///< the loop's wait between polls (runner thread)
  std::function<void()> cut_;                        ///< the job in flight's shutdown hook (runner thread)
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;  ///< the runner thread has ended its loop (guarded by done_mu_)
};

}  // namespace tollgate::pipeline
