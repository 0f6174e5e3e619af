#pragma once
/// One libpq connection as a store::sql::Connection (used only inside store/postgres/).
/// Not thread-safe: its owner hands it to one thread at a time.

#include <libpq-fe.h>

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "store/sql.hpp"

namespace tollgate::store::postgres {

/// Session settings applied on every (re)connect.
struct SessionSettings {
  int lock_timeout_ms = 5000;
  int connect_timeout_s = 5;
};

class PgConnection final : public sql::Connection {
 public:
  PgConnection(std::string url, SessionSettings settings);
  ~PgConnection() override;
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  /// Connects when not connected or the connection was lost; unavailable when the server cannot
  /// be reached (the message has no password).
  std::optional<StoreError> ensure_connected();

  /// `?` placeholders become `$1, $2, …`; an integer is sent as int8, text with its type left to
  /// the server. A statement used a second time on this connection is prepared and kept (the 64
  /// most recently used), named by its content: parsing and planning cost the server more than
  /// the round trip does. Behind a pooler that does not keep prepared statements (PgBouncer in
  /// transaction mode before 1.21) the connection stops preparing at the first refusal. A
  /// statement outside a transaction that fails because the connection was lost is retried once
  /// on a new connection (statements outside transactions are reads).
  StoreResult<sql::Result> run(std::string_view sql, const sql::Params& params, std::string_view what) override;
  StoreResult<void> script(std::string_view sql, std::string_view what) override;
  /// read: REPEATABLE READ, READ ONLY (one snapshot); write: READ COMMITTED; migrate: write plus
  /// `pg_advisory_xact_lock`. A BEGIN that fails on a lost connection is retried once after
  /// reconnecting (nothing had been sent in the transaction yet).
  StoreResult<void> begin(sql::TxnMode mode, std::string_view what) override;
  StoreResult<void> commit(std::string_view what) override;
  void rollback() noexcept override;
  /// One statement in autocommit (its own transaction, durable when it returns: synchronous_commit
  /// is on), one round trip; connects first if needed, never retried.
  StoreResult<sql::Result> run_atomic(std::string_view sql, const sql::Params& params, std::string_view what) override;

 private:
  bool lost() const;
  /// Before a write that must not be retried: true when the connection is lost, or the server
  /// sent something while it was idle (a terminated backend's FATAL and EOF show this way before
  /// any send fails).
  bool closed_by_server();
  void disconnect();
  StoreResult<sql::Result> exec_once(const std::string& text, const sql::Params& params, std::string_view what);
  StoreResult<void> simple(const char* text, std::string_view what);
  /// Runs `text` as a prepared statement (preparing it first if this session has not); the
  /// result is the PREPARE's when that fails. Caller owns the result.
  PGresult* execute(const std::string& text, const std::vector<Oid>& types, const std::vector<const char*>& values);
  /// A pooler refused prepared statements: none from now on; `unprepared()` runs the statement
  /// again outside a transaction, else `failed` is the answer.
  template <class F>
  PGresult* stop_preparing(PGresult* failed, F&& unprepared);

  struct Prepared {
    std::string name;
    std::list<std::string>::iterator use;  // its place in lru_
  };
  static constexpr std::size_t kPreparedLimit = 64;
  static constexpr std::size_t kSeenLimit = 4096;

  std::string url_;
  SessionSettings settings_;
  PGconn* conn_ = nullptr;
  bool in_txn_ = false;  // between a successful begin() and commit() / rollback()
  std::unordered_map<std::string, Prepared> prepared_;  // key: text, 0x1f, a type letter per parameter
  std::list<std::string> lru_;                         // keys, most recently used first
  std::unordered_set<std::size_t> seen_;               // hashes of keys used once, not yet prepared
  bool prepare_ = true;                                // false once a pooler refused prepared statements
  bool deallocate_all_ = false;                        // a kept plan went stale: DEALLOCATE ALL first
};

/// `?` → `$n` outside quoted text.
std::string numbered_placeholders(std::string_view sql);

/// The migration scripts' SQLite DDL in Postgres terms: INTEGER → BIGINT, an INTEGER PRIMARY KEY
/// (SQLite's rowid alias) → a BIGINT identity primary key (explicit values still allowed, never
/// reused), AUTOINCREMENT and WITHOUT ROWID dropped.
std::string postgres_ddl(std::string_view sqlite_ddl);

}  // namespace tollgate::store::postgres
