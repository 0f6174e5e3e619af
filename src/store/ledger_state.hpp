#pragma once
/// The durable ledger's state without changing it: what a shared ledger (store/redis/) rebuilds its
/// counters from after Redis lost them. Unlike Store::recover_ledger, nothing is settled: in a
/// cluster, a reservation open in the store may belong to a live instance that will settle it.

#include <cstdint>
#include <vector>

#include "store/store.hpp"

namespace tollgate::store {

/// Per-scope settled totals and the reservations that have no settle record.
struct LedgerState {
  /// Sum of `actual_nanos` of the settle that closes each reserve (later settles of the same
  /// reservation are not counted twice), per scope and window
  /// (LedgerScope with its window), ordered by scope. Every window ever charged is listed; the caller keeps the current ones.
  std::vector<ScopeSpend> spent;
  /// The reserve records with no settle record, by reservation id.
  std::vector<LedgerRecord> open;
  /// Highest reservation_id in the ledger (0 if empty).
  std::uint64_t max_reservation_id = 0;
};

/// Reads the whole ledger in sequence order, `page` records at a time (O(ledger size): run it
/// rarely, e.g. once after Redis restarted empty). Errors: those of Store::read_ledger.
StoreResult<LedgerState> read_ledger_state(Store& store, std::int64_t page = 10000);

}  // namespace tollgate::store
