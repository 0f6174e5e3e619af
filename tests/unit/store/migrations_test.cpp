#include <gtest/gtest.h>
#include <sqlite3.h>

#include "store/sqlite/sqlite_store.hpp"
#include "test_util.hpp"

namespace tollgate::store {
namespace {

using testing::TempDir;
using testing::open_or_die;

int64_t scalar(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  int64_t v = -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

TEST(SqliteUrl, AcceptsUrlsPathsAndMemory) {
  EXPECT_EQ(sqlite::sqlite_path_from_url("sqlite:///var/lib/tg.db").value(), "/var/lib/tg.db");
  EXPECT_EQ(sqlite::sqlite_path_from_url("sqlite://data/tg.db").value(), "data/tg.db");
  EXPECT_EQ(sqlite::sqlite_path_from_url("./x/tg.db").value(), "./x/tg.db");
  EXPECT_EQ(sqlite::sqlite_path_from_url(":memory:").value(), ":memory:");
  EXPECT_EQ(sqlite::sqlite_path_from_url("sqlite://:memory:").value(), ":memory:");
  auto pg = sqlite::sqlite_path_from_url("postgresql://u@h/db");
  ASSERT_FALSE(pg);
  EXPECT_EQ(pg.error().code, StoreErrorCode::invalid);
  EXPECT_FALSE(sqlite::sqlite_path_from_url("sqlite://"));
}

TEST(Migrations, FreshDatabaseIsCreatedWithParentDirectoryAndWal) {
  TempDir dir;
  const std::string path = dir.file("nested/deeper/tollgate.db");
  {
    auto store = open_or_die("sqlite://" + path);
    ASSERT_TRUE(store);
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(scalar(path, "SELECT MAX(version) FROM schema_version"), sqlite::sqlite_schema_version());
  EXPECT_EQ(scalar(path, "SELECT COUNT(*) FROM schema_version"), sqlite::sqlite_schema_version());
  EXPECT_EQ(scalar(path, "SELECT COUNT(*) FROM sqlite_master WHERE name IN "
                         "('keys','users','teams','team_members','organizations','customers',"
                         "'ledger','ledger_scope','spend_logs')"),
            9);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(Migrations, FreshDatabaseHasJobsAndSpendLogDecisionColumns) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  { ASSERT_TRUE(open_or_die(path)); }
  EXPECT_GE(sqlite::sqlite_schema_version(), 3);
  EXPECT_EQ(scalar(path, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'tollgate_jobs'"), 1);
  EXPECT_EQ(scalar(path, "SELECT COUNT(*) FROM pragma_table_info('tollgate_jobs') WHERE name IN "
                         "('id','created_ms','updated_ms','status','model_group','call_type','api_key',"
                         "'request_body','result','error','attempts','request_id')"),
            12);
  EXPECT_EQ(scalar(path, "SELECT COUNT(*) FROM pragma_table_info('spend_logs') WHERE name IN "
                         "('degradation','decision')"),
            2);
  // The status column refuses anything but the four states, also for raw SQL.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "INSERT INTO tollgate_jobs (id, created_ms, updated_ms, status) "
                             "VALUES ('x', 1, 1, 'paused')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

static_assert(sqlite::kNewDatabasePageSize != 4096, "SQLite's default: the test below would prove nothing");

TEST(Migrations, AFreshDatabaseTakesTheStoresPageSizeAnOlderOneKeepsItsOwn) {
  TempDir dir;
  const std::string fresh = dir.file("fresh.db");
  { ASSERT_TRUE(open_or_die(fresh)); }
  EXPECT_EQ(scalar(fresh, "PRAGMA page_size"), sqlite::kNewDatabasePageSize);

  // A file created with SQLite's default page size, as builds before step 26 created them.
  const std::string older = dir.file("older.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(older.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE t (x)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    auto store = open_or_die(older);
    ASSERT_TRUE(store);
    store->append_spend_log(SpendLogRow{.request_id = "r-1", .spend_nanos = 7});
    bool durable = false;
    store->append_ledger(LedgerRecord{.reservation_id = 1, .amount_nanos = 5}, [&](bool d) { durable = d; });
    ASSERT_TRUE(store->flush());
    EXPECT_TRUE(durable);
    EXPECT_EQ(store->get_spend_log("r-1").value().spend_nanos, 7);
  }
  EXPECT_EQ(scalar(older, "PRAGMA page_size"), 4096);
  EXPECT_EQ(scalar(older, "SELECT MAX(version) FROM schema_version"), sqlite::sqlite_schema_version());
}

TEST(Migrations, AVersion2DatabaseIsUpgradedKeepingItsRows) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  {
    auto store = open_or_die(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->create_user({.user_id = "alice"}));
    ASSERT_TRUE(store->create_tag({.name = "eu"}));
    store->append_spend_log(SpendLogRow{.request_id = "old-1", .spend_nanos = 42, .start_ms = 1000});
    bool durable = false;
    store->append_ledger(LedgerRecord{.reservation_id = 7, .amount_nanos = 5}, [&](bool d) { durable = d; });
    ASSERT_TRUE(store->flush());
    ASSERT_TRUE(durable);
  }
  testing::downgrade_to(path, 2);  // as the version-2 binary left it
  ASSERT_EQ(scalar(path, "SELECT MAX(version) FROM schema_version"), 2);
  ASSERT_EQ(scalar(path, "SELECT COUNT(*) FROM pragma_table_info('spend_logs') WHERE name = 'decision'"), 0);

  auto store = open_or_die(path);
  ASSERT_TRUE(store);
  EXPECT_EQ(scalar(path, "SELECT MAX(version) FROM schema_version"), sqlite::sqlite_schema_version());
  EXPECT_TRUE(store->get_user("alice"));
  EXPECT_TRUE(store->get_tag("eu"));
  EXPECT_EQ(store->read_ledger().value().size(), 1u);
  auto old = store->get_spend_log("old-1");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->spend_nanos, 42);
  EXPECT_EQ(old->degradation, "");  // rows written before the migration: full answer, no trace
  EXPECT_EQ(old->decision, "");
  // The new objects work on the upgraded file.
  ASSERT_TRUE(store->create_job({.id = "job-1", .created_ms = 5}));
  EXPECT_EQ(store->list_jobs(std::nullopt, 10).value().size(), 1u);
  store->append_spend_log(SpendLogRow{.request_id = "new-1", .degradation = "reduced", .decision = "{}"});
  ASSERT_TRUE(store->flush());
  EXPECT_EQ(store->get_spend_log("new-1").value().degradation, "reduced");
}

// Migration 10: the spend log's user and team indexes hold only the rows that name one; rows
// written before are still found by user and team, through the index.
TEST(Migrations, AVersion9DatabaseGetsPartialUserAndTeamIndexesTheQueriesUse) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  {
    auto store = open_or_die(path);
    ASSERT_TRUE(store);
    store->append_spend_log(SpendLogRow{.request_id = "old-bob", .user = "bob", .team_id = "tb", .start_ms = 1000});
    store->append_spend_log(SpendLogRow{.request_id = "old-none", .start_ms = 1001});
    ASSERT_TRUE(store->flush());
  }
  testing::downgrade_to(path, 9);
  auto indexed = [&](const char* index) {
    return scalar(path, std::string("SELECT COUNT(*) FROM pragma_index_info('") + index + "')") > 0
               ? scalar(path, std::string("SELECT partial FROM pragma_index_list('spend_logs') WHERE name = '") + index + "'")
               : -1;
  };
  ASSERT_EQ(indexed("spend_logs_user"), 0) << "a version-9 index holds every row";
  auto store = open_or_die(path);
  ASSERT_TRUE(store);
  EXPECT_EQ(indexed("spend_logs_user"), 1);
  EXPECT_EQ(indexed("spend_logs_team"), 1);
  EXPECT_EQ(scalar(path, "SELECT COUNT(*) FROM spend_logs INDEXED BY spend_logs_user WHERE \"user\" <> ''"), 1);
  store->append_spend_log(SpendLogRow{.request_id = "new-bob", .user = "bob", .start_ms = 2000});
  store->append_spend_log(SpendLogRow{.request_id = "new-none", .start_ms = 2001});
  ASSERT_TRUE(store->flush());
  auto ids = [&](const SpendLogFilter& f) { return testing::spend_log_ids(*store, f); };
  EXPECT_EQ(ids({.user = "bob"}), (std::vector<std::string>{"new-bob", "old-bob"}));
  EXPECT_EQ(ids({.team_id = "tb"}), (std::vector<std::string>{"old-bob"}));
  EXPECT_EQ(ids({.user = ""}), (std::vector<std::string>{"new-none", "old-none"})) << "no index, still answered";
  // The planner takes the index for the query the store sends (its WHERE repeats the condition).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "EXPLAIN QUERY PLAN SELECT id FROM spend_logs WHERE \"user\" = ?1 AND \"user\" <> '' "
                               "ORDER BY start_ms DESC",
                               -1, &st, nullptr),
            SQLITE_OK);
  std::string plan;
  while (sqlite3_step(st) == SQLITE_ROW) plan += reinterpret_cast<const char*>(sqlite3_column_text(st, 3)) + std::string("\n");
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_NE(plan.find("spend_logs_user"), std::string::npos) << plan;
}

TEST(Migrations, AVersion4DatabaseGetsJobClaimsAndARunningJobIsClaimableAgain) {
  TempDir dir;
  const std::string path = dir.file("tg.db");
  {
    auto store = open_or_die(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->create_job({.id = "left-running", .created_ms = 5, .status = "running", .api_key = "k"}));
    ASSERT_TRUE(store->create_job({.id = "queued", .created_ms = 6, .api_key = "k"}));
  }
  testing::downgrade_to(path, 4);  // as the version-4 binary left it
  ASSERT_EQ(scalar(path, "SELECT COUNT(*) FROM pragma_table_info('tollgate_jobs') WHERE name = 'claimed_by'"), 0);
  auto store = open_or_die(path);
  ASSERT_TRUE(store);
  EXPECT_EQ(scalar(path, "SELECT MAX(version) FROM schema_version"), sqlite::sqlite_schema_version());
  EXPECT_EQ(scalar(path, "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('tollgate_jobs_key','tollgate_jobs_finished')"), 2);
  EXPECT_EQ(store->count_active_jobs("k").value(), 2);
  // The old binary's running job has no claim: the first runner to look takes it.
  auto claimed = store->claim_job("left-running", "new", 1000, 30000);
  ASSERT_TRUE(claimed) << claimed.error().message;
  ASSERT_TRUE(*claimed);
  EXPECT_EQ((*claimed)->claimed_by, "new");
  EXPECT_TRUE(store->claim_job("queued", "new", 1000, 30000).value());
}

// Every engine: reopening migrates nothing and keeps the data; a newer schema is refused.
class MigrationsOnEngine : public testing::EngineTest {};
INSTANTIATE_TEST_SUITE_P(Engines, MigrationsOnEngine, testing::kEngines, testing::engine_name);

TEST_P(MigrationsOnEngine, ReopenIsIdempotentAndKeepsData) {
  {
    auto store = db_->open();
    ASSERT_TRUE(store);
    UserRecord u;
    u.user_id = "alice";
    ASSERT_TRUE(store->create_user(u));
  }
  for (int i = 0; i < 2; ++i) {
    // SQLite: also through its sqlite:/// URL form.
    auto store = GetParam() == testing::Engine::sqlite ? open_or_die("sqlite:///" + db_->url().substr(1)) : db_->open();
    ASSERT_TRUE(store);
    EXPECT_TRUE(store->get_user("alice"));
  }
  EXPECT_EQ(db_->scalar("SELECT COUNT(*) FROM schema_version"), sqlite::sqlite_schema_version());
}

TEST_P(MigrationsOnEngine, RefusesDatabaseFromNewerBinary) {
  { ASSERT_TRUE(db_->open()); }
  db_->exec("INSERT INTO schema_version (version, applied_at_ms) VALUES (" +
            std::to_string(sqlite::sqlite_schema_version() + 1) + ", 0)");
  auto s = db_->try_open();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, StoreErrorCode::invalid);
  EXPECT_NE(s.error().message.find("newer"), std::string::npos) << s.error().message;
}

TEST(Migrations, UncreatableDirectoryIsUnavailableNotACrash) {
  auto s = sqlite::open_sqlite_store("/proc/tollgate-no-such/dir/tg.db");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, StoreErrorCode::unavailable);
}

TEST(Migrations, MemoryStoreWorks) {
  auto store = open_or_die(":memory:");
  ASSERT_TRUE(store);
  CustomerRecord c;
  c.user_id = "end-1";
  ASSERT_TRUE(store->create_customer(c));
  EXPECT_TRUE(store->get_customer("end-1"));
  bool ok = false;
  store->append_ledger(LedgerRecord{.reservation_id = 1, .amount_nanos = 5}, [&](bool d) { ok = d; });
  EXPECT_TRUE(store->flush());
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace tollgate::store
