#pragma once
/// Which database a config names, and opening it, for every command that does (`serve`,
/// `explain`): the one place that picks the store engine from the URL (docs/storage.md).

#include <chrono>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "store/store.hpp"

namespace tollgate::app {

/// general_settings.database_url (the loader already fell back to DATABASE_URL), else
/// `sqlite://<tollgate_settings.data_dir>/tollgate.db` (docs/storage.md).
std::string database_url(const config::Config& cfg);

struct OpenDatabaseOptions {
  /// `serve`: a SQLite database is locked to this process (store/sqlite/process_lock.hpp); a
  /// Postgres database is shared and takes no such lock.
  bool serving = false;
  /// How long to keep retrying a Postgres server that is unavailable (not yet up, restarting),
  /// in total; 0 = one attempt. Invalid URLs and schema errors are never retried.
  std::chrono::milliseconds retry_unavailable{0};
};

/// Opens the config's database: SQLite for sqlite:// URLs and paths, PostgreSQL for
/// postgresql:// and postgres:// (pool size general_settings.database_connection_pool_limit).
/// Errors as the engines' open functions: invalid (URL, schema newer than the binary),
/// unavailable (cannot open or reach it, after the retries).
store::StoreResult<std::unique_ptr<store::Store>> open_database(const config::Config& cfg,
                                                                const OpenDatabaseOptions& options);

}  // namespace tollgate::app
