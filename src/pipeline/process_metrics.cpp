#include "pipeline/process_metrics.hpp"

#include "http/client.hpp"
#include "telemetry/metrics.hpp"
#include "telemetry/process_usage.hpp"

namespace tollgate::pipeline {

void watch_process(const Services& s) {
  s.metrics->on_collect([store = s.store](telemetry::Exposition& out) {
    using telemetry::MetricType;
    if (store) {
      const auto w = store->writer_stats();
      out.begin("tollgate_ledger_commit_seconds",
                "Ledger record enqueue-to-durable latency over the writer's recent records: p50, p99, max",
                MetricType::gauge);
      out.sample("tollgate_ledger_commit_seconds", {{"stat", "p50"}}, static_cast<double>(w.p50_us) / 1e6);
      out.sample("tollgate_ledger_commit_seconds", {{"stat", "p99"}}, static_cast<double>(w.p99_us) / 1e6);
      out.sample("tollgate_ledger_commit_seconds", {{"stat", "max"}}, static_cast<double>(w.max_us) / 1e6);
      const auto counter = [&out](const char* name, const char* help, std::uint64_t v) {
        out.begin(name, help, MetricType::counter);
        out.sample(name, {}, static_cast<double>(v));
      };
      counter("tollgate_ledger_batches_total", "Store transactions (group commits), committed or failed", w.batches);
      counter("tollgate_ledger_records_total", "Ledger records committed", w.ledger_records);
      counter("tollgate_ledger_failed_batches_total", "Store transactions that could not commit", w.failed_batches);
      counter("tollgate_spend_rows_dropped_total", "Spend-log rows lost (a failed batch or a full queue)",
              w.dropped_spend_rows);
    }
    const auto p = http::pool_counters();
    const auto counter = [&out](const char* name, const char* help, double v) {
      out.begin(name, help, MetricType::counter);
      out.sample(name, {}, v);
    };
    counter("tollgate_upstream_connections_opened_total", "Upstream connections opened (TCP, and TLS for https)",
            static_cast<double>(p.opened));
    counter("tollgate_upstream_connections_reused_total", "Upstream requests sent on a pooled keep-alive connection",
            static_cast<double>(p.reused));
    counter("tollgate_upstream_connect_failures_total", "Upstream connects that failed or timed out",
            static_cast<double>(p.connect_failed));
    counter("tollgate_upstream_connect_wait_seconds_total", "Time spent opening upstream connections, in total",
            static_cast<double>(p.connect_wait_us) / 1e6);
    out.gauge("tollgate_upstream_connections_idle", "Idle pooled upstream connections", {}, static_cast<double>(p.idle));

    const auto u = telemetry::read_process_usage();
    out.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", {}, static_cast<double>(u.rss_bytes));
    out.gauge("process_open_fds", "Number of open file descriptors.", {}, static_cast<double>(u.open_fds));
    out.begin("tollgate_heap_bytes",
              "The C heap: in_use (allocated, not freed), free (freed, kept by the allocator), store (the part of "
              "in_use SQLite holds: page caches, schemas, statements)",
              MetricType::gauge);
    out.sample("tollgate_heap_bytes", {{"state", "in_use"}}, static_cast<double>(u.heap_in_use_bytes));
    out.sample("tollgate_heap_bytes", {{"state", "free"}}, static_cast<double>(u.heap_free_bytes));
  });
}

void watch_connections(telemetry::Registry& metrics, std::function<http::ConnectionStats()> stats) {
  metrics.on_collect([stats = std::move(stats)](telemetry::Exposition& out) {
    using telemetry::MetricType;
    const auto c = stats();
    out.gauge("tollgate_connections_open", "Open client connections", {}, static_cast<double>(c.open));
    out.gauge("tollgate_connections_limit", "The client connection limit (tollgate_settings.max_connections)", {},
              static_cast<double>(c.limit));
    const auto counter = [&out](const char* name, const char* help, std::uint64_t v) {
      out.begin(name, help, MetricType::counter);
      out.sample(name, {}, static_cast<double>(v));
    };
    counter("tollgate_connections_accepted_total", "Client connections accepted", c.accepted);
    counter("tollgate_connections_evicted_total",
            "Idle keep-alive connections closed to make room at the connection limit", c.evicted);
    out.begin("tollgate_connections_refused_total",
              "Client connections refused: per_ip (answered 429 at max_connections_per_ip), accept_error (accept "
              "failed, e.g. out of descriptors)",
              MetricType::counter);
    out.sample("tollgate_connections_refused_total", {{"reason", "per_ip"}}, static_cast<double>(c.refused_per_ip));
    out.sample("tollgate_connections_refused_total", {{"reason", "accept_error"}},
               static_cast<double>(c.accept_errors));
    counter("tollgate_connections_backpressure_total",
            "Times the connection limit was reached with no idle connection to close (accepting paused until one "
            "ended)",
            c.backpressure);
  });
}

}  // namespace tollgate::pipeline
