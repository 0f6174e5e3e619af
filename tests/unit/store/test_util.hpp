#pragma once
// Helpers shared by the store tests: a temporary directory removed at the end of each test.

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

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

}  // namespace tollgate::store::testing
