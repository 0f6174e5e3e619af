#pragma once
/// LiteLLM's `background_health_checks` (docs.litellm.ai/docs/proxy/health): a thread of its
/// own (an io_context and an upstream pool, like the deferred-job runner) runs a health round
/// (pipeline/health_checks.hpp) every `general_settings.health_check_interval` on the services
/// snapshot in force, and keeps the last report for `GET /health`. The rounds' outcomes feed
/// the circuits: a failing deployment's circuit opens per its group's rules, and a half-open
/// one is probed by the next round and closes when it answers. docs/health_checks.md.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/steady_timer.hpp>

#include "http/client.hpp"
#include "http/io_context.hpp"
#include "pipeline/health_checks.hpp"

namespace tollgate::pipeline {

class HealthMonitor {
 public:
  /// `current`: the services snapshot in force (called from the monitor's thread, once a round).
  HealthMonitor(std::function<std::shared_ptr<Services>()> current, http::ClientOptions client);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  /// Starts the thread: the first round at once, then one every interval (read from the config
  /// in force each time; while background_health_checks is false there, no round runs).
  void start();
  /// Stops: a round in flight is cut (each run ends, its reservation settled by its evidence),
  /// waits up to `grace` for it, then joins. Idempotent; thread-safe.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  /// The last finished round; nullopt before the first one ends. Thread-safe.
  std::optional<HealthReport> last() const;

 private:
  boost::asio::awaitable<void> loop();

  std::function<std::shared_ptr<Services>()> current_;
  http::ClientOptions client_;
  http::IoContext ioc_;
  boost::asio::steady_timer timer_{ioc_};
  std::shared_ptr<HealthRoundControl> control_;  ///< the round in flight (monitor thread only)
  bool stopping_ = false;                        ///< monitor thread only
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::optional<HealthReport> last_;
};

}  // namespace tollgate::pipeline
