// SqliteConnection's statement cache: the store's short statements are prepared once and kept;
// a long text (a multi-row INSERT, one per batch size) is prepared for its one use, so batches of
// every size do not grow SQLite's memory.
#include "store/sqlite/connection.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <string>

#include "store/ledger_append.hpp"
#include "store/sql_store.hpp"
#include "store/sqlite/sqlite_memory.hpp"
#include "test_util.hpp"

namespace tollgate::store::sqlite {
namespace {

/// `INSERT INTO t (a, b) VALUES (?, ?), ...` for `rows` rows, and its parameters.
std::pair<std::string, sql::Params> insert(int rows, int& next) {
  std::string text = "INSERT INTO t (a, b) VALUES ";
  sql::Params params;
  for (int i = 0; i < rows; ++i) {
    text += i == 0 ? "(?, ?)" : ", (?, ?)";
    params.emplace_back(std::int64_t{++next});
    params.emplace_back(std::string("row-") + std::to_string(next));
  }
  return {text, params};
}

/// Opens `c` on a new database in `dir` holding the table `t (a, b)`.
void open_with_table(const testing::TempDir& dir, SqliteConnection& c) {
  ASSERT_FALSE(Db::open(dir.file("c.db"), c.db()));
  ASSERT_TRUE(c.script("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT NOT NULL)", "create"));
}

TEST(SqliteConnection, ShortStatementsAreKeptLongOnesPreparedForTheirOneUse) {
  testing::TempDir dir;
  SqliteConnection c;
  open_with_table(dir, c);
  int next = 0;
  const auto small = insert(2, next);
  ASSERT_LE(small.first.size(), SqliteConnection::kMaxCachedText);
  ASSERT_TRUE(c.run(small.first, small.second, "insert"));
  const auto kept = c.cached_statements();
  EXPECT_EQ(kept, 1u);
  const auto again = insert(2, next);
  ASSERT_TRUE(c.run(again.first, again.second, "insert"));
  EXPECT_EQ(c.cached_statements(), kept) << "the same text reuses its statement";

  const auto before = sqlite_memory_used_bytes();
  for (int rows = 300; rows < 500; ++rows) {
    const auto big = insert(rows, next);
    ASSERT_GT(big.first.size(), SqliteConnection::kMaxCachedText);
    auto r = c.run(big.first, big.second, "insert");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->changes, rows);
  }
  EXPECT_EQ(c.cached_statements(), kept) << "no long text kept";
  const auto count = c.run("SELECT COUNT(*) FROM t", {}, "count");
  ASSERT_TRUE(count);
  EXPECT_EQ(count->rows.at(0).i64(0), next);
  // 79,900 rows of ~10 bytes: what grows is the page cache (2 MB at most by default), never 200
  // statements of 300-500 rows (what the cache had kept: 120 MB and more).
  EXPECT_LT(sqlite_memory_used_bytes(), before + (4u << 20));
}

TEST(SqliteConnection, AnErrorInALongStatementIsReportedAndTheConnectionGoesOn) {
  testing::TempDir dir;
  SqliteConnection c;
  open_with_table(dir, c);
  int next = 0;
  auto big = insert(300, next);
  ASSERT_TRUE(c.run(big.first, big.second, "insert"));
  next = 0;  // the same keys again: a primary key conflict
  auto dup = insert(300, next);
  auto r = c.run(dup.first, dup.second, "insert again");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, StoreErrorCode::conflict);
  EXPECT_EQ(r.error().field, "a");
  auto ok = c.run("SELECT COUNT(*) FROM t", {}, "count");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->rows.at(0).i64(0), 300);
}

// The default VFS, counting the statement journals SQLite opens as files (a statement journal
// lives in memory until it passes 64 KiB, then spills to a temporary file through the VFS).
struct SubjournalCounter {
  static inline std::atomic<int> opened{0};
  static inline sqlite3_vfs* real = nullptr;
  sqlite3_vfs vfs{};
  static int open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
    if (flags & SQLITE_OPEN_SUBJOURNAL) ++opened;
    return real->xOpen(real, name, f, flags, out);
  }
  SubjournalCounter() {
    real = sqlite3_vfs_find(nullptr);
    vfs = *real;
    vfs.zName = "tollgate-subjournal-counter";
    vfs.xOpen = &SubjournalCounter::open;
    sqlite3_vfs_register(&vfs, 1);
  }
  ~SubjournalCounter() {
    sqlite3_vfs_unregister(&vfs);
    sqlite3_vfs_register(real, 1);
  }
};

