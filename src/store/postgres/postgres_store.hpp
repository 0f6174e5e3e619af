#pragma once
/// The PostgreSQL store (`general_settings.database_url: postgresql://user:pass@host:port/db`, or
/// `postgres://…`): the same schema, migrations and contract as the SQLite store (the SQL lives
/// once in store/sql_store.cpp), over libpq, for several gateway instances sharing one
/// database. See docs/storage.md "PostgreSQL".

#include <cstddef>
#include <memory>
#include <string>

#include "store/store.hpp"

namespace tollgate::store::postgres {

/// Knobs of the Postgres store; every field has a safe default.
struct PostgresOptions {
  /// Connections for the synchronous calls (identity CRUD, jobs, queries):
  /// `general_settings.database_connection_pool_limit`. The ledger writer has one more of its own.
  int pool_limit = 10;
  /// How long a synchronous call waits for a free pool connection before failing as unavailable,
  /// milliseconds.
  int pool_wait_ms = 30000;
  /// How long a statement waits for another transaction's lock (`lock_timeout`) before failing
  /// as unavailable, milliseconds (the SQLite store's busy_timeout).
  int lock_timeout_ms = 5000;
  /// How long one connection attempt may take (libpq `connect_timeout`), seconds. A URL that sets
  /// connect_timeout itself wins.
  int connect_timeout_s = 5;
  /// Bound on spend log rows waiting for the writer; beyond it rows are dropped and counted.
  std::size_t max_pending_spend_rows = 100000;
};

/// Connects (the writer's connection and one pool connection), migrates under a
/// `pg_advisory_xact_lock` (several instances may start at once), then starts the writer thread.
/// Errors: invalid (not a postgresql:// / postgres:// URL, schema newer than this binary),
/// unavailable (cannot connect or migrate; the message names the server without the password).
/// The returned store is thread-safe; destroying it commits everything already appended, fires
/// the remaining callbacks, joins the writer and closes the connections.
StoreResult<std::unique_ptr<Store>> open_postgres_store(const std::string& url, const PostgresOptions& options = {});

}  // namespace tollgate::store::postgres
