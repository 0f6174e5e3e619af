#pragma once
/// One libpq connection as a store::sql::Connection (used only inside store/postgres/).
/// Not thread-safe: its owner hands it to one thread at a time.

#include <libpq-fe.h>

#include <optional>
#include <string>

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
  /// the server. A statement outside a transaction that fails because the connection was lost is
  /// retried once on a new connection (statements outside transactions are reads).
  StoreResult<sql::Result> run(std::string_view sql, const sql::Params& params, std::string_view what) override;
  StoreResult<void> script(std::string_view sql, std::string_view what) override;
  /// read: REPEATABLE READ, READ ONLY (one snapshot); write: READ COMMITTED; migrate: write plus
  /// `pg_advisory_xact_lock`. A BEGIN that fails on a lost connection is retried once after
  /// reconnecting (nothing had been sent in the transaction yet).
  StoreResult<void> begin(sql::TxnMode mode, std::string_view what) override;
  StoreResult<void> commit(std::string_view what) override;
  void rollback() noexcept override;

 private:
  bool lost() const;
  void disconnect();
  StoreResult<sql::Result> exec_once(const std::string& text, const sql::Params& params, std::string_view what);
  StoreResult<void> simple(const char* text, std::string_view what);

  std::string url_;
  SessionSettings settings_;
  PGconn* conn_ = nullptr;
  bool in_txn_ = false;  // between a successful begin() and commit() / rollback()
};

/// `?` → `$n` outside quoted text.
std::string numbered_placeholders(std::string_view sql);

/// The migration scripts' SQLite DDL in Postgres terms: INTEGER → BIGINT, an INTEGER PRIMARY KEY
/// (SQLite's rowid alias) → a BIGINT identity primary key (explicit values still allowed, never
/// reused), AUTOINCREMENT and WITHOUT ROWID dropped.
std::string postgres_ddl(std::string_view sqlite_ddl);

}  // namespace tollgate::store::postgres
