#include "store/postgres/postgres_store.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

#include "core/database_url.hpp"
#include "store/postgres/pg_connection.hpp"
#include "store/sql_store.hpp"

namespace tollgate::store::postgres {
namespace {

// The bounded pool for synchronous calls plus the writer's own connection. Connections are made
// on demand up to the limit; a lost one is reconnected when next checked out.
class PgBackend final : public sql::Backend {
 public:
  PgBackend(std::string url, const PostgresOptions& o)
      : url_(std::move(url)),
        settings_{.lock_timeout_ms = o.lock_timeout_ms, .connect_timeout_s = o.connect_timeout_s},
        limit_(o.pool_limit < 1 ? 1 : o.pool_limit),
        wait_(o.pool_wait_ms),
        writer_(url_, settings_) {}

  std::optional<StoreError> connect_writer() { return writer_.ensure_connected(); }

  std::optional<StoreError> with_admin(const std::function<void(sql::Connection&)>& fn) override {
    std::unique_ptr<PgConnection> c;
    {
      std::unique_lock lk(mu_);
      const bool got = cv_.wait_for(lk, wait_, [&] { return !idle_.empty() || created_ < limit_; });
      if (!got)
        return StoreError{StoreErrorCode::unavailable,
                          "all " + std::to_string(limit_) + " database connections are busy (waited " +
                              std::to_string(wait_.count()) + " ms)",
                          {}};
      if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
      } else {
        ++created_;
      }
    }
    if (!c) c = std::make_unique<PgConnection>(url_, settings_);
    auto err = c->ensure_connected();
    if (!err) fn(*c);
    {
      std::lock_guard lk(mu_);
      idle_.push_back(std::move(c));  // a broken one reconnects on its next use
    }
    cv_.notify_one();
    return err;
  }

  std::optional<StoreError> with_writer(const std::function<void(sql::Connection&)>& fn) override {
    if (auto e = writer_.ensure_connected()) return e;
    fn(writer_);
    return std::nullopt;
  }

  std::string translate_ddl(std::string_view ddl) const override { return postgres_ddl(ddl); }
  bool one_statement_writes() const override { return true; }
  /// SUM(bigint) is numeric in PostgreSQL (it cannot overflow); the clamp makes it a BIGINT. A
  /// CASE, not LEAST/GREATEST: those skip NULL, and SUM over no rows must stay NULL.
  std::string saturating_sum(std::string_view expr) const override {
    const std::string sum = "SUM(" + std::string(expr) + ")";
    return "CAST(CASE WHEN " + sum + " > 9223372036854775807 THEN 9223372036854775807 WHEN " + sum +
           " < -9223372036854775808 THEN -9223372036854775808 ELSE " + sum + " END AS BIGINT)";
  }

 private:
  const std::string url_;
  const SessionSettings settings_;
  const int limit_;
  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_;
  int created_ = 0;
  PgConnection writer_;  // writer thread only
};

}  // namespace

StoreResult<std::unique_ptr<Store>> open_postgres_store(const std::string& url, const PostgresOptions& options) {
  auto parsed = core::parse_database_url(url);
  if (!parsed) return std::unexpected(StoreError{StoreErrorCode::invalid, parsed.error(), "database_url"});
  if (parsed->kind != core::DatabaseUrl::Kind::postgres)
    return std::unexpected(StoreError{StoreErrorCode::invalid, "not a postgresql:// URL", "database_url"});
  auto backend = std::make_unique<PgBackend>(parsed->target, options);
  if (auto e = backend->connect_writer()) return std::unexpected(*e);
  // One pool connection up front: a server that accepts the writer but not a second connection
  // (max_connections, pg_hba) fails here, at start, not on the first admin call.
  if (auto e = backend->with_admin([](sql::Connection&) {})) return std::unexpected(*e);
  return sql::open_sql_store(std::move(backend), {.max_pending_spend_rows = options.max_pending_spend_rows});
}

}  // namespace tollgate::store::postgres
