#pragma once
/// Retry delays: exponential backoff with jitter, honouring the upstream's Retry-After.

#include <chrono>
#include <optional>
#include <string_view>

namespace tollgate::routing {

using std::chrono::milliseconds;

struct BackoffPolicy {
  milliseconds initial{250};   ///< delay before the first retry, before jitter
  milliseconds max{8000};      ///< cap of the exponential part
  milliseconds minimum{0};     ///< router_settings.retry_after: never retry sooner than this
  double jitter = 0.25;        ///< the delay is scaled by a factor in [1 - jitter, 1]
};

/// Delay before retry number `retry` (1 = first retry). `random01` is a uniform draw in [0,1)
/// (injected so tests are deterministic). An upstream hint (Retry-After) wins over the
/// exponential delay when longer; the result is never below policy.minimum.
milliseconds backoff_delay(const BackoffPolicy& policy, int retry, std::optional<milliseconds> retry_after_hint,
                           double random01);

/// Parses a `retry-after-ms` header value (milliseconds, decimal allowed). nullopt when invalid.
std::optional<milliseconds> parse_retry_after_ms(std::string_view value);

/// Parses a `Retry-After` header value: delay-seconds or an HTTP-date (RFC 9110 §10.2.3),
/// the date taken relative to `now_unix_seconds`. nullopt when invalid; past dates give 0.
std::optional<milliseconds> parse_retry_after(std::string_view value, long long now_unix_seconds);

}  // namespace tollgate::routing
