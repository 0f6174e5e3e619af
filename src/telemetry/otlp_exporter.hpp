#pragma once
/// The OTLP/HTTP span exporter (https://opentelemetry.io/docs/specs/otlp/#otlphttp): spans are
/// JSON-encoded (otlp_json.hpp) by the request path into one queue buffer (no allocation per
/// span once the buffers have grown, never blocking on the network) and sent in batches from a
/// thread of its own, woken by its flush interval or by a full batch. A full queue drops the new spans; a batch the
/// collector refuses with 429/502/503/504 (or that cannot be delivered) is retried, honouring
/// Retry-After; a 4xx is dropped at once. Every span dropped is counted
/// (`tollgate_otel_spans_dropped_total{reason}`).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "http/client.hpp"
#include "telemetry/otlp_json.hpp"
#include "telemetry/span.hpp"

namespace tollgate::telemetry {

class Registry;

/// Where and how spans are exported.
struct OtlpOptions {
  std::string traces_url;  ///< full URL of the traces endpoint, e.g. http://collector:4318/v1/traces
  std::vector<std::pair<std::string, std::string>> headers;  ///< OTEL_EXPORTER_OTLP_HEADERS
  Resource resource;
  std::size_t queue_capacity = 4096;              ///< spans waiting; beyond it new spans are dropped
  std::size_t max_batch = 512;                    ///< spans per export request
  std::chrono::milliseconds flush_interval{500};  ///< a partial batch waits at most this long
  std::chrono::milliseconds timeout{5000};        ///< one export request, connect to answer
  int max_attempts = 3;                           ///< per batch, the first included
  std::chrono::milliseconds max_retry_wait{10000};  ///< a longer Retry-After is cut to this
  http::ClientOptions client;                     ///< TLS settings for an https endpoint
};

/// What the exporter did (cheap copy).
struct OtlpStats {
  std::uint64_t exported = 0;          ///< spans the collector accepted
  std::uint64_t dropped_queue_full = 0;
  std::uint64_t dropped_refused = 0;   ///< a 4xx other than 429, or retries spent
  std::uint64_t batches = 0;           ///< export requests sent (retries included)
};

/// The exporter. Thread-safe. The destructor sends what is queued (each batch within the
/// timeout, without retries) and joins the thread.
class OtlpExporter {
 public:
  explicit OtlpExporter(OtlpOptions options);
  ~OtlpExporter();
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  /// Encodes and queues the spans of one operation; never blocks on the network. Spans that do
  /// not fit in the queue are dropped and counted.
  void submit(const std::vector<Span>& spans);
  /// Blocks until every span queued so far was exported or dropped, or `wait` passed (tests).
  bool drain(std::chrono::milliseconds wait);
  [[nodiscard]] OtlpStats stats() const;
  /// Exposes tollgate_otel_spans_exported_total and tollgate_otel_spans_dropped_total{reason}.
  /// This exporter must outlive the registry's last render().
  void register_metrics(Registry& registry) const;

 private:
  void run();
  /// Sends one batch with its retries; returns whether the collector accepted it.
  bool send(const std::string& body, bool retry);

  OtlpOptions options_;
  http::Target target_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::string queue_;                  ///< encoded spans, back to back
  std::vector<std::size_t> span_ends_;  ///< where each queued span ends in queue_
  std::size_t in_flight_ = 0;
  bool stop_ = false;
  /// Set by the destructor: spans still queued after it are dropped (shutdown is bounded).
  std::chrono::steady_clock::time_point stop_by_ = std::chrono::steady_clock::time_point::max();
  OtlpStats stats_;
  std::string taken_;                     ///< the export thread's side of queue_ (swapped)
  std::vector<std::size_t> taken_ends_;   ///< and of span_ends_
  std::string body_;  ///< the export thread's request body, reused batch after batch
  std::unique_ptr<class PostClient> client_;  ///< the export thread's own (made on first use)
  std::thread thread_;
};

}  // namespace tollgate::telemetry
