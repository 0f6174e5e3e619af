#include "telemetry/alerts.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "telemetry/metrics.hpp"

namespace tollgate::telemetry {
namespace {

std::int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Entries in the de-duplication map are pruned once it grows past this many.
constexpr std::size_t kPruneAbove = 1024;

}  // namespace

Alerts::Alerts(AlertsOptions options, WallClock now_ms)
    : opts_(options), now_ms_(now_ms ? std::move(now_ms) : WallClock(system_now_ms)) {}

bool Alerts::raise(std::string kind, std::string subject, std::string message) {
  std::function<void(const Alert&)> notify;
  std::int64_t at = 0;
  {
    std::lock_guard lk(mu_);
    // Read under the lock: raises are then ordered by time, so a concurrent raise never sees a
    // "last logged" later than its own now.
    const std::int64_t now = now_ms_();
    ++counts_[kind];
    ++total_;
    if (opts_.dedup_window_ms > 0) {
      auto key = std::make_pair(kind, subject);
      auto it = last_logged_ms_.find(key);
      if (it != last_logged_ms_.end() && now - it->second < opts_.dedup_window_ms && now >= it->second) {
        ++suppressed_;
        for (auto& a : ring_) {
          if (a.kind == kind && a.subject == subject) {
            ++a.repeats;
            break;
          }
        }
        return false;
      }
      if (last_logged_ms_.size() >= kPruneAbove) {
        std::erase_if(last_logged_ms_, [&](const auto& e) { return now - e.second >= opts_.dedup_window_ms; });
      }
      last_logged_ms_[std::move(key)] = now;
    }
    if (opts_.capacity > 0) {
      ring_.push_front(Alert{kind, subject, message, now, 0});
      while (ring_.size() > opts_.capacity) ring_.pop_back();
    }
    notify = notify_;
    at = now;
  }
  spdlog::error("ALERT {} {}: {}", kind, subject, message);
  if (notify) notify(Alert{std::move(kind), std::move(subject), std::move(message), at, 0});
  return true;
}

void Alerts::set_notifier(std::function<void(const Alert&)> notify) {
  std::lock_guard lk(mu_);
  notify_ = std::move(notify);
}

std::vector<Alert> Alerts::recent() const {
  std::lock_guard lk(mu_);
  return {ring_.begin(), ring_.end()};
}

std::map<std::string, std::uint64_t> Alerts::counts() const {
  std::lock_guard lk(mu_);
  return counts_;
}

std::uint64_t Alerts::count(const std::string& kind) const {
  std::lock_guard lk(mu_);
  auto it = counts_.find(kind);
  return it == counts_.end() ? 0 : it->second;
}

std::uint64_t Alerts::total() const {
  std::lock_guard lk(mu_);
  return total_;
}

std::uint64_t Alerts::suppressed() const {
  std::lock_guard lk(mu_);
  return suppressed_;
}

void Alerts::register_metrics(Registry& registry) const {
  registry.on_collect([this](Exposition& out) {
    out.begin("tollgate_alerts_total", "Operator alerts raised, by kind (duplicates included).",
              MetricType::counter);
    for (const auto& [kind, n] : counts()) out.sample("tollgate_alerts_total", {{"kind", kind}}, static_cast<double>(n));
  });
}

}  // namespace tollgate::telemetry
