#include "store/sqlite/sqlite_store.hpp"

#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/database_url.hpp"
#include "store/sql_store.hpp"
#include "store/sqlite/connection.hpp"
#include "store/sqlite/db.hpp"
#include "store/sqlite/process_lock.hpp"

namespace tollgate::store::sqlite {
namespace {

StoreError make_error(StoreErrorCode code, std::string message, std::string field = {}) {
  return StoreError{code, std::move(message), std::move(field)};
}

struct Guarded {
  SqliteConnection conn;
  std::mutex mu;
};

// The writer's connection and the admin connection (one shared connection for `:memory:`,
// which is private to its connection), each behind its mutex.
class SqliteBackend final : public sql::Backend {
 public:
  SqliteBackend(ProcessLock lock, std::shared_ptr<Guarded> writer, std::shared_ptr<Guarded> admin)
      : lock_(std::move(lock)), writer_(std::move(writer)), admin_(std::move(admin)) {}

  std::optional<StoreError> with_admin(const std::function<void(sql::Connection&)>& fn) override {
    std::lock_guard lk(admin_->mu);
    fn(admin_->conn);
    return std::nullopt;
  }
  std::optional<StoreError> with_writer(const std::function<void(sql::Connection&)>& fn) override {
    std::lock_guard lk(writer_->mu);
    fn(writer_->conn);
    return std::nullopt;
  }
  std::string translate_ddl(std::string_view ddl) const override { return std::string(ddl); }
  std::string saturating_sum(std::string_view expr) const override { return "tollgate_sum(" + std::string(expr) + ")"; }

 private:
  ProcessLock lock_;  // first member: released after the connections close
  std::shared_ptr<Guarded> writer_;
  std::shared_ptr<Guarded> admin_;
};

std::optional<DbError> configure(Db& db, const SqliteOptions& o, bool writer, bool memory) {
  if (auto e = db.exec("PRAGMA busy_timeout = " + std::to_string(o.busy_timeout_ms))) return e;
  if (!memory) {
    // Only a database not yet written takes it (and only before WAL mode is set); an existing
    // one keeps the page size it was created with.
    if (auto e = db.exec("PRAGMA page_size = " + std::to_string(kNewDatabasePageSize))) return e;
    if (auto e = db.exec("PRAGMA journal_mode = WAL")) return e;
  }
  const bool full = writer && o.synchronous_full;
  if (auto e = db.exec(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")) return e;
  if (o.max_page_count)
    if (auto e = db.exec("PRAGMA max_page_count = " + std::to_string(*o.max_page_count))) return e;
  return std::nullopt;
}

std::optional<StoreError> open_connection(const std::string& path, const SqliteOptions& opts, bool writer, bool memory,
                                          Guarded& out) {
  if (auto e = Db::open(path, out.conn.db())) return to_store_error(*e, "open " + path);
  if (auto e = configure(out.conn.db(), opts, writer, memory)) return to_store_error(*e, "configure " + path);
  return std::nullopt;
}

}  // namespace

StoreResult<std::string> sqlite_path_from_url(const std::string& url) {
  auto parsed = core::parse_database_url(url);
  if (!parsed) return std::unexpected(make_error(StoreErrorCode::invalid, parsed.error(), "database_url"));
  if (parsed->kind != core::DatabaseUrl::Kind::sqlite)
    return std::unexpected(make_error(StoreErrorCode::invalid, "not a SQLite database URL", "database_url"));
  return parsed->target;
}

int sqlite_schema_version() noexcept { return sql::schema_version(); }

StoreResult<std::unique_ptr<Store>> open_sqlite_store(const std::string& url, const SqliteOptions& options) {
  SqliteOptions opts = options;
  // With fsync'd journal writes the fold must be as durable before a segment is deleted: the
  // writer's commits are fsynced too (they are large batches, so this costs little).
  if (opts.ledger_journal && opts.ledger_journal_fsync) opts.synchronous_full = true;
  auto path = sqlite_path_from_url(url);
  if (!path) return std::unexpected(path.error());
  const bool memory = *path == ":memory:";
  if (!memory) {
    std::error_code ec;
    auto parent = std::filesystem::path(*path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec)
      return std::unexpected(make_error(StoreErrorCode::unavailable,
                                        "cannot create directory " + parent.string() + ": " + ec.message(),
                                        "database_url"));
  }
  ProcessLock lock;
  if (!memory && opts.exclusive_process) {
    auto held = ProcessLock::acquire(*path);
    if (!held) return std::unexpected(held.error());
    lock = std::move(*held);
  }
  auto writer = std::make_shared<Guarded>();
  if (auto e = open_connection(*path, opts, true, memory, *writer)) return std::unexpected(*e);
  std::shared_ptr<Guarded> admin = writer;  // :memory: is per connection: share it
  if (!memory) {
    admin = std::make_shared<Guarded>();
    if (auto e = open_connection(*path, opts, false, memory, *admin)) return std::unexpected(*e);
  }
  sql::SqlStoreOptions so{.max_pending_spend_rows = opts.max_pending_spend_rows};
  if (opts.exclusive_process && !memory) {
    // Without the journal now, a journal a killed run left is still folded in first.
    std::error_code ec;
    const bool left = std::filesystem::exists(*path + ".ledger", ec);
    if (opts.ledger_journal || left)
      so.journal = journal::JournalOptions{.dir = *path + ".ledger", .fsync = opts.ledger_journal_fsync};
    so.journal_fold_only = !opts.ledger_journal;
  }
  return sql::open_sql_store(std::make_unique<SqliteBackend>(std::move(lock), writer, admin), so);
}

}  // namespace tollgate::store::sqlite
