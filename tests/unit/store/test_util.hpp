#pragma once
// Helpers shared by the store tests: a temporary directory removed at the end of each test, and
// the engines every store test runs on (a fresh database per test: a SQLite file in a temporary
// directory, or `CREATE DATABASE tg_test_<random>` on the server named by
// TOLLGATE_TEST_POSTGRES_URL, dropped at the end). Without that variable the Postgres instances
// skip, unless TOLLGATE_REQUIRE_SERVICES=1 (CI): then they fail.

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "store/postgres/postgres_store.hpp"
#include "store/sqlite/sqlite_store.hpp"

namespace tollgate::store::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tg_store_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// Appends `r` to `s`'s ledger and waits for its callback: whether it became durable.
inline bool append_sync(Store& s, LedgerRecord r) {
  std::promise<bool> p;
  auto f = p.get_future();
  s.append_ledger(std::move(r), [&](bool ok) { p.set_value(ok); });
  return f.get();
}

/// The request ids of the spend log rows `f` selects, in the store's order (newest first); a failed
/// query is a test failure and gives none.
inline std::vector<std::string> spend_log_ids(Store& store, const SpendLogFilter& f) {
  std::vector<std::string> out;
  auto rows = store.query_spend_logs(f);
  EXPECT_TRUE(rows);
  if (rows)
    for (const auto& r : *rows) out.push_back(r.request_id);
  return out;
}

inline std::unique_ptr<Store> open_or_die(const std::string& url, const sqlite::SqliteOptions& o = {}) {
  auto s = sqlite::open_sqlite_store(url, o);
  if (!s) {
    ADD_FAILURE() << "open " << url << ": " << s.error().message;
    return nullptr;
  }
  return std::move(*s);
}

/// Runs SQL on the database file through a separate raw connection (the store must be closed).
inline void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* msg = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
  sqlite3_free(msg);
  sqlite3_close(db);
}

/// Turns a closed, current-version database back into the schema `version` wrote (as the
/// previous binary left it): undoes every later migration, newest first, keeping the data of
/// the tables that existed then. Extend it with each new migration.
inline void downgrade_to(const std::string& path, int version) {
  if (version < 10)
    exec_sql(path,
             "DROP INDEX spend_logs_user; CREATE INDEX spend_logs_user ON spend_logs(\"user\", start_ms); "
             "DROP INDEX spend_logs_team; CREATE INDEX spend_logs_team ON spend_logs(team_id, start_ms);");
  if (version < 9)
    exec_sql(path,
             "DROP TABLE budgets; ALTER TABLE keys DROP COLUMN budget_id; ALTER TABLE teams DROP COLUMN budget_id; "
             "ALTER TABLE customers DROP COLUMN budget_id; ALTER TABLE spend_logs DROP COLUMN requester_ip_address; "
             "ALTER TABLE spend_logs DROP COLUMN session_id;");
  if (version < 8)
    exec_sql(path,
             "ALTER TABLE spend_logs DROP COLUMN cache_hit; ALTER TABLE spend_logs DROP COLUMN cache_key; "
             "ALTER TABLE spend_logs DROP COLUMN cache_saved_nanos;");
  if (version < 7) exec_sql(path, "DROP TABLE proxy_models; DROP TABLE proxy_model_generation;");
  if (version < 6)
    exec_sql(path,
             "ALTER TABLE keys DROP COLUMN allowed_model_region; ALTER TABLE teams DROP COLUMN allowed_model_region; "
             "ALTER TABLE customers DROP COLUMN allowed_model_region;");
  if (version < 5)
    exec_sql(path,
             "DROP INDEX tollgate_jobs_key; DROP INDEX tollgate_jobs_finished; "
             "ALTER TABLE tollgate_jobs DROP COLUMN claimed_by; ALTER TABLE tollgate_jobs DROP COLUMN claim_expires_ms;");
  if (version < 4)
    exec_sql(path,
             "ALTER TABLE ledger_scope DROP COLUMN window_end_ms; ALTER TABLE ledger_scope DROP COLUMN period; "
             "ALTER TABLE spend_logs DROP COLUMN line_items;");
  if (version < 3)
    exec_sql(path,
             "DROP TABLE tollgate_jobs; ALTER TABLE spend_logs DROP COLUMN degradation; "
             "ALTER TABLE spend_logs DROP COLUMN decision;");
  if (version < 2) exec_sql(path, "DROP TABLE tags;");
  exec_sql(path, "DELETE FROM schema_version WHERE version > " + std::to_string(version) + ";");
}

// --- engines -----------------------------------------------------------------------------

/// sqlite_journal: SQLite as `serve` opens it (its process lock held, ledger records through the
/// ledger journal).
enum class Engine { sqlite, postgres, sqlite_journal };

inline const auto kEngines = ::testing::Values(Engine::sqlite, Engine::postgres);
/// The suites whose behaviour the ledger journal changes also run on it.
inline const auto kLedgerEngines = ::testing::Values(Engine::sqlite, Engine::sqlite_journal, Engine::postgres);

inline std::string engine_name(const ::testing::TestParamInfo<Engine>& info) {
  return info.param == Engine::sqlite ? "Sqlite" : info.param == Engine::sqlite_journal ? "SqliteJournal" : "Postgres";
}

inline void PrintTo(Engine e, std::ostream* os) {
  *os << (e == Engine::sqlite ? "sqlite" : e == Engine::sqlite_journal ? "sqlite_journal" : "postgres");
}

inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

