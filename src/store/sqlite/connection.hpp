#pragma once
/// One SQLite connection with its prepared statements (a sql::Connection; store/sql.hpp), and the
/// mapping of SQLite's errors to StoreError.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/string_hash.hpp"
#include "store/sql.hpp"
#include "store/sqlite/db.hpp"
#include "store/store.hpp"

namespace tollgate::store::sqlite {

/// `what: message`, coded: a UNIQUE or PRIMARY KEY violation is `conflict` with the column in
/// `field` ("keys.key_alias" → "key_alias"); NOT NULL, CHECK, TOOBIG and MISMATCH are `invalid`;
/// anything else (busy, I/O, full) is `unavailable`.
StoreError to_store_error(const DbError& e, std::string_view what);

/// A connection whose statements are prepared once and kept, by SQL text. Only texts of at most
/// kMaxCachedText bytes are kept: the store's own statements are a small fixed set (the group
/// commit's multi-row INSERTs come in a few row counts, RowsPerStatement::fixed), while a longer
/// text (one per row count, its program growing with the rows) is prepared for its one use, so
/// the cache holds no more than the few short texts of each row count. Not thread-safe (one user at
/// a time; the backend holds a mutex per connection).
class SqliteConnection final : public sql::Connection {
 public:
  static constexpr std::size_t kMaxCachedText = 2048;

  /// The database handle (opened by the caller with Db::open).
  Db& db() { return db_; }

  StoreResult<sql::Result> run(std::string_view text, const sql::Params& params, std::string_view what) override;
  StoreResult<void> script(std::string_view text, std::string_view what) override;
  /// `BEGIN IMMEDIATE` for a write transaction (it takes the write lock at once, waiting up to
  /// busy_timeout, so it never fails half-way for a lock), `BEGIN` for a read one.
  StoreResult<void> begin(sql::TxnMode mode, std::string_view what) override;
  /// A COMMIT that fails (busy, I/O) is rolled back.
  StoreResult<void> commit(std::string_view what) override;
  void rollback() noexcept override;
  /// SQLite inserts a statement's rows one after another under the one write lock.
  bool consecutive_insert_ids() const noexcept override { return true; }
  /// "INSERT OR FAIL INTO ": NOT NULL and CHECK failures stop the statement without undoing its
  /// earlier rows, so SQLite keeps no statement journal for it (the caller's ROLLBACK undoes them).
  std::string_view insert_in_transaction() const noexcept override { return "INSERT OR FAIL INTO "; }

  /// Statements kept prepared now.
  std::size_t cached_statements() const noexcept;

 private:
  Db db_;  // declared first: closed after the statements are finalized
  std::unordered_map<std::string, Stmt, core::StringHash, std::equal_to<>> cache_;
};

}  // namespace tollgate::store::sqlite
