#include "telemetry/alert_webhooks.hpp"

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "telemetry/http_post.hpp"
#include "telemetry/metrics.hpp"

namespace tollgate::telemetry {

WebhookNotifier::WebhookNotifier(WebhookOptions options) : options_(std::move(options)) {
  for (const auto& u : options_.urls) {
    auto t = http::parse_url(u);
    if (!t) throw std::invalid_argument("alert webhook '" + u + "': " + t.error());
    targets_.push_back(std::move(*t));
  }
  thread_ = std::thread([this] { run(); });
}

WebhookNotifier::~WebhookNotifier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    stop_by_ = std::chrono::steady_clock::now() + 2 * options_.timeout;
  }
  wake_.notify_all();
  thread_.join();
}

std::string WebhookNotifier::body(const Alert& a) {
  // Slack's message formatting reads &, < and > as markup: they are escaped in `text`.
  auto escape = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '&') out += "&amp;";
      else if (c == '<') out += "&lt;";
      else if (c == '>') out += "&gt;";
      else out += c;
    }
    return out;
  };
  boost::json::object alert{{"kind", a.kind}, {"subject", a.subject}, {"message", a.message}, {"at_ms", a.at_ms}};
  return boost::json::serialize(boost::json::object{
      {"text", escape("Tollgate alert: " + a.kind + " (" + a.subject + "): " + a.message)},
      {"tollgate_alert", std::move(alert)}});
}

void WebhookNotifier::notify(const Alert& alert) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= options_.queue_capacity) {
      stats_.dropped += targets_.size();
      return;
    }
    queue_.push_back(alert);
  }
  wake_.notify_one();
}

bool WebhookNotifier::drain(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, wait, [this] { return queue_.empty() && !busy_; });
}

WebhookStats WebhookNotifier::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void WebhookNotifier::register_metrics(Registry& registry) const {
  registry.on_collect([this](Exposition& out) {
    const auto s = stats();
    out.begin("tollgate_alert_deliveries_total", "Alert webhook deliveries, per (alert, URL)", MetricType::counter);
    out.sample("tollgate_alert_deliveries_total", {{"result", "delivered"}}, static_cast<double>(s.delivered));
    out.sample("tollgate_alert_deliveries_total", {{"result", "dropped"}}, static_cast<double>(s.dropped));
  });
}

void WebhookNotifier::run() {
  for (;;) {
    Alert next;
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) {
        idle_.notify_all();
        return;  // stopping, nothing left
      }
      stopping = stop_;
      if (stopping && std::chrono::steady_clock::now() >= stop_by_) {
        stats_.dropped += queue_.size() * targets_.size();
        queue_.clear();
        idle_.notify_all();
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    const auto text = body(next);
    for (const auto& t : targets_) {
      bool ok = false;
      try {
        ok = deliver(t, text, !stopping && std::chrono::steady_clock::now() < stop_by_);
      } catch (const std::exception& e) {  // e.g. the CA file went away: this alert is dropped, the thread lives
        spdlog::warn("alerts: delivery to webhook {} failed: {}", t.host, e.what());
      }
      std::lock_guard lock(mu_);
      ++(ok ? stats_.delivered : stats_.dropped);
    }
    std::lock_guard lock(mu_);
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

bool WebhookNotifier::deliver(const http::Target& url, const std::string& text, bool retry) {
  RetryPolicy policy{retry ? options_.max_attempts : 1, options_.max_retry_wait};
  if (!client_) client_ = std::make_unique<PostClient>(options_.client);  // on this thread, once
  const auto r = client_->post_retrying(url, {}, text, options_.timeout, policy,
                                    [this](std::chrono::milliseconds d) {
                                      std::unique_lock lock(mu_);
                                      return !wake_.wait_for(lock, d, [this] { return stop_; });
                                    });
  if (r.ok()) return true;
  if (!r.retryable()) spdlog::warn("alerts: webhook {} refused an alert with {}", url.host, r.status);
  else spdlog::warn("alerts: an alert could not be delivered to webhook {}", url.host);
  return false;
}

}  // namespace tollgate::telemetry
