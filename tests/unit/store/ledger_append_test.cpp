// sql::rows_for_statement: how a group commit's rows are cut into multi-row INSERTs. A server
// engine takes them all at once (up to a bound); an embedded one takes 64, 16, 4 or 1 at a time, so that its
// statement cache holds a few texts however the batches vary.
#include "store/ledger_append.hpp"

#include <gtest/gtest.h>

#include <set>

namespace tollgate::store::sql {
namespace {

TEST(RowsForStatement, AServerEngineTakesEverythingLeft) {
  EXPECT_EQ(rows_for_statement(0, RowsPerStatement::any, 0), 0u);
  EXPECT_EQ(rows_for_statement(1, RowsPerStatement::any, 1), 1u);
  EXPECT_EQ(rows_for_statement(513, RowsPerStatement::any, 513), 513u);
  EXPECT_EQ(rows_for_statement(513, RowsPerStatement::any, 200), 200u);  // a bound on parameters
}

TEST(RowsForStatement, AtMostTheGivenRows) {
  EXPECT_EQ(rows_for_statement(100, RowsPerStatement::fixed, 16), 16u);  // spend rows: 16 at most
  EXPECT_EQ(rows_for_statement(15, RowsPerStatement::fixed, 16), 4u);
  EXPECT_EQ(rows_for_statement(100, RowsPerStatement::fixed, 0), 1u);
  EXPECT_EQ(rows_for_statement(0, RowsPerStatement::any, 0), 0u);
}

TEST(RowsForStatement, AnEmbeddedEngineTakesAFewFixedSizesThatAddUpToTheBatch) {
  EXPECT_EQ(rows_for_statement(0, RowsPerStatement::fixed), 0u);
  EXPECT_EQ(rows_for_statement(3, RowsPerStatement::fixed), 1u);
  EXPECT_EQ(rows_for_statement(15, RowsPerStatement::fixed), 4u);
  EXPECT_EQ(rows_for_statement(63, RowsPerStatement::fixed), 16u);
  EXPECT_EQ(rows_for_statement(1000, RowsPerStatement::fixed), 64u);
  std::set<std::size_t> sizes;
  for (std::size_t batch = 1; batch <= 600; ++batch) {
    std::size_t left = batch, statements = 0;
    while (left > 0) {
      const std::size_t n = rows_for_statement(left, RowsPerStatement::fixed);
      ASSERT_GE(n, 1u);
      ASSERT_LE(n, left);
      sizes.insert(n);
      left -= n;
      ++statements;
    }
    EXPECT_LE(statements, batch / 64 + 3 + 3 + 3) << batch;  // at most 3 of each smaller size
  }
  EXPECT_EQ(sizes, (std::set<std::size_t>{1, 4, 16, 64}));
}

}  // namespace
}  // namespace tollgate::store::sql
