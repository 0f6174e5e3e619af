#include "store/sqlite/db.hpp"

#include <limits>

namespace tollgate::store::sqlite {

namespace {

struct SaturatingSum {
  std::int64_t sum = 0;
  bool any = false;
};

void saturating_sum_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  auto* s = static_cast<SaturatingSum*>(sqlite3_aggregate_context(ctx, sizeof(SaturatingSum)));
  if (s == nullptr) return sqlite3_result_error_nomem(ctx);
  const std::int64_t v = sqlite3_value_int64(argv[0]);
  s->any = true;
  if (__builtin_add_overflow(s->sum, v, &s->sum))
    s->sum = v > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

void saturating_sum_final(sqlite3_context* ctx) {
  auto* s = static_cast<SaturatingSum*>(sqlite3_aggregate_context(ctx, 0));
  if (s == nullptr || !s->any) return sqlite3_result_null(ctx);
  sqlite3_result_int64(ctx, s->sum);
}

}  // namespace

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close_v2(db_);
    db_ = o.db_;
    o.db_ = nullptr;
  }
  return *this;
}

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

std::optional<DbError> Db::open(const std::string& path, Db& out) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI |
                               SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    DbError e{rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)};
    if (db) sqlite3_close_v2(db);
    return e;
  }
  sqlite3_extended_result_codes(db, 1);
  rc = sqlite3_create_function_v2(db, "tollgate_sum", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, nullptr,
                                  saturating_sum_step, saturating_sum_final, nullptr);
  if (rc != SQLITE_OK) {
    DbError e{rc, sqlite3_errmsg(db)};
    sqlite3_close_v2(db);
    return e;
  }
  out = Db();
  out.db_ = db;
  return std::nullopt;
}

std::optional<DbError> Db::exec(std::string_view sql) {
  std::string s(sql);
  char* msg = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &msg);
  if (rc != SQLITE_OK) {
    DbError e{sqlite3_extended_errcode(db_), msg ? msg : sqlite3_errstr(rc)};
    sqlite3_free(msg);
    return e;
  }
  return std::nullopt;
}

DbError Db::last_error() const {
  return DbError{sqlite3_extended_errcode(db_), sqlite3_errmsg(db_)};
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (st_) sqlite3_finalize(st_);
    st_ = o.st_;
    db_ = o.db_;
    o.st_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() {
  if (st_) sqlite3_finalize(st_);
}

std::optional<DbError> Stmt::prepare(Db& db, std::string_view sql, Stmt& out) {
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v3(db.get(), sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &st, nullptr);
  if (rc != SQLITE_OK) return db.last_error();
  out = Stmt();
  out.st_ = st;
  out.db_ = db.get();
  return std::nullopt;
}

std::optional<DbError> Stmt::run() {
  int rc;
  while ((rc = step()) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) {
    DbError e{sqlite3_extended_errcode(db_), sqlite3_errmsg(db_)};
    sqlite3_reset(st_);
    return e;
  }
  return std::nullopt;
}

std::string Stmt::text(int c) const {
  const unsigned char* p = sqlite3_column_text(st_, c);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<std::size_t>(sqlite3_column_bytes(st_, c)));
}

}  // namespace tollgate::store::sqlite
