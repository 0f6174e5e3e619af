// What only the PostgreSQL store has: a database shared by several instances (concurrent first
// start, identity_generation seen by another instance), connections the server can drop, table
// locks held by another session, and its URL handling. Every other store test runs on Postgres
// too (the Engines/ instances of each suite).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "store/ledger_append.hpp"
#include "store/postgres/pg_connection.hpp"
#include "store/postgres/postgres_store.hpp"
#include "store/sql_store.hpp"
#include "test_util.hpp"

namespace tollgate::store {
namespace {

using testing::Engine;
using testing::TestDatabase;

class Postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    TG_REQUIRE_ENGINE(Engine::postgres);
    db_ = std::make_unique<TestDatabase>(Engine::postgres);
  }
  std::unique_ptr<TestDatabase> db_;
};

// A raw session on the test database that stays open for the test's length.
class Session {
 public:
  explicit Session(const std::string& url) : c_(PQconnectdb(url.c_str())) {
    EXPECT_EQ(PQstatus(c_), CONNECTION_OK) << PQerrorMessage(c_);
  }
  ~Session() { PQfinish(c_); }
  void exec(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    EXPECT_TRUE(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
        << sql << ": " << PQerrorMessage(c_);
    PQclear(r);
  }

 private:
  PGconn* c_;
};

using testing::append_sync;

LedgerRecord reserve(std::uint64_t id, std::int64_t amount) {
  return LedgerRecord{.reservation_id = id,
                      .kind = LedgerKind::reserve,
                      .scopes = {{"key", "k", 0}},
                      .amount_nanos = amount,
                      .at_ms = 1000};
}

TEST_F(Postgres, FreshDatabaseHasEveryTableWithBigintMoneyAndCheckedJobStates) {
  { ASSERT_TRUE(db_->open()); }
  EXPECT_EQ(db_->scalar("SELECT MAX(version) FROM schema_version"), sql::schema_version());
  EXPECT_EQ(
      db_->scalar("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN "
                  "('keys','users','teams','team_members','organizations','customers','tags',"
                  "'identity_generation','store_meta','ledger','ledger_scope','spend_logs','tollgate_jobs',"
                  "'schema_version','budgets')"),
      15);
  // Every money and time column is a 64-bit integer, nothing is floating point, and the ledger's
  // sequence numbers are generated (an identity, as SQLite's AUTOINCREMENT).
  const std::string columns = "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'public' AND ";
  struct Check {
    const char* where;
    std::int64_t expected;
  };
  for (const Check& c :
       {Check{"(column_name LIKE '%\\_nanos' OR column_name LIKE '%\\_ms') AND data_type <> 'bigint'", 0},
        Check{"column_name LIKE '%\\_nanos' AND data_type = 'bigint'", 14},  // + spend_logs.cache_saved_nanos (migration 8), budgets' max/soft (9)
        Check{"data_type IN ('real', 'double precision', 'numeric')", 0},
        Check{"table_name = 'ledger' AND column_name = 'seq' AND is_identity = 'YES'", 1}})
    EXPECT_EQ(db_->scalar(columns + c.where), c.expected) << c.where;
  PGconn* raw = PQconnectdb(db_->url().c_str());
  PGresult* r =
      PQexec(raw, "INSERT INTO tollgate_jobs (id, created_ms, updated_ms, status) VALUES ('x', 1, 1, 'paused')");
  EXPECT_EQ(PQresultStatus(r), PGRES_FATAL_ERROR);
  PQclear(r);
  PQfinish(raw);
}

// Several instances starting at once on an empty database: one migrates, the others wait on the
// advisory lock and find the schema current. Two threads and two processes.
TEST_F(Postgres, ConcurrentFirstStartsMigrateOnce) {
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto s = postgres::open_postgres_store(db_->url());
      ::_exit(s ? 0 : 3);
    }
    children.push_back(pid);
  }
  std::vector<std::future<std::string>> threads;
  for (int i = 0; i < 2; ++i)
    threads.push_back(std::async(std::launch::async, [&] {
      auto s = postgres::open_postgres_store(db_->url());
      return s ? std::string() : s.error().message;
    }));
  for (auto& t : threads) EXPECT_EQ(t.get(), "");
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_EQ(db_->scalar("SELECT COUNT(*) FROM schema_version"), sql::schema_version());
  EXPECT_EQ(db_->scalar("SELECT COUNT(*) FROM identity_generation"), 1);
}

