#pragma once
/// Process-wide figures on /metrics, read at scrape time: the store writer's group commit (the
/// durable ledger) and the upstream connection pools. Internal to pipeline/.
///   tollgate_ledger_commit_seconds{stat="p50"|"p99"|"max"}  gauge: enqueue → durable latency
///       of the most recent ledger records (the writer's sample window)
///   tollgate_ledger_batches_total, tollgate_ledger_records_total, tollgate_ledger_failed_batches_total,
///   tollgate_spend_rows_dropped_total                           counters
///   tollgate_upstream_connections_opened_total, _reused_total, _connect_failures_total,
///   tollgate_upstream_connect_wait_seconds_total                 counters
///   tollgate_upstream_connections_idle                           gauge
///   process_resident_memory_bytes, process_open_fds               gauges (Prometheus' process
///       collector names)
///   tollgate_heap_bytes{state="in_use"|"free"}                    gauge: the C heap's bytes in
///       use and held free (app/serve.cpp adds state="store": SQLite's share of in_use)
/// and the server's client connections (watch_connections, registered by app/serve.cpp):
///   tollgate_connections_open, tollgate_connections_limit          gauges
///   tollgate_connections_accepted_total, tollgate_connections_evicted_total,
///   tollgate_connections_refused_total{reason="per_ip"|"accept_error"},
///   tollgate_connections_backpressure_total                        counters

#include <functional>

#include "http/connection_stats.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::pipeline {

/// Registers the collectors in `s.metrics`. `s` must outlive the registry's last render(); its
/// store is read at scrape time (none yet: no ledger figures).
void watch_process(const Services& s);

/// Registers the client connection figures read through `stats` (http::Server::
/// connection_stats_reader(), valid after the server is gone) in `metrics`.
void watch_connections(telemetry::Registry& metrics, std::function<http::ConnectionStats()> stats);

}  // namespace tollgate::pipeline