/// The server the Postgres instances use, or empty.
inline std::string postgres_server_url() { return env("TOLLGATE_TEST_POSTGRES_URL"); }

/// Why `engine` cannot run here (nullopt: it can).
inline std::optional<std::string> engine_unavailable(Engine engine) {
  if (engine == Engine::postgres && postgres_server_url().empty())
    return "TOLLGATE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against "
           "(eval \"$(scripts/services.sh start)\" starts one)";
  return std::nullopt;
}

/// Skips the test when its engine is unavailable, or fails it when TOLLGATE_REQUIRE_SERVICES=1.
#define TG_REQUIRE_ENGINE(engine)                                              \
  do {                                                                         \
    if (auto why_ = ::tollgate::store::testing::engine_unavailable(engine)) {  \
      if (::tollgate::store::testing::env("TOLLGATE_REQUIRE_SERVICES") == "1") \
        FAIL() << *why_ << " (TOLLGATE_REQUIRE_SERVICES=1)";                   \
      GTEST_SKIP() << *why_;                                                   \
    }                                                                          \
  } while (0)

/// Options every engine understands.
struct TestStoreOptions {
  std::size_t max_pending_spend_rows = 100000;
  int lock_timeout_ms = 5000;  ///< SQLite busy_timeout / Postgres lock_timeout
};

/// `server_url` with its database replaced by `name`.
inline std::string with_database(const std::string& server_url, const std::string& name) {
  auto parsed = boost::urls::parse_uri(server_url);
  if (!parsed) throw std::runtime_error("unparsable TOLLGATE_TEST_POSTGRES_URL");
  boost::urls::url u(*parsed);
  u.set_path("/" + name);
  return std::string(u.buffer());
}

/// Runs `sql` on `url` through a raw libpq connection; returns the first column of the first row
/// ("" when none), ADD_FAILURE on an error.
inline std::string pg_query(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  std::string out;
  if (PQstatus(c) != CONNECTION_OK) {
    ADD_FAILURE() << "connect: " << PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    const auto st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      ADD_FAILURE() << sql << ": " << PQerrorMessage(c);
    else if (PQntuples(r) > 0 && PQnfields(r) > 0)
      out = PQgetvalue(r, 0, 0);
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

/// A fresh, empty database of one engine, for one test.
class TestDatabase {
 public:
  explicit TestDatabase(Engine engine) : engine_(engine) {
    if (engine_ != Engine::postgres) {
      dir_.emplace();
      url_ = dir_->file("tg.db");
      return;
    }
    std::random_device rd;
    name_ = "tg_test_" + std::to_string(rd()) + std::to_string(rd());
    admin_url_ = postgres_server_url();
    pg_query(admin_url_,
             "CREATE DATABASE " + name_ + " TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'");
    url_ = with_database(admin_url_, name_);
  }
  ~TestDatabase() {
    if (engine_ == Engine::postgres) pg_query(admin_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  Engine engine() const { return engine_; }
  /// The database_url of this database (a SQLite file path, or a postgresql:// URL).
  const std::string& url() const { return url_; }

  StoreResult<std::unique_ptr<Store>> try_open(const TestStoreOptions& o = {}) const {
    if (engine_ != Engine::postgres)
      return sqlite::open_sqlite_store(url_, {.busy_timeout_ms = o.lock_timeout_ms,
                                              .max_pending_spend_rows = o.max_pending_spend_rows,
                                              .exclusive_process = engine_ == Engine::sqlite_journal,
                                              .ledger_journal = engine_ == Engine::sqlite_journal});
    return postgres::open_postgres_store(
        url_,
        {.pool_limit = 4, .lock_timeout_ms = o.lock_timeout_ms, .max_pending_spend_rows = o.max_pending_spend_rows});
  }
  /// Opens a store on it (ADD_FAILURE and nullptr when that fails).
  std::unique_ptr<Store> open(const TestStoreOptions& o = {}) const {
    auto s = try_open(o);
    if (!s) {
      ADD_FAILURE() << "open " << url_ << ": " << s.error().message;
      return nullptr;
    }
    return std::move(*s);
  }

  /// Runs SQL through a separate raw connection; the first column of the first row as an integer
  /// (-1 when there is none).
  std::int64_t scalar(const std::string& sql) const {
    std::string v;
    if (engine_ == Engine::postgres) {
      v = pg_query(url_, sql);
    } else {
      sqlite3* db = nullptr;
      EXPECT_EQ(sqlite3_open(url_.c_str(), &db), SQLITE_OK);
      sqlite3_stmt* st = nullptr;
      EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
      if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
      sqlite3_close(db);
    }
    return v.empty() ? -1 : std::stoll(v);
  }
  /// Runs SQL through a separate raw connection.
  void exec(const std::string& sql) const {
    if (engine_ == Engine::postgres)
      pg_query(url_, sql);
    else
      exec_sql(url_, sql);
  }

 private:
  Engine engine_;
  std::optional<TempDir> dir_;
  std::string name_, admin_url_, url_;
};

/// Base of the suites that run on every engine: `db_` is a fresh database of GetParam().
class EngineTest : public ::testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    TG_REQUIRE_ENGINE(GetParam());
    db_ = std::make_unique<TestDatabase>(GetParam());
  }
  /// True when SetUp skipped or failed (a derived SetUp returns then).
  bool not_ready() const { return IsSkipped() || HasFatalFailure() || !db_; }
  std::unique_ptr<TestDatabase> db_;
};

}  // namespace tollgate::store::testing
