#pragma once
/// Blocking JSON POSTs for telemetry's background threads (span export, alert webhooks), over
/// the gateway's own HTTP client (http/client.hpp: TLS, certificate checks), on a private
/// io_context: never on a worker thread.

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

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

/// How PostClient::post_retrying tries again.
struct RetryPolicy {
  int max_attempts = 3;                          ///< the first included
  std::chrono::milliseconds max_wait{10000};     ///< a longer Retry-After is cut to this
  std::chrono::milliseconds first_backoff{250};  ///< without Retry-After: doubled each time
};

/// A blocking JSON POST client for one background thread: its own io_context and connection
/// pool (the TLS context and CA store are loaded once, when it is made; connections are kept
/// alive between posts). Not thread-safe: make it on, and use it from, one thread.
class PostClient {
 public:
  /// Throws what the TLS setup throws (e.g. an unreadable ca_file).
  explicit PostClient(const http::ClientOptions& client);
  ~PostClient();
  PostClient(const PostClient&) = delete;
  PostClient& operator=(const PostClient&) = delete;

  /// POSTs `body` (application/json) to `target` with `headers`, waiting at most `timeout` for
  /// the whole exchange. Blocks the calling thread; never throws for network errors.
  PostResult post(const http::Target& target, const std::vector<std::pair<std::string, std::string>>& headers,
                  const std::string& body, std::chrono::milliseconds timeout);

  /// post(), tried again while the answer is retryable(): Retry-After honoured, else a doubling
  /// backoff. `wait(d)` sleeps `d` and returns false to give up at once (shutting down);
  /// `before_each` (optional) runs before every POST. Returns the last answer.
  PostResult post_retrying(const http::Target& target, const std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& body, std::chrono::milliseconds timeout, const RetryPolicy& policy,
                           const std::function<bool(std::chrono::milliseconds)>& wait,
                           const std::function<void()>& before_each = {});

 private:
  boost::asio::io_context ioc_;
  http::UpstreamPool pool_;
};

}  // namespace tollgate::telemetry