TEST_F(Postgres, IdentityGenerationIsSharedByEveryInstance) {
  auto a = db_->open();
  auto b = db_->open();
  ASSERT_TRUE(a && b);
  const auto g0 = b->identity_generation().value();
  ASSERT_TRUE(a->create_key(KeyRecord{.token_hash = "h1", .key_alias = "shared"}));
  ASSERT_TRUE(a->create_team(TeamRecord{.team_id = "t"}));
  // b polls the counter and sees a's two mutations, then reloads and finds them.
  EXPECT_EQ(b->identity_generation().value(), g0 + 2);
  auto snap = b->load_all_identities();
  ASSERT_TRUE(snap) << snap.error().message;
  EXPECT_EQ(snap->generation, g0 + 2);
  ASSERT_EQ(snap->keys.size(), 1u);
  EXPECT_EQ(snap->keys[0].key_alias, "shared");
  // Uniqueness holds across instances.
  auto dup = b->create_key(KeyRecord{.token_hash = "h2", .key_alias = "shared"});
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, StoreErrorCode::conflict);
  EXPECT_EQ(dup.error().field, "key_alias");
  EXPECT_EQ(a->identity_generation().value(), g0 + 2);  // the failed create did not count
}

// The server drops every connection of the store (pg_terminate_backend, as a failover or an
// administrator would): the next calls reconnect, nothing is reported durable that is not.
TEST_F(Postgres, ReconnectsAfterTheServerDropsItsConnections) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create_user({.user_id = "before"}));
  ASSERT_TRUE(append_sync(*store, reserve(1, 10)));
  auto terminate = [&] {
    Session admin(db_->url());
    admin.exec(
        // With a timeout, pg_terminate_backend returns once the backend has exited (PostgreSQL 14+).
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = current_database() AND "
        "pid <> pg_backend_pid()");
  };
  terminate();
  EXPECT_TRUE(store->get_user("before")) << "a read reconnects";
  terminate();
  auto created = store->create_user({.user_id = "after"});
  EXPECT_TRUE(created) << created.error().message;
  terminate();
  EXPECT_TRUE(append_sync(*store, reserve(2, 20))) << "the writer reconnects";
  EXPECT_TRUE(store->health().writable) << store->health().last_error;
  auto ledger = store->read_ledger(0, 100);
  ASSERT_TRUE(ledger);
  EXPECT_EQ(ledger->size(), 2u);
  EXPECT_EQ(store->writer_stats().failed_ledger_records, 0u);
}

// Another session holds the ledger's and the users' table locks beyond lock_timeout: every
// record of the batch reports on_durable(false) (fail closed), health() says so, and the store
// recovers once the lock is released.
TEST_F(Postgres, LockedTablesReportNotDurableAndUnhealthyThenRecover) {
  auto store = db_->open({.lock_timeout_ms = 50});
  ASSERT_TRUE(store);
  Session other(db_->url());
  other.exec("BEGIN");
  other.exec("LOCK TABLE ledger, users IN ACCESS EXCLUSIVE MODE");
  std::atomic<int> ok{0}, bad{0};
  for (int i = 0; i < 10; ++i)
    store->append_ledger(reserve(static_cast<std::uint64_t>(i + 1), 1), [&](bool d) { (d ? ok : bad)++; });
  EXPECT_FALSE(store->flush());
  EXPECT_EQ(ok.load(), 0);
  EXPECT_EQ(bad.load(), 10);
  const StoreHealth h = store->health();
  EXPECT_FALSE(h.writable);
  EXPECT_FALSE(h.last_error.empty());
  EXPECT_EQ(store->writer_stats().failed_ledger_records, 10u);
  EXPECT_EQ(store->create_user({.user_id = "x"}).error().code, StoreErrorCode::unavailable);
  other.exec("ROLLBACK");
  EXPECT_TRUE(append_sync(*store, reserve(100, 1)));
  EXPECT_TRUE(store->health().writable);
  EXPECT_EQ(store->read_ledger(0, 100).value().size(), 1u);  // the failed records are not in the ledger
}

TEST(PostgresUrl, BadUrlsAreInvalidAnUnreachableServerIsUnavailableWithoutItsPassword) {
  auto bad = postgres::open_postgres_store("postgresql://u:p@host:notaport/db");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, StoreErrorCode::invalid);
  EXPECT_EQ(bad.error().message.find(":p@"), std::string::npos) << bad.error().message;
  EXPECT_EQ(postgres::open_postgres_store("sqlite:///tmp/x.db").error().code, StoreErrorCode::invalid);

  // A port nothing listens on (bound, never listened).
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string url = "postgres://tg:secret-pw@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/tg";
  auto down = postgres::open_postgres_store(url, {.connect_timeout_s = 2});
  ::close(fd);
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code, StoreErrorCode::unavailable);
  EXPECT_EQ(down.error().message.find("secret-pw"), std::string::npos) << down.error().message;
  EXPECT_NE(down.error().message.find("127.0.0.1"), std::string::npos) << down.error().message;
}

