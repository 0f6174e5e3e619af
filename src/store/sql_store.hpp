#pragma once
/// The Store implementation both SQL engines share (store/sqlite/, store/postgres/): every
/// member's SQL, record mapping, validation, migrations, recovery and the group-commit writer
/// live here once; a backend only supplies connections (store/sql.hpp). See docs/storage.md.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/journal/ledger_journal.hpp"
#include "store/sql.hpp"
#include "store/store.hpp"

namespace tollgate::store::sql {

/// The migration scripts, in order: script i moves the schema from version i to i + 1. Written
/// for SQLite; other engines run Backend::translate_ddl of each. Never edit a shipped script.
const std::vector<std::string>& migrations();

/// The schema version this binary creates and understands (the number of migrations).
int schema_version() noexcept;

struct SqlStoreOptions {
  /// Spend log rows waiting for the writer beyond this are dropped and counted (ledger records
  /// are never dropped).
  std::size_t max_pending_spend_rows = 100000;
  /// Spend rows are committed in batches of their own, off the requests' path, once this many
  /// wait or the oldest has waited `spend_linger` (GroupCommitWriter::Options). Readers of the
  /// spend log (query_spend_logs, spend reports, global spend) commit the waiting rows first.
  std::size_t spend_batch_rows = 512;
  std::chrono::milliseconds spend_linger{100};
  /// Set: ledger records go to this ledger journal (store/journal/ledger_journal.hpp) and are
  /// folded into the database with the spend rows (same batches, same linger); at open the records
  /// the last run left unfolded are folded before the store is returned. Only for a database this
  /// process alone writes (the embedded engine under its process lock).
  std::optional<journal::JournalOptions> journal;
  /// With `journal`: only fold what it holds at open (a run with the journal was killed, and this
  /// one runs without it), then close it; ledger records then go to the database directly.
  bool journal_fold_only = false;
};

/// Migrates the database behind `backend` (each missing script in its own TxnMode::migrate
/// transaction together with its schema_version row, on the writer connection), opens the ledger
/// journal when asked and folds what it holds past the database's mark, then starts the writer
/// thread. Errors: invalid when the schema is newer than this binary ("upgrade tollgate"),
/// unavailable (or the backend's error) when migrating fails, or the journal cannot be opened
/// or folded. The store owns the
/// backend; destroying it drains the writer first.
StoreResult<std::unique_ptr<Store>> open_sql_store(std::unique_ptr<Backend> backend,
                                                   const SqlStoreOptions& options = {});

}  // namespace tollgate::store::sql
