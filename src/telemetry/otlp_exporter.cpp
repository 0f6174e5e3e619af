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

void OtlpExporter::submit(const std::vector<Span>& spans) {
  // Encoded outside the lock into this thread's buffer (its capacity reused request after
  // request), then copied into the queue.
  thread_local std::string encoded;
  thread_local std::vector<std::size_t> ends;
  encoded.clear();
  ends.clear();
  for (const auto& s : spans) {
    append_span_json(encoded, s);
    encoded.push_back(',');
    ends.push_back(encoded.size());
  }
  std::size_t dropped = 0;
  bool full_batch = false;
  {
    std::lock_guard lock(mu_);
    const auto before = span_ends_.size();
    const auto room = options_.queue_capacity > before ? options_.queue_capacity - before : 0;
    const auto take = std::min(room, ends.size());
    dropped = ends.size() - take;
    if (take > 0) {
      const auto base = queue_.size();
      queue_.append(encoded, 0, ends[take - 1]);
      for (std::size_t i = 0; i < take; ++i) span_ends_.push_back(base + ends[i]);
    }
    stats_.dropped_queue_full += dropped;
    // The export thread wakes on its flush interval; it is woken early only when this call
    // completed a batch, so that a request never pays for a thread switch.
    full_batch = before < options_.max_batch && span_ends_.size() >= options_.max_batch;
  }
  if (dropped > 0) spdlog::debug("otel: queue full, {} span(s) dropped", dropped);
  if (full_batch) wake_.notify_one();
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
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, options_.flush_interval, [this] { return stop_ || span_ends_.size() >= options_.max_batch; });
      if (span_ends_.empty()) {
        idle_.notify_all();
        if (stop_) return;
        continue;
      }
      stopping = stop_;
      if (stopping && std::chrono::steady_clock::now() >= stop_by_) {
        stats_.dropped_refused += span_ends_.size();
        queue_.clear();
        span_ends_.clear();
        idle_.notify_all();
        return;
      }
      // Take everything queued; the request path goes on with the buffers this thread emptied.
      taken_.clear();
      taken_ends_.clear();
      taken_.swap(queue_);
      taken_ends_.swap(span_ends_);
      in_flight_ = taken_ends_.size();
    }
    // Sent max_batch spans per request.
    std::size_t first = 0, from = 0;
    while (first < taken_ends_.size()) {
      const auto n = std::min(taken_ends_.size() - first, options_.max_batch);
      {
        // Shutdown is bounded: what the deadline leaves unsent is dropped and counted.
        std::lock_guard lock(mu_);
        if (stop_ && std::chrono::steady_clock::now() >= stop_by_) {
          const auto rest = taken_ends_.size() - first;
          stats_.dropped_refused += rest;
          in_flight_ -= rest;
          break;
        }
      }
      const auto to = taken_ends_[first + n - 1];
      bool ok = false;
      try {
        encode_export_request(options_.resource, std::string_view(taken_).substr(from, to - from), body_);
        ok = send(body_, !stopping);
      } catch (const std::exception& e) {
        spdlog::warn("otel: export failed: {}", e.what());
      }
      std::lock_guard lock(mu_);
      if (ok) stats_.exported += n;
      else stats_.dropped_refused += n;
      in_flight_ -= n;
      first += n;
      from = to;
      if (!stopping && stop_) stopping = true;  // shutting down meanwhile: no more retries
    }
    std::lock_guard lock(mu_);
    if (span_ends_.empty()) idle_.notify_all();
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
