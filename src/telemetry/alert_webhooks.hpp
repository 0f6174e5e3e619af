#pragma once
/// Alert delivery to webhooks (Slack incoming webhooks and any URL taking the same JSON): every
/// alert Alerts logs (telemetry/alerts.hpp, de-duplicated) is queued and POSTed from a thread of
/// its own as `{"text": "...", "tollgate_alert": {kind, subject, message, at_ms}}`; never on
/// the request path. Each POST is bounded by a timeout and retried on 429/5xx or when it cannot
/// be delivered (Retry-After honoured); a full queue or spent retries drop the alert, counted in
/// tollgate_alert_deliveries_total{result="dropped"}.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/client.hpp"
#include "telemetry/alerts.hpp"

namespace tollgate::telemetry {

class Registry;

/// Where and how alerts are delivered.
struct WebhookOptions {
  std::vector<std::string> urls;               ///< each alert goes to every one
  std::chrono::milliseconds timeout{5000};     ///< one POST
  std::size_t queue_capacity = 1000;           ///< alerts waiting; beyond it new ones are dropped
  int max_attempts = 3;                        ///< per alert and URL, the first included
  std::chrono::milliseconds max_retry_wait{10000};
  http::ClientOptions client;
};

/// Delivery counts (cheap copy).
struct WebhookStats {
  std::uint64_t delivered = 0;  ///< (alert, URL) pairs answered 2xx
  std::uint64_t dropped = 0;    ///< (alert, URL) pairs given up, or alerts the full queue refused
};

/// The delivery thread. Thread-safe. The destructor delivers what is queued (one try each).
class WebhookNotifier {
 public:
  /// Throws std::invalid_argument naming a URL that is not an http(s) URL.
  explicit WebhookNotifier(WebhookOptions options);
  ~WebhookNotifier();
  WebhookNotifier(const WebhookNotifier&) = delete;
  WebhookNotifier& operator=(const WebhookNotifier&) = delete;

  /// Queues `alert` for every URL; never blocks on the network.
  void notify(const Alert& alert);
  /// Blocks until everything queued was delivered or dropped, or `wait` passed.
  bool drain(std::chrono::milliseconds wait);
  [[nodiscard]] WebhookStats stats() const;
  /// tollgate_alert_deliveries_total{result}; this notifier must outlive the registry's renders.
  void register_metrics(Registry& registry) const;
  /// The JSON body of `alert` (Slack-compatible `text` plus the structured alert).
  static std::string body(const Alert& alert);

 private:
  void run();
  bool deliver(const http::Target& url, const std::string& body, bool retry);

  WebhookOptions options_;
  std::vector<http::Target> targets_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Alert> queue_;
  bool busy_ = false;
  bool stop_ = false;
  /// Set by the destructor: what is still queued after it is dropped (a hung webhook cannot hold
  /// up shutdown for longer than two timeouts).
  std::chrono::steady_clock::time_point stop_by_ = std::chrono::steady_clock::time_point::max();
  WebhookStats stats_;
  std::unique_ptr<class PostClient> client_;  ///< the delivery thread's own (made on first use)
  std::thread thread_;
};

}  // namespace tollgate::telemetry
