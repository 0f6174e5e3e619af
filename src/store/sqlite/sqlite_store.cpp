#include "store/sqlite/sqlite_store.hpp"

#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/database_url.hpp"
#include "store/sql_store.hpp"
#include "store/sqlite/db.hpp"
#include "store/sqlite/process_lock.hpp"

namespace tollgate::store::sqlite {
namespace {

StoreError make_error(StoreErrorCode code, std::string message, std::string field = {}) {
  return StoreError{code, std::move(message), std::move(field)};
}

StoreError to_store_error(const DbError& e, std::string_view what) {
  StoreError out;
  out.message = std::string(what) + ": " + e.message;
  switch (e.code) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE: {
      out.code = StoreErrorCode::conflict;
      // "UNIQUE constraint failed: keys.key_alias" → key_alias (first column when composite).
      auto pos = e.message.find(": ");
      if (pos != std::string::npos) {
        std::string cols = e.message.substr(pos + 2);
        cols = cols.substr(0, cols.find(','));
        auto dot = cols.find('.');
        out.field = dot == std::string::npos ? cols : cols.substr(dot + 1);
      }
      out.message = std::string(what) + ": " + (out.field.empty() ? "duplicate" : out.field) + " already exists";
      break;
    }
    case SQLITE_CONSTRAINT_NOTNULL:
    case SQLITE_CONSTRAINT_CHECK:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
      out.code = StoreErrorCode::invalid;
      break;
    default:
      out.code = StoreErrorCode::unavailable;
  }
  return out;
}

// One SQLite connection with its prepared statements (cached by SQL text: the store's statements
// are a small fixed set).
class SqliteConnection final : public sql::Connection {
 public:
  Db& db() { return db_; }

  StoreResult<sql::Result> run(std::string_view text, const sql::Params& params, std::string_view what) override {
    auto it = cache_.find(std::string(text));
    if (it == cache_.end()) {
      Stmt st;
      if (auto e = Stmt::prepare(db_, text, st)) return std::unexpected(to_store_error(*e, what));
      it = cache_.emplace(std::string(text), std::move(st)).first;
    }
    Stmt& st = it->second;
    st.reset();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const int idx = static_cast<int>(i + 1);
      std::visit(
          [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::monostate>)
              st.bind_null(idx);
            else
              st.bind(idx, v);
          },
          params[i]);
    }
    sql::Result out;
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      sql::Row row;
      const int n = sqlite3_column_count(st.get());
      row.cols.reserve(static_cast<std::size_t>(n));
      for (int c = 0; c < n; ++c) {
        switch (sqlite3_column_type(st.get(), c)) {
          case SQLITE_NULL:
            row.cols.emplace_back(std::monostate{});
            break;
          case SQLITE_INTEGER:
            row.cols.emplace_back(st.i64(c));
            break;
          default:
            row.cols.emplace_back(st.text(c));
        }
      }
      out.rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) {
      auto e = to_store_error(db_.last_error(), what);
      st.reset();
      return std::unexpected(std::move(e));
    }
    out.changes = db_.changes();
    st.reset();
    return out;
  }

  StoreResult<void> script(std::string_view text, std::string_view what) override {
    if (auto e = db_.exec(text)) return std::unexpected(to_store_error(*e, what));
    return {};
  }

  StoreResult<void> begin(sql::TxnMode mode, std::string_view what) override {
    // A write transaction takes SQLite's write lock at BEGIN (waiting up to busy_timeout), so it
    // never fails half-way for a lock; `migrate` needs nothing more: the lock is per database.
    if (auto e = db_.exec(mode == sql::TxnMode::read ? "BEGIN" : "BEGIN IMMEDIATE"))
      return std::unexpected(to_store_error(*e, what));
    return {};
  }

  StoreResult<void> commit(std::string_view what) override {
    if (auto e = db_.exec("COMMIT")) {
      rollback();  // a COMMIT that failed (busy, I/O) leaves the transaction open
      return std::unexpected(to_store_error(*e, what));
    }
    return {};
  }

  void rollback() noexcept override {
    if (db_ && !sqlite3_get_autocommit(db_.get())) (void)db_.exec("ROLLBACK");
  }

 private:
  Db db_;  // declared first: closed after the statements are finalized
  std::unordered_map<std::string, Stmt> cache_;
};

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

 private:
  ProcessLock lock_;  // first member: released after the connections close
  std::shared_ptr<Guarded> writer_;
  std::shared_ptr<Guarded> admin_;
};

std::optional<DbError> configure(Db& db, const SqliteOptions& o, bool writer, bool memory) {
  if (auto e = db.exec("PRAGMA busy_timeout = " + std::to_string(o.busy_timeout_ms))) return e;
  if (!memory) {
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

StoreResult<std::unique_ptr<Store>> open_sqlite_store(const std::string& url, const SqliteOptions& opts) {
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
  return sql::open_sql_store(std::make_unique<SqliteBackend>(std::move(lock), writer, admin),
                             {.max_pending_spend_rows = opts.max_pending_spend_rows});
}

}  // namespace tollgate::store::sqlite
