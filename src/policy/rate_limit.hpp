#pragma once
/// Per-caller rate limits (LiteLLM `rpm_limit`, `tpm_limit`, `max_parallel_requests` on keys,
/// users and teams). Requests and tokens are counted in fixed one-minute windows; parallel
/// requests are counted while they run. Thread-safe (one small mutex, never held across I/O).

#include <chrono>
#include <cstdint>
#include <mutex>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/clock.hpp"

namespace tollgate::policy {

/// One rate-limited subject: e.g. {"key:<hash>", rpm 60, tpm 10000, parallel 4}.
struct RateSubject {
  std::string id;                           ///< "<kind>:<id>", unique across kinds
  std::optional<std::int64_t> rpm;          ///< requests per minute
  std::optional<std::int64_t> tpm;          ///< tokens (prompt + completion) per minute
  std::optional<std::int64_t> max_parallel; ///< requests in flight at once
};

/// Why a request was refused: the subject and when to retry (Retry-After).
struct RateDenial {
  std::string subject;
  std::string limit;              ///< "rpm_limit", "tpm_limit" or "max_parallel_requests"
  std::chrono::milliseconds retry_after{1000};
};

/// Receives the outcome of RateLimits::acquire_async exactly once (nullopt = admitted). Must be
/// quick and must not throw; a shared implementation calls it from its own thread.
using RateDone = std::function<void(std::optional<RateDenial>)>;

/// Rate limits as the pipeline uses them: the in-process RateLimiter, or a shared one (Redis,
/// store/redis/redis_rate_limits.hpp) so that an rpm_limit holds across instances.
class RateLimits {
 public:
  virtual ~RateLimits() = default;
  /// Admits one request against every subject, all or none (counted toward each rpm window and
  /// parallel count), or names the first subject over a limit. `done` is called before returning
  /// by the in-process limiter, later by a shared one.
  virtual void acquire_async(std::vector<RateSubject> subjects, RateDone done) = 0;
  /// Ends an admitted request: releases its parallel slots and adds the tokens it used to each
  /// subject's tpm window. Never blocks.
  virtual void release(const std::vector<RateSubject>& subjects, std::int64_t tokens) = 0;
};

/// The in-process rate limiter (one instance). Thread-safe.
class RateLimiter final : public RateLimits {
 public:
  explicit RateLimiter(const core::Clock& clock) : clock_(clock) {}

  /// Admits one request against every subject, all or none: counts it toward each rpm and
  /// parallel count. Returns the denial of the first subject over a limit otherwise.
  std::optional<RateDenial> acquire(const std::vector<RateSubject>& subjects);
  void acquire_async(std::vector<RateSubject> subjects, RateDone done) override { done(acquire(subjects)); }
  /// Ends a request admitted by acquire(): releases its parallel slots and adds the tokens it
  /// used to each subject's tpm window.
  void release(const std::vector<RateSubject>& subjects, std::int64_t tokens) override;

 private:
  struct Counter {
    long long minute = -1;
    std::int64_t requests = 0;
    std::int64_t tokens = 0;
    std::int64_t in_flight = 0;
  };
  long long minute_now() const;
  const core::Clock& clock_;
  std::mutex mu_;
  std::unordered_map<std::string, Counter> counters_;
};

}  // namespace tollgate::policy
