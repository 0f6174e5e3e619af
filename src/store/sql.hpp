#pragma once
/// The seam between the backend-independent SQL store (store/sql_store.hpp) and a database
/// engine (store/sqlite/, store/postgres/): values, result rows, one connection, and where the
/// store gets its connections. Only store implementations include this header.
///
/// SQL text is written once, in the dialect both SQLite (≥ 3.35) and PostgreSQL (≥ 13) accept:
/// `?` placeholders (a backend rewrites them if it needs to), `INSERT … ON CONFLICT … DO`,
/// `RETURNING`, row-value `UPDATE … SET (a, b) = (?, ?)`.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "store/store.hpp"

namespace tollgate::store::sql {

/// A parameter or column value: NULL, a 64-bit integer (money in nanos, ms, counts, booleans as
/// 0/1) or text. A parameter's text may also be borrowed (`std::string_view`): the caller keeps
/// the characters alive until the statement has run (the group commit binds its batch's own
/// strings so). Result rows hold owned text only.
using Value = std::variant<std::monostate, std::int64_t, std::string, std::string_view>;
using Params = std::vector<Value>;

/// One result row; column indexes are 0-based. Reading a NULL gives 0 / "" (opt_* give nullopt).
struct Row {
  std::vector<Value> cols;
  bool is_null(std::size_t c) const { return std::holds_alternative<std::monostate>(cols[c]); }
  std::int64_t i64(std::size_t c) const;
  std::string text(std::size_t c) const;
  std::optional<std::int64_t> opt_i64(std::size_t c) const {
    if (is_null(c)) return std::nullopt;
    return i64(c);
  }
  std::optional<std::string> opt_text(std::size_t c) const {
    if (is_null(c)) return std::nullopt;
    return text(c);
  }
};

/// What one statement returned: its rows and how many rows it inserted, updated or deleted.
struct Result {
  std::vector<Row> rows;
  std::int64_t changes = 0;
  /// After an INSERT that added rows: the id of the last one, where the engine reports it
  /// (Connection::consecutive_insert_ids). Otherwise unspecified (0, or an earlier insert's id).
  std::int64_t last_insert_id = 0;
};

/// Transaction kinds. `read`: a consistent snapshot (several SELECTs see one instant);
/// `write`: takes the write lock up front where the engine has one (SQLite `BEGIN IMMEDIATE`);
/// `migrate`: `write` plus the cross-process migration lock (Postgres `pg_advisory_xact_lock`).
enum class TxnMode { read, write, migrate };

/// One connection. Not thread-safe: its owner (the Backend) hands it to one thread at a time.
/// Errors are StoreErrors (conflict with field on a unique/primary key violation, invalid on a
/// check / not-null violation, unavailable otherwise), their messages prefixed with `what`.
/// A statement run outside a transaction must be a read (a backend may retry it after
/// reconnecting).
class Connection {
 public:
  virtual ~Connection() = default;
  /// Runs one statement with `?` placeholders bound to `params` in order.
  virtual StoreResult<Result> run(std::string_view sql, const Params& params, std::string_view what) = 0;
  /// Runs a script of statements without parameters or results (migrations).
  virtual StoreResult<void> script(std::string_view sql, std::string_view what) = 0;
  virtual StoreResult<void> begin(TxnMode mode, std::string_view what) = 0;
  virtual StoreResult<void> commit(std::string_view what) = 0;
  /// Ends a transaction without keeping it; never fails (a lost connection has no transaction).
  virtual void rollback() noexcept = 0;
  /// Runs one write statement as a transaction of its own, outside any begin(); never retried
  /// (it may have committed before a connection was lost). Default: begin(write), run, commit.
  virtual StoreResult<Result> run_atomic(std::string_view sql, const Params& params, std::string_view what);
  /// True when a multi-row INSERT into a table with an `INTEGER PRIMARY KEY AUTOINCREMENT` gives
  /// its rows consecutive ids in VALUES order and run() reports the last in
  /// Result::last_insert_id (SQLite: one writer, rows inserted in order), so the ids need no
  /// RETURNING. False: read them with RETURNING.
  virtual bool consecutive_insert_ids() const noexcept { return false; }
  /// How a multi-row INSERT inside a write transaction begins, with a trailing space: "INSERT INTO "
  /// by default. Every caller of it rolls the whole transaction back when a statement fails, so a
  /// failing statement may leave the rows before the failing one in place until then (SQLite's
  /// `INSERT OR FAIL`: a statement that may abort half-way would otherwise copy each page it
  /// changes into a statement journal, spilled to a temporary file past 64 KiB;
  /// https://www.sqlite.org/lang_conflict.html, https://www.sqlite.org/tempfiles.html).
  virtual std::string_view insert_in_transaction() const noexcept { return "INSERT INTO "; }
};

/// RAII transaction: rolls back unless committed.
class Txn {
 public:
  Txn(Connection& c, TxnMode mode, std::string_view what) : c_(c) {
    auto r = c_.begin(mode, what);
    if (!r) error_ = r.error();
    active_ = r.has_value();
  }
  ~Txn() {
    if (active_) c_.rollback();
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  /// Why BEGIN failed, if it did.
  const std::optional<StoreError>& begin_error() const { return error_; }
  StoreResult<void> commit(std::string_view what) {
    auto r = c_.commit(what);
    active_ = false;  // a failed COMMIT ended the transaction too
    return r;
  }

 private:
  Connection& c_;
  std::optional<StoreError> error_;
  bool active_ = false;
};

/// Where a SqlStore gets its connections. Thread-safe.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Runs `fn` with a connection for synchronous calls (identity CRUD, jobs, queries), blocking
  /// until one is free. Returns an error (unavailable) when no usable connection can be had;
  /// `fn` is then not called.
  virtual std::optional<StoreError> with_admin(const std::function<void(Connection&)>& fn) = 0;
  /// Runs `fn` with the writer's connection. Called from the group-commit writer thread only
  /// (and once at open, before that thread starts, to migrate).
  virtual std::optional<StoreError> with_writer(const std::function<void(Connection&)>& fn) = 0;
  /// Migration script `sqlite_ddl` (store/sql_store.cpp's migrations(), written for SQLite) in
  /// this backend's dialect.
  virtual std::string translate_ddl(std::string_view sqlite_ddl) const = 0;
  /// True when one statement can write to several tables (data-modifying CTEs: PostgreSQL), so a
  /// group commit can be one statement run with Connection::run_atomic: one round trip to a
  /// server instead of four. SQLite has none, and its round trips cost nothing.
  virtual bool one_statement_writes() const { return false; }
  /// SQL for SUM(`expr`) over integers, clamped to the int64 range instead of failing on
  /// overflow (money and token totals: one upstream may report 10^15 tokens, and two such
  /// charges at kMaxNanos would overflow a plain SUM and every read of it). NULL over no rows.
  virtual std::string saturating_sum(std::string_view expr) const = 0;
};

}  // namespace tollgate::store::sql
