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

#include "pipeline/attempt_loop.hpp"

namespace tollgate::pipeline {

/// Registers the collectors in `s.metrics`. `s` must outlive the registry's last render(); its
/// store is read at scrape time (none yet: no ledger figures).
void watch_process(const Services& s);

}  // namespace tollgate::pipeline
