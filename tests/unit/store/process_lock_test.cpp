// One process per SQLite database: the serving store's lock.
#include "store/sqlite/process_lock.hpp"
#include "store/sqlite/sqlite_store.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "test_util.hpp"

namespace tollgate::store::sqlite {
namespace {

using testing::TempDir;

TEST(ProcessLock, ASecondHolderIsRefusedNamingTheFileAndThePid) {
  TempDir dir;
  const std::string db = dir.file("tg.db");
  auto first = ProcessLock::acquire(db);
  ASSERT_TRUE(first) << first.error().message;
  auto second = ProcessLock::acquire(db);  // a second open file description, as another process would hold
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, StoreErrorCode::unavailable);
  EXPECT_NE(second.error().message.find(db), std::string::npos) << second.error().message;
  EXPECT_NE(second.error().message.find("(pid " + std::to_string(::getpid()) + ")"), std::string::npos)
      << second.error().message;
  *first = ProcessLock();  // released
  EXPECT_TRUE(ProcessLock::acquire(db));
}

TEST(ProcessLock, AServingStoreHoldsItReadersDoNot) {
  TempDir dir;
  const std::string db = dir.file("tg.db");
  SqliteOptions serving;
  serving.exclusive_process = true;
  auto a = open_sqlite_store(db, serving);
  ASSERT_TRUE(a) << a.error().message;
  auto b = open_sqlite_store(db, serving);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("in use by another tollgate process"), std::string::npos) << b.error().message;
  EXPECT_TRUE(open_sqlite_store(db));  // a reader (tollgate explain) beside the gateway
  a->reset();
  EXPECT_TRUE(open_sqlite_store(db, serving));  // free again once the first store closed
}

}  // namespace
}  // namespace tollgate::store::sqlite
