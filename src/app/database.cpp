#include "app/database.hpp"

#include <spdlog/spdlog.h>

#include <thread>

#include "core/database_url.hpp"
#include "store/postgres/postgres_store.hpp"
#include "store/sqlite/sqlite_store.hpp"

namespace tollgate::app {

std::string database_url(const config::Config& cfg) {
  if (!cfg.general_settings.database_url.empty()) return cfg.general_settings.database_url;
  return "sqlite://" + cfg.tollgate_settings.data_dir + "/tollgate.db";  // sqlite:///abs or sqlite://relative
}

store::StoreResult<std::unique_ptr<store::Store>> open_database(const config::Config& cfg,
                                                                const OpenDatabaseOptions& options) {
  const std::string url = database_url(cfg);
  auto parsed = core::parse_database_url(url);
  if (!parsed)
    return std::unexpected(store::StoreError{store::StoreErrorCode::invalid, parsed.error(), "database_url"});
  if (parsed->kind == core::DatabaseUrl::Kind::sqlite) {
    store::sqlite::SqliteOptions so;
    so.exclusive_process = options.serving;  // one gateway per SQLite database
    so.ledger_journal = cfg.tollgate_settings.ledger_journal;  // used only with exclusive_process
    so.ledger_journal_fsync = cfg.tollgate_settings.ledger_journal_fsync;
    return store::sqlite::open_sqlite_store(url, so);
  }
  store::postgres::PostgresOptions po;
  po.pool_limit = cfg.general_settings.database_connection_pool_limit;
  const auto deadline = std::chrono::steady_clock::now() + options.retry_unavailable;
  for (int attempt = 1;; ++attempt) {
    auto opened = store::postgres::open_postgres_store(url, po);
    if (opened || opened.error().code != store::StoreErrorCode::unavailable) return opened;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::milliseconds(0)) return opened;
    spdlog::warn("database not reachable yet (attempt {}): {}; retrying", attempt, opened.error().message);
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(500)));
  }
}

}  // namespace tollgate::app
