#include "pipeline/health_monitor.hpp"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

namespace tollgate::pipeline {
namespace net = boost::asio;

HealthMonitor::HealthMonitor(std::function<std::shared_ptr<Services>()> current, http::ClientOptions client)
    : current_(std::move(current)), client_(std::move(client)) {}

HealthMonitor::~HealthMonitor() { stop(); }

void HealthMonitor::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    http::UpstreamPool pool(ioc_, client_);
    http::UpstreamPool::install(&pool);
    net::co_spawn(ioc_, loop(), [this](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          spdlog::error("background health checks stopped: {}", ex.what());
        } catch (...) {
          spdlog::error("background health checks stopped by an unknown exception");
        }
      }
      std::lock_guard lk(mu_);
      done_ = true;
      done_cv_.notify_all();
    });
    ioc_.run();
    // A run abandoned after the grace: its frame is destroyed here, while its pool is alive.
    ioc_.abandon_pending();
    http::UpstreamPool::install(nullptr);
  });
}

void HealthMonitor::stop(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  net::post(ioc_, [this] {
    stopping_ = true;
    timer_.cancel();
    if (control_) control_->cut();
  });
  {
    std::unique_lock lk(mu_);
    if (!done_cv_.wait_for(lk, grace, [this] { return done_; })) {
      spdlog::warn("background health checks: the round in flight did not end {} ms after it was cut; abandoning it",
                   grace.count());
      ioc_.stop();
    }
  }
  thread_.join();
}

std::optional<HealthReport> HealthMonitor::last() const {
  std::lock_guard lk(mu_);
  return last_;
}

net::awaitable<void> HealthMonitor::loop() {
  while (!stopping_) {
    auto services = current_();
    const auto& gs = services->config->general_settings;
    const auto interval = std::max(gs.health_check_interval, std::chrono::milliseconds(1));
    if (gs.background_health_checks) {
      control_ = std::make_shared<HealthRoundControl>();
      std::string every_group;
      HealthReport report = co_await run_health_round(services, every_group, control_);
      control_.reset();
      std::size_t bad = 0;
      for (const auto& e : report.endpoints) bad += e.healthy ? 0 : 1;
      spdlog::debug("background health checks: {} healthy, {} unhealthy", report.endpoints.size() - bad, bad);
      std::lock_guard lk(mu_);
      last_ = std::move(report);
    }
    if (stopping_) break;
    timer_.expires_after(interval);
    (void)co_await timer_.async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace tollgate::pipeline
