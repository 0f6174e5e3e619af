// The admin handlers' shared helpers: positive query integers and the store-error mapping.
#include "api/admin_context.hpp"

#include <gtest/gtest.h>

namespace tollgate::api::admin {
namespace {

TEST(PositiveQueryInt, AbsentIsTheFallbackAPositiveIntegerIsRead) {
  EXPECT_EQ(positive_query_int("/user/list", "page", 7).value(), 7);
  EXPECT_EQ(positive_query_int("/user/list?page=3&page_size=9", "page", 1).value(), 3);
  EXPECT_EQ(positive_query_int("/user/list?page=3&page_size=9", "page_size", 25).value(), 9);
}

TEST(PositiveQueryInt, ZeroNegativeTrailingGarbageAndNonNumbersAre400NamingTheParameter) {
  for (const char* target : {"/x?page=0", "/x?page=-2", "/x?page=2x", "/x?page=abc", "/x?page=",
                             "/x?page=99999999999999999999999"}) {
    auto r = positive_query_int(target, "page", 1);
    ASSERT_FALSE(r) << target;
    EXPECT_EQ(r.error().status, 400) << target;
    EXPECT_EQ(r.error().param, "page") << target;
  }
}

TEST(StoreError, EachCodeMapsToItsStatus) {
  using store::StoreErrorCode;
  EXPECT_EQ(store_error({StoreErrorCode::not_found, "x", "budget_id"}, "budget b").status, 404);
  auto conflict = store_error({StoreErrorCode::conflict, "x", "budget_id"}, "budget");
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.param, "budget_id");
  EXPECT_EQ(store_error({StoreErrorCode::invalid, "bad", "f"}, "budget").status, 400);
  EXPECT_EQ(store_error({StoreErrorCode::unavailable, "down", ""}, "budget").status, 503);
}

}  // namespace
}  // namespace tollgate::api::admin
