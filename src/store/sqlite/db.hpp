#pragma once
/// A small RAII wrapper over the SQLite3 C API (used only inside store/sqlite/).
/// Not thread-safe: one Db and its Stmts belong to one thread at a time (callers lock).

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tollgate::store::sqlite {

/// Result of a failed SQLite call: primary/extended result code and message.
struct DbError {
  int code = SQLITE_ERROR;  ///< extended result code
  std::string message;
};

/// An open connection. Move-only; closes on destruction.
class Db {
 public:
  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  ~Db();

  /// Opens (creating if needed) `path` read-write; `uri` enables file: URIs. The connection has
  /// the aggregate `tollgate_sum(x)`: SUM of integers clamped to the int64 range instead of
  /// failing with "integer overflow" (NULL over no non-NULL value, as SUM; Backend::saturating_sum).
  static std::optional<DbError> open(const std::string& path, Db& out);
  /// Runs one or more statements without results.
  std::optional<DbError> exec(std::string_view sql);
  /// Last error of this connection.
  DbError last_error() const;
  std::int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  sqlite3* get() const { return db_; }
  explicit operator bool() const { return db_ != nullptr; }

 private:
  sqlite3* db_ = nullptr;
};

/// A prepared statement. Move-only; finalizes on destruction. Bind indexes are 1-based,
/// column indexes 0-based (SQLite's convention).
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : st_(o.st_), db_(o.db_) { o.st_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  ~Stmt();

  /// Prepares `sql` on `db`.
  static std::optional<DbError> prepare(Db& db, std::string_view sql, Stmt& out);

  void bind(int i, std::int64_t v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, bool v) { sqlite3_bind_int(st_, i, v ? 1 : 0); }
  /// Binds the text without copying it (SQLITE_STATIC): `v` must stay valid until reset().
  void bind(int i, std::string_view v) {
    sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void bind(int i, const std::string& v) { bind(i, std::string_view(v)); }
  void bind(int i, const char* v) { bind(i, std::string_view(v)); }
  void bind(int i, const std::optional<std::int64_t>& v) {
    if (v) bind(i, *v); else bind_null(i);
  }
  void bind(int i, const std::optional<std::string>& v) {
    if (v) bind(i, *v); else bind_null(i);
  }
  /// Binds NULL for an empty string (empty id = not set).
  void bind_or_null(int i, const std::string& v) {
    if (v.empty()) bind_null(i); else bind(i, v);
  }
  void bind_null(int i) { sqlite3_bind_null(st_, i); }

  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(st_); }
  /// Steps to completion; error if a step fails.
  std::optional<DbError> run();
  /// Ends the run and drops every binding (the statement then holds no pointer into bound text).
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }

  bool is_null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  std::string text(int c) const;
  std::optional<std::int64_t> opt_i64(int c) const {
    if (is_null(c)) return std::nullopt;
    return i64(c);
  }
  std::optional<std::string> opt_text(int c) const {
    if (is_null(c)) return std::nullopt;
    return text(c);
  }
  sqlite3_stmt* get() const { return st_; }

 private:
  sqlite3_stmt* st_ = nullptr;
  sqlite3* db_ = nullptr;
};

}  // namespace tollgate::store::sqlite
