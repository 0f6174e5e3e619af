#pragma once
/// One blocking JSON POST for telemetry's background threads (span export, alert webhooks),
/// over the gateway's own HTTP client (http/client.hpp: TLS, certificate checks), on a private
/// io_context: never on a worker thread.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "http/client.hpp"

namespace tollgate::telemetry {

/// How a POST ended.
struct PostResult {
  int status = 0;                         ///< HTTP status; 0 = not delivered (connect, timeout, reset)
  std::chrono::milliseconds retry_after{0};  ///< the answer's Retry-After (delta-seconds), else 0
  std::string error;                      ///< why it was not delivered
  /// 429, 502, 503, 504, or not delivered: worth trying again.
  bool retryable() const { return status == 0 || status == 429 || status == 502 || status == 503 || status == 504; }
  bool ok() const { return status >= 200 && status < 300; }
};

/// POSTs `body` (application/json) to `target` with `headers`, waiting at most `timeout` for the
/// whole exchange. Blocks the calling thread; never throws for network errors.
PostResult post_json(const http::Target& target, const std::vector<std::pair<std::string, std::string>>& headers,
                     const std::string& body, std::chrono::milliseconds timeout, const http::ClientOptions& client);

}  // namespace tollgate::telemetry
