#pragma once
/// Per-caller rate limits (LiteLLM `rpm_limit`, `tpm_limit`, `max_parallel_requests` on keys,
/// users and teams). Requests and tokens are counted in fixed one-minute windows; parallel
/// requests are counted while they run. Thread-safe (one small mutex, never held across I/O).

#include <chrono>
#include <cstdint>
#include <mutex>
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

class RateLimiter {
 public:
  explicit RateLimiter(const core::Clock& clock) : clock_(clock) {}

  /// Admits one request against every subject, all or none: counts it toward each rpm and
  /// parallel count. Returns the denial of the first subject over a limit otherwise.
  std::optional<RateDenial> acquire(const std::vector<RateSubject>& subjects);
  /// Ends a request admitted by acquire(): releases its parallel slots and adds the tokens it
  /// used to each subject's tpm window.
  void release(const std::vector<RateSubject>& subjects, std::int64_t tokens);

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