// A group commit on Postgres is one statement (data-modifying CTEs) in autocommit: a reserve and
// its settle in one batch keep their order, every scope lands on its own row, the batch's other
// inserts commit with it, and a failing part takes the whole batch back.
TEST_F(Postgres, OneStatementGroupCommitIsOrderedAndAtomic) {
  auto store = db_->open();
  ASSERT_TRUE(store);
  const LedgerScope key{"key", "k", 0}, team{"team", "t", 0, 86'400'000, "1d"};
  LedgerRecord r1 = reserve(1, 50), r2 = reserve(2, 70);
  r1.scopes = {key, team};
  LedgerRecord s1{.reservation_id = 1, .kind = LedgerKind::settle, .scopes = {key, team}, .amount_nanos = 50,
                  .actual_nanos = 30, .settle_kind = "actual", .at_ms = 2000};
  const std::vector<const LedgerRecord*> batch{&r1, &s1, &r2};
  const std::vector<sql::Statement> meta{{"INSERT INTO store_meta (name, value) VALUES (?, ?)", {std::string("m1"), std::string("v")}}};
  auto st = sql::one_statement_append(batch, meta, 30000);
  ASSERT_TRUE(st);
  postgres::PgConnection conn(db_->url(), {});
  auto r = conn.run_atomic(st->sql, st->params, "test");
  ASSERT_TRUE(r) << r.error().message;
  auto seqs = sql::check_returned(r->rows, batch);
  ASSERT_TRUE(seqs) << seqs.error().message;
  ASSERT_EQ(seqs->size(), 3u);
  EXPECT_LT((*seqs)[0], (*seqs)[1]);
  EXPECT_LT((*seqs)[1], (*seqs)[2]);
  auto ledger = store->read_ledger(0, 100);
  ASSERT_TRUE(ledger);
  ASSERT_EQ(ledger->size(), 3u);
  EXPECT_EQ((*ledger)[0].scopes.size(), 2u);
  EXPECT_EQ((*ledger)[1].kind, LedgerKind::settle);
  EXPECT_EQ((*ledger)[1].actual_nanos, 30);
  ASSERT_EQ((*ledger)[1].scopes.size(), 2u);
  EXPECT_EQ((*ledger)[2].reservation_id, 2u);
  ASSERT_EQ((*ledger)[2].scopes.size(), 1u);
  EXPECT_EQ(db_->scalar("SELECT COUNT(*) FROM store_meta WHERE name = 'm1'"), 1);

  // The same store_meta row again fails the statement: none of its ledger rows are kept.
  LedgerRecord r3 = reserve(3, 10);
  const std::vector<const LedgerRecord*> failing{&r3};
  auto bad = sql::one_statement_append(failing, meta, 30000);
  ASSERT_TRUE(bad);
  EXPECT_FALSE(conn.run_atomic(bad->sql, bad->params, "test"));
  EXPECT_EQ(db_->scalar("SELECT COUNT(*) FROM ledger WHERE reservation_id = 3"), 0);

  // Batches one statement cannot express fall back to the transactional path.
  LedgerRecord bare{.reservation_id = 2, .kind = LedgerKind::settle, .amount_nanos = 70, .actual_nanos = 70, .at_ms = 3000};
  EXPECT_FALSE(sql::one_statement_append({&bare}, {}, 30000)) << "a settle without scopes copies its reserve's";
  EXPECT_FALSE(sql::one_statement_append({&r1, &r1}, {}, 30000)) << "two rows with one (reservation_id, kind)";
  EXPECT_FALSE(sql::one_statement_append({&r1}, {}, 10)) << "over the parameter budget";
  EXPECT_FALSE(sql::one_statement_append({}, meta, 30000)) << "no ledger rows";
}

// Kept plans: a statement used again is prepared (same answers), a failing one stays usable, and
// a column whose type changes under a kept plan costs at most one failed call.
TEST_F(Postgres, PreparedStatementsSurviveErrorsAndSchemaChanges) {
  { ASSERT_TRUE(db_->open()); }
  postgres::PgConnection conn(db_->url(), {});
  ASSERT_TRUE(conn.run("CREATE TABLE plan_t (id BIGINT PRIMARY KEY, v BIGINT)", {}, "t"));
  for (std::int64_t i = 1; i <= 3; ++i) {
    auto r = conn.run("INSERT INTO plan_t (id, v) VALUES (?, ?)", {i, i * 10}, "t");
    ASSERT_TRUE(r) << r.error().message;
  }
  auto dup = conn.run("INSERT INTO plan_t (id, v) VALUES (?, ?)", {std::int64_t{1}, std::int64_t{0}}, "t");
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, StoreErrorCode::conflict);
  ASSERT_TRUE(conn.run("INSERT INTO plan_t (id, v) VALUES (?, ?)", {std::int64_t{4}, std::int64_t{40}}, "t"));
  for (int i = 0; i < 3; ++i) {
    auto r = conn.run("SELECT v FROM plan_t WHERE id = ?", {std::int64_t{2}}, "t");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->rows.at(0).i64(0), 20);
  }
  ASSERT_TRUE(conn.run("ALTER TABLE plan_t ALTER COLUMN v TYPE TEXT", {}, "t"));
  int failures = 0;
  for (int i = 0; i < 3; ++i) {
    auto r = conn.run("SELECT v FROM plan_t WHERE id = ?", {std::int64_t{2}}, "t");
    if (!r) {
      ++failures;
      continue;
    }
    EXPECT_EQ(r->rows.at(0).text(0), "20");
  }
  EXPECT_LE(failures, 1);
}

}  // namespace
}  // namespace tollgate::store
