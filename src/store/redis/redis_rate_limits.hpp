#pragma once
/// Rate limits shared by every instance (LiteLLM's rpm_limit, tpm_limit, max_parallel_requests on
/// keys, users and teams), counted in Redis in the same one-minute windows as the in-process
/// RateLimiter (policy/rate_limit.hpp), by one Lua script per request: all subjects checked and
/// counted at once. Parallel requests are counted per instance under that instance's ledger lease
/// (store/redis/redis_ledger.hpp), so a dead instance's in-flight requests stop counting when its
/// lease expires. While Redis cannot be reached, the in-process limiter answers instead (limits
/// then hold per instance; logged once per outage): a rate limit protects capacity, and money is
/// still guarded by the ledger, which fails closed.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "policy/rate_limit.hpp"
#include "store/redis/redis_client.hpp"

namespace tollgate::store::redis {

/// The shared rate limits. Thread-safe.
class RedisRateLimits final : public policy::RateLimits {
 public:
  /// `client` reaches Redis; `instance_id` and `key_prefix` are the ledger's (its lease keys are
  /// read to count live instances' parallel requests); `fallback` answers while Redis is down.
  RedisRateLimits(std::shared_ptr<RedisClient> client, std::string key_prefix, std::string instance_id,
                  std::unique_ptr<policy::RateLimiter> fallback);

  void acquire_async(std::vector<policy::RateSubject> subjects, policy::RateDone done) override;
  void release(const std::vector<policy::RateSubject>& subjects, std::int64_t tokens) override;

 private:
  std::shared_ptr<RedisClient> client_;
  std::string prefix_;
  std::string instance_;
  std::unique_ptr<policy::RateLimiter> fallback_;
  std::atomic<bool> degraded_{false};
};

}  // namespace tollgate::store::redis
