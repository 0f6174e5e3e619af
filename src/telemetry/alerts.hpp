#pragma once
/// Operator alerts (issue 4: "stop and alert" on a commercial limit, a misconfigured
/// deployment, circuit transitions worth a human's attention).
///
/// `raise(kind, subject, message)` logs `ALERT <kind> <subject>: <message>` at error level
/// through spdlog (the default logger), keeps the most recent alerts in a bounded ring buffer
/// for an admin endpoint (`recent()`, newest first) and counts alerts per kind (also exported as
/// the counter `tollgate_alerts_total{kind}` by register_metrics()).
///
/// De-duplication: a raise with the same (kind, subject) as one logged less than
/// `dedup_window_ms` ago is counted but neither logged nor added to the ring; instead the ring
/// entry it repeats (if still there) has its `repeats` incremented. Set the window to 0 to keep
/// every alert.
///
/// Thread safety: every member function is thread-safe (one mutex; the log line is written
/// after it is released).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tollgate::telemetry {

class Registry;

/// One alert as kept in the ring buffer.
struct Alert {
  std::string kind;     ///< e.g. "commercial_limit", "deployment_misconfigured", "circuit_open"
  std::string subject;  ///< what it is about, e.g. a deployment id, provider or model group
  std::string message;
  std::int64_t at_ms = 0;     ///< wall-clock time of the raise, milliseconds since the Unix epoch
  std::uint64_t repeats = 0;  ///< identical (kind, subject) raises suppressed after this one
  bool operator==(const Alert&) const = default;
};

/// Knobs of Alerts.
struct AlertsOptions {
  std::size_t capacity = 200;          ///< alerts kept for recent(); the oldest is dropped first
  std::int64_t dedup_window_ms = 10000;  ///< 0 = no de-duplication
};

/// The process's alert sink. See the file comment.
class Alerts {
 public:
  /// Source of wall-clock time in Unix milliseconds (tests inject a fake one).
  using WallClock = std::function<std::int64_t()>;

  explicit Alerts(AlertsOptions options = {}, WallClock now_ms = {});
  Alerts(const Alerts&) = delete;
  Alerts& operator=(const Alerts&) = delete;

  /// Records an alert. Returns true when it was logged and added to the ring, false when it
  /// was suppressed as a duplicate (it is counted either way).
  bool raise(std::string kind, std::string subject, std::string message);

  /// The alerts kept, newest first (at most `capacity`).
  std::vector<Alert> recent() const;
  /// Alerts raised per kind since start, duplicates included.
  std::map<std::string, std::uint64_t> counts() const;
  /// Alerts raised of one kind (0 when none).
  std::uint64_t count(const std::string& kind) const;
  /// Alerts raised in total, duplicates included.
  std::uint64_t total() const;
  /// Raises suppressed as duplicates.
  std::uint64_t suppressed() const;

  /// Also hands every alert that is logged (not a suppressed duplicate) to `notify`, after the
  /// log line, on the raising thread (it must be quick: queue it). Set once, before alerts flow.
  void set_notifier(std::function<void(const Alert&)> notify);

  /// Registers a collector on `registry` exposing `tollgate_alerts_total{kind}` (counter).
  /// This Alerts must outlive the registry's last render().
  void register_metrics(Registry& registry) const;

 private:
  AlertsOptions opts_;
  WallClock now_ms_;
  mutable std::mutex mu_;
  std::deque<Alert> ring_;  // newest at the front
  std::map<std::string, std::uint64_t> counts_;
  std::map<std::pair<std::string, std::string>, std::int64_t> last_logged_ms_;
  std::uint64_t total_ = 0;
  std::uint64_t suppressed_ = 0;
  std::function<void(const Alert&)> notify_;
};

}  // namespace tollgate::telemetry
