#pragma once
/// The deferred-job runner (issue 4 §5): stores jobs the `deferred` degradation mode queues, and
/// runs them through the attempt loop once the group lets traffic through again (its feature
/// circuit is not open and at least one deployment's circuit admits an attempt). A job runs as
/// the key that queued it, with that key's budgets and access; a run that fails with a
/// capacity, transient or unknown-outcome class is queued again, run again after a backoff
/// (1 s, 2 s, 4 s … capped at 60 s) and at most `max_runs` times; any
/// other failure ends the job as failed. Jobs left queued or running by an earlier process are
/// picked up at start: they survive a restart.
///
/// One thread of its own (an io_context with its own upstream pool); store calls are blocking
/// and run there, never on the I/O workers.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "http/client.hpp"
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
  };

  JobRunner(std::shared_ptr<Services> services, Resolve resolve, http::ClientOptions client, Options options);
  ~JobRunner() override;
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  /// Starts the runner thread (requeues jobs an earlier process left running).
  void start();
  /// Stops the thread; a job in flight is left "running" and requeued at the next start.
  void stop();

  boost::asio::awaitable<std::expected<store::JobRecord, std::string>> defer(store::JobRecord job,
                                                                           core::SteadyTime deadline) override;

 private:
  boost::asio::awaitable<void> loop();
  boost::asio::awaitable<void> run_one(store::JobRecord job);
  bool group_open_for_traffic(const std::string& group) const;

  std::shared_ptr<Services> s_;
  Resolve resolve_;
  http::ClientOptions client_;
  Options options_;
  boost::asio::io_context ioc_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace tollgate::pipeline
