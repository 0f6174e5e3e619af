#include "store/sqlite/connection.hpp"

#include <optional>
#include <string>
#include <type_traits>
#include <variant>

namespace tollgate::store::sqlite {

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

StoreResult<sql::Result> SqliteConnection::run(std::string_view text, const sql::Params& params, std::string_view what) {
  std::optional<Stmt> one_off;
  Stmt* stp = nullptr;
  if (text.size() > kMaxCachedText) {
    one_off.emplace();
    if (auto e = Stmt::prepare(db_, text, *one_off)) return std::unexpected(to_store_error(*e, what));
    stp = &*one_off;
  } else {
    auto it = cache_.find(text);
    if (it == cache_.end()) {
      Stmt st;
      if (auto e = Stmt::prepare(db_, text, st)) return std::unexpected(to_store_error(*e, what));
      it = cache_.emplace(std::string(text), std::move(st)).first;
    }
    stp = &it->second;
  }
  Stmt& st = *stp;
  st.reset();
  // Text is bound without a copy: the bindings are dropped before `params` can go, on every exit.
  struct ResetOnExit {
    Stmt& st;
    ~ResetOnExit() { st.reset(); }
  } reset_on_exit{st};
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
  if (rc != SQLITE_DONE) return std::unexpected(to_store_error(db_.last_error(), what));
  out.changes = db_.changes();
  if (out.changes > 0) out.last_insert_id = sqlite3_last_insert_rowid(db_.get());
  return out;
}

StoreResult<void> SqliteConnection::script(std::string_view text, std::string_view what) {
  if (auto e = db_.exec(text)) return std::unexpected(to_store_error(*e, what));
  return {};
}

StoreResult<void> SqliteConnection::begin(sql::TxnMode mode, std::string_view what) {
  // A write transaction takes SQLite's write lock at BEGIN (waiting up to busy_timeout), so it
  // never fails half-way for a lock; `migrate` needs nothing more: the lock is per database.
  if (auto e = db_.exec(mode == sql::TxnMode::read ? "BEGIN" : "BEGIN IMMEDIATE"))
    return std::unexpected(to_store_error(*e, what));
  return {};
}

StoreResult<void> SqliteConnection::commit(std::string_view what) {
  if (auto e = db_.exec("COMMIT")) {
    rollback();  // a COMMIT that failed (busy, I/O) leaves the transaction open
    return std::unexpected(to_store_error(*e, what));
  }
  return {};
}

void SqliteConnection::rollback() noexcept {
  if (db_ && !sqlite3_get_autocommit(db_.get())) (void)db_.exec("ROLLBACK");
}

std::size_t SqliteConnection::cached_statements() const noexcept { return cache_.size(); }

}  // namespace tollgate::store::sqlite