// A multi-row INSERT in a transaction keeps no statement journal when it starts with the
// connection's insert_in_transaction(); a failing one leaves rows behind only until the caller's
// ROLLBACK, which undoes them all.
TEST(SqliteConnection, InsertsInATransactionKeepNoStatementJournalAndRollBackWhole) {
  testing::TempDir dir;
  SubjournalCounter counter;
  SqliteConnection c;
  ASSERT_FALSE(Db::open(dir.file("j.db"), c.db()));
  ASSERT_TRUE(c.script("PRAGMA journal_mode = WAL", "wal"));
  ASSERT_TRUE(c.script("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT NOT NULL CHECK (b <> 'bad')); "
                       "CREATE INDEX t_b ON t(b)",
                       "create"));
  const std::string wide(900, 'w');
  // 32 rows, each between two rows of a different existing page: a statement journal would hold
  // 32 pages and more (128 KiB), so it would spill to a file.
  auto batch = [&](std::string_view verb, int offset, bool bad_last) {
    std::string text = std::string(verb) + "t (a, b) VALUES ";
    sql::Params params;
    for (int i = 0; i < 32; ++i) {
      const int a = 2 * (32 * i + offset) + 1;
      text += i == 0 ? "(?, ?)" : ", (?, ?)";
      params.emplace_back(std::int64_t{a});
      params.emplace_back(bad_last && i == 31 ? std::string("bad") : wide + std::to_string(a));
    }
    return std::pair{text, params};
  };
  auto count = [&] { return c.run("SELECT COUNT(*) FROM t", {}, "count").value().rows.at(0).i64(0); };
  ASSERT_TRUE(c.begin(sql::TxnMode::write, "seed"));  // 1,024 rows on about 256 pages, even keys
  for (int i = 0; i < 1024; ++i)
    ASSERT_TRUE(c.run("INSERT INTO t (a, b) VALUES (?, ?)", {std::int64_t{2 * i}, wide + std::to_string(2 * i)}, "seed"));
  ASSERT_TRUE(c.commit("seed"));

  ASSERT_EQ(c.insert_in_transaction(), "INSERT OR FAIL INTO ");
  SubjournalCounter::opened = 0;
  ASSERT_TRUE(c.begin(sql::TxnMode::write, "t"));
  for (int k = 0; k < 4; ++k) {
    auto [text, params] = batch(c.insert_in_transaction(), k, false);
    ASSERT_TRUE(c.run(text, params, "fail-verb"));
  }
  ASSERT_TRUE(c.commit("t"));
  EXPECT_EQ(SubjournalCounter::opened.load(), 0);
  EXPECT_EQ(count(), 1024 + 128);

  ASSERT_TRUE(c.begin(sql::TxnMode::write, "t"));
  auto [text, params] = batch(c.insert_in_transaction(), 10, true);
  auto failed = c.run(text, params, "bad row");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, StoreErrorCode::invalid) << failed.error().message;
  EXPECT_EQ(count(), 1024 + 128 + 31) << "OR FAIL keeps the rows before the failing one...";
  c.rollback();
  EXPECT_EQ(count(), 1024 + 128) << "...until the transaction is rolled back";

  // The counter sees a journal: the same statements with the default verb spill one.
  ASSERT_TRUE(c.begin(sql::TxnMode::write, "t"));
  for (int k = 0; k < 4; ++k) {
    auto [t2, p2] = batch("INSERT INTO ", 20 + k, false);
    ASSERT_TRUE(c.run(t2, p2, "plain"));
  }
  ASSERT_TRUE(c.commit("t"));
  EXPECT_GT(SubjournalCounter::opened.load(), 0);
}

}  // namespace
}  // namespace tollgate::store::sqlite

namespace tollgate::store::sqlite {
namespace {

// On SQLite the ledger rows' seqs are computed from the last id the insert reports (no
// RETURNING): they must be the ids the rows got, whatever the table held before (a gap left by
// deleted rows, which AUTOINCREMENT never reuses) and however the batch is cut into statements.
TEST(SqliteConnection, LedgerSeqsWithoutReturningAreTheIdsTheRowsGot) {
  testing::TempDir dir;
  SqliteConnection c;
  ASSERT_FALSE(Db::open(dir.file("l.db"), c.db()));
  ASSERT_TRUE(c.consecutive_insert_ids());
  for (const auto& m : sql::migrations()) ASSERT_TRUE(c.script(m, "migrate"));
  ASSERT_TRUE(c.script("INSERT INTO ledger (seq, reservation_id, kind, amount_nanos, actual_nanos, at_ms) "
                       "VALUES (40, 1, 'reserve', 1, 0, 1); DELETE FROM ledger",
                       "gap"));
  std::vector<LedgerRecord> records;
  for (std::uint64_t i = 0; i < 87; ++i)  // cut into 64 + 16 + 4 + 1 + 1 + 1 rows
    records.push_back(LedgerRecord{.reservation_id = 100 + i / 2,
                                   .kind = i % 2 ? LedgerKind::settle : LedgerKind::reserve,
                                   .scopes = {LedgerScope{"key", "k" + std::to_string(i), 0, 0, ""}},
                                   .amount_nanos = static_cast<std::int64_t>(i),
                                   .request_id = "r" + std::to_string(i),
                                   .at_ms = 7});
  std::vector<const LedgerRecord*> ptrs;
  for (const auto& r : records) ptrs.push_back(&r);
  ASSERT_TRUE(c.begin(sql::TxnMode::write, "t"));
  auto seqs = sql::insert_ledger_rows(c, ptrs, sql::RowsPerStatement::fixed);
  ASSERT_TRUE(seqs) << seqs.error().message;
  ASSERT_TRUE(c.commit("t"));
  ASSERT_EQ(seqs->size(), records.size());
  EXPECT_EQ(seqs->front(), 41) << "after the highest id ever used";
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto row = c.run("SELECT l.reservation_id, l.kind, l.amount_nanos, l.request_id, s.scope_id FROM ledger l "
                     "JOIN ledger_scope s ON s.seq = l.seq WHERE l.seq = ?",
                     {(*seqs)[i]}, "read");
    ASSERT_TRUE(row);
    ASSERT_EQ(row->rows.size(), 1u) << i;
    EXPECT_EQ(row->rows[0].i64(0), static_cast<std::int64_t>(records[i].reservation_id));
    EXPECT_EQ(row->rows[0].text(1), i % 2 ? "settle" : "reserve");
    EXPECT_EQ(row->rows[0].i64(2), static_cast<std::int64_t>(i));
    EXPECT_EQ(row->rows[0].text(3), records[i].request_id);
    EXPECT_EQ(row->rows[0].text(4), records[i].scopes[0].id) << "the scope row is on the record's seq";
  }
}

}  // namespace
}  // namespace tollgate::store::sqlite
