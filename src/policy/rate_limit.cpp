#include "policy/rate_limit.hpp"

#include "budget/money.hpp"

namespace tollgate::policy {

long long RateLimiter::minute_now() const {
  return std::chrono::duration_cast<std::chrono::minutes>(clock_.now().time_since_epoch()).count();
}

std::optional<RateDenial> RateLimiter::acquire(const std::vector<RateSubject>& subjects) {
  const long long minute = minute_now();
  const auto next_minute = std::chrono::minutes(minute + 1) - clock_.now().time_since_epoch();
  const auto until_next = std::max(std::chrono::milliseconds(1000),
                                   std::chrono::ceil<std::chrono::milliseconds>(next_minute));
  std::lock_guard lock(mu_);
  for (const auto& s : subjects) {
    auto& c = counters_[s.id];
    if (c.minute != minute) {
      c.minute = minute;
      c.requests = 0;
      c.tokens = 0;
    }
    if (s.max_parallel && c.in_flight >= *s.max_parallel)
      return RateDenial{s.id, "max_parallel_requests", std::chrono::milliseconds(1000)};
    if (s.rpm && c.requests >= *s.rpm) return RateDenial{s.id, "rpm_limit", until_next};
    if (s.tpm && c.tokens >= *s.tpm) return RateDenial{s.id, "tpm_limit", until_next};
  }
  for (const auto& s : subjects) {
    auto& c = counters_[s.id];
    ++c.requests;
    ++c.in_flight;
  }
  return std::nullopt;
}

void RateLimiter::release(const std::vector<RateSubject>& subjects, std::int64_t tokens) {
  const long long minute = minute_now();
  std::lock_guard lock(mu_);
  for (const auto& s : subjects) {
    auto& c = counters_[s.id];
    if (c.in_flight > 0) --c.in_flight;
    if (c.minute != minute) {
      c.minute = minute;
      c.requests = 0;
      c.tokens = 0;
    }
    c.tokens = budget::saturating_add(c.tokens, tokens);  // absurd usage reports must not wrap the TPM count
  }
}

}  // namespace tollgate::policy
