#include "telemetry/otlp_exporter.hpp"

#include <spdlog/spdlog.h>

#include "telemetry/http_post.hpp"
#include "telemetry/metrics.hpp"

namespace tollgate::telemetry {

OtlpExporter::OtlpExporter(OtlpOptions options) : options_(std::move(options)) {
  auto t = http::parse_url(options_.traces_url);
  if (!t) throw std::invalid_argument("otel endpoint: " + t.error());
  target_ = std::move(*t);
  if (options_.max_batch == 0) options_.max_batch = 1;
  thread_ = std::thread([this] { run(); });
}

OtlpExporter::~OtlpExporter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    stop_by_ = std::chrono::steady_clock::now() + 2 * options_.timeout;
  }
  wake_.notify_all();
  thread_.join();
}

void OtlpExporter::submit(std::vector<Span> spans) {
  std::size_t dropped = 0;
  {
    std::lock_guard lock(mu_);
    for (auto& s : spans) {
      if (queue_.size() >= options_.queue_capacity) {
        ++dropped;
        continue;
      }
      queue_.push_back(std::move(s));
    }
    stats_.dropped_queue_full += dropped;
  }
  if (dropped > 0) spdlog::debug("otel: queue full, {} span(s) dropped", dropped);
  wake_.notify_one();
}

bool OtlpExporter::drain(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  wake_.notify_one();
  return idle_.wait_for(lock, wait, [this] { return queue_.empty() && in_flight_ == 0; });
}

OtlpStats OtlpExporter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void OtlpExporter::register_metrics(Registry& registry) const {
  registry.on_collect([this](Exposition& out) {
    const auto s = stats();
    out.begin("tollgate_otel_spans_exported_total", "Spans the OTLP collector accepted", MetricType::counter);
    out.sample("tollgate_otel_spans_exported_total", {}, static_cast<double>(s.exported));
    out.begin("tollgate_otel_spans_dropped_total", "Spans dropped: the queue was full, or the collector refused or could not be reached",
              MetricType::counter);
    out.sample("tollgate_otel_spans_dropped_total", {{"reason", "queue_full"}}, static_cast<double>(s.dropped_queue_full));
    out.sample("tollgate_otel_spans_dropped_total", {{"reason", "export_failed"}}, static_cast<double>(s.dropped_refused));
  });
}

void OtlpExporter::run() {
  for (;;) {
    std::vector<Span> batch;
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, options_.flush_interval, [this] { return stop_ || queue_.size() >= options_.max_batch; });
      if (queue_.empty()) {
        idle_.notify_all();
        if (stop_) return;
        continue;
      }
      stopping = stop_;
      if (stopping && std::chrono::steady_clock::now() >= stop_by_) {
        stats_.dropped_refused += queue_.size();
        queue_.clear();
        idle_.notify_all();
        return;
      }
      const auto n = std::min(queue_.size(), options_.max_batch);
      batch.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      in_flight_ = batch.size();
    }
    bool ok = false;
    try {
      ok = send(encode_export_request(options_.resource, batch), !stopping);
    } catch (const std::exception& e) {
      spdlog::warn("otel: export failed: {}", e.what());
    }
    std::lock_guard lock(mu_);
    if (ok) stats_.exported += batch.size();
    else stats_.dropped_refused += batch.size();
    in_flight_ = 0;
    if (queue_.empty()) idle_.notify_all();
  }
}

bool OtlpExporter::send(const std::string& body, bool retry) {
  RetryPolicy policy{retry ? options_.max_attempts : 1, options_.max_retry_wait};
  if (!client_) client_ = std::make_unique<PostClient>(options_.client);  // on this thread, once
  const auto r = client_->post_retrying(
      target_, options_.headers, body, options_.timeout, policy,
      [this](std::chrono::milliseconds d) {
        std::unique_lock lock(mu_);
        return !wake_.wait_for(lock, d, [this] { return stop_; });  // shutting down: no more waiting
      },
      [this] {
        std::lock_guard lock(mu_);
        ++stats_.batches;
      });
  if (r.ok()) return true;
  if (!r.retryable()) spdlog::warn("otel: the collector refused a batch with {}; its spans are dropped", r.status);
  else spdlog::warn("otel: a batch could not be exported to {}; its spans are dropped", options_.traces_url);
  return false;
}

}  // namespace tollgate::telemetry
