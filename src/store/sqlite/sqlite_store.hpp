#pragma once
/// The embedded SQLite store (the default; `general_settings.database_url: sqlite:///path`).
/// See docs/storage.md for the schema, migrations and durability guarantees.

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>

#include "store/store.hpp"

namespace tollgate::store::sqlite {

/// The page size, bytes, of a database file this store creates (`PRAGMA page_size`; SQLite's
/// default is 4096). A spend row is 1–2 KB, so a 4 KiB page held about two, and each page a fold
/// batch changes is a WAL frame: two `pwrite`s when committed, and a `pread` and a `pwrite` more
/// when checkpointed. With 16 KiB pages a batch writes about a quarter of the frames
/// (bench/RESULTS.md, issue 16 step 26). A database created before keeps its own page size.
inline constexpr int kNewDatabasePageSize = 16384;

/// Knobs of the SQLite store (from `tollgate_settings`; every field has a safe default).
struct SqliteOptions {
  /// false: `synchronous=NORMAL` in WAL mode — every committed transaction survives a process
  /// crash (SIGKILL), the last commits may be lost on power loss / kernel crash.
  /// true: `synchronous=FULL` on the ledger writer — commits also survive power loss (an fsync
  /// per group commit; higher latency).
  bool synchronous_full = false;
  /// How long a connection waits for another connection's (or process's) write lock before a
  /// write fails as `unavailable`, milliseconds.
  int busy_timeout_ms = 5000;
  /// Bound on spend log rows waiting for the writer; beyond it rows are dropped and counted
  /// (ledger records are never dropped).
  std::size_t max_pending_spend_rows = 100000;
  /// Optional cap on the database size in pages (`PRAGMA max_page_count`; a page is
  /// kNewDatabasePageSize bytes in a file this store created); writes beyond it fail like a full
  /// disk. For operators and fault-injection tests; nullopt = SQLite's default.
  std::optional<std::int64_t> max_page_count;
  /// true (what `serve` asks): the store holds an exclusive lock on the database for its life
  /// (store/sqlite/process_lock.hpp), so a second gateway on the same file is refused at open
  /// (`unavailable`, naming the file and the holder's pid). false: readers such as `tollgate
  /// explain` open it beside a running gateway.
  bool exclusive_process = false;
  /// true (and exclusive_process, and a file): ledger records go to the ledger journal, the
  /// directory `<database file>.ledger/` (store/journal/ledger_journal.hpp), and are folded into
  /// the database off the requests' path; false: each reserve waits for a SQLite transaction
  /// (a journal a run with it left is still folded in at open, then removed).
  bool ledger_journal = false;
  /// With ledger_journal: `fdatasync` after each journal write (power-loss durability).
  bool ledger_journal_fsync = false;
};

/// Maps a database URL or path to the SQLite filename: `sqlite:///abs/path.db` → `/abs/path.db`,
/// `sqlite://relative.db` → `relative.db`, `sqlite://:memory:` and `:memory:` → `:memory:`,
/// anything else is a plain path. Returns invalid for another scheme (e.g. `postgresql://`)
/// or an empty path.
StoreResult<std::string> sqlite_path_from_url(const std::string& url_or_path);

/// The schema version this binary creates and understands (number of migrations).
int sqlite_schema_version() noexcept;

/// Opens (creating the file and its parent directory if needed) and migrates the database,
/// then starts the background writer thread. Errors: invalid (bad URL, schema newer than this
/// binary), unavailable (cannot create, open or migrate). `:memory:` gives a private in-memory
/// database (tests; no durability). The returned store is thread-safe; destroying it commits
/// everything already appended, fires the remaining callbacks, and joins the writer.
StoreResult<std::unique_ptr<Store>> open_sqlite_store(const std::string& url_or_path,
                                                      const SqliteOptions& options = {});

}  // namespace tollgate::store::sqlite
