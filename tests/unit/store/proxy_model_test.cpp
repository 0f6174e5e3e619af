// Models kept in the store (/model/* with general_settings.store_model_in_db): CRUD on every
// engine, and the generation counter another instance polls.
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace tollgate::store {
namespace {

ProxyModelRecord model(const std::string& id, const std::string& name = "api") {
  ProxyModelRecord m;
  m.model_id = id;
  m.model_name = name;
  m.entry = R"({"model_name":")" + name + R"(","litellm_params":{"model":"openai/gpt-4o"},"model_info":{"id":")" + id +
            "\"}}";
  return m;
}

class ProxyModelStoreTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (not_ready()) return;
    store_ = db_->open();
    ASSERT_TRUE(store_);
  }
  std::int64_t generation() {
    auto g = store_->proxy_model_generation();
    EXPECT_TRUE(g) << g.error().message;
    return g ? *g : -1;
  }
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Engines, ProxyModelStoreTest, testing::kEngines, testing::engine_name);

TEST_P(ProxyModelStoreTest, EveryMutationMovesTheGeneration) {
  EXPECT_EQ(generation(), 0);
  auto created = store_->create_proxy_model(model("m1"));
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_GT(created->created_at_ms, 0);
  EXPECT_EQ(created->updated_at_ms, created->created_at_ms);
  EXPECT_EQ(generation(), 1);

  auto changed = model("m1", "api2");
  auto updated = store_->update_proxy_model(changed);
  ASSERT_TRUE(updated) << updated.error().message;
  EXPECT_EQ(updated->created_at_ms, created->created_at_ms);
  EXPECT_EQ(generation(), 2);
  auto list = store_->list_proxy_models();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].model_name, "api2");
  EXPECT_EQ((*list)[0].entry, changed.entry);

  ASSERT_TRUE(store_->delete_proxy_model("m1"));
  EXPECT_EQ(generation(), 3);
  EXPECT_TRUE(store_->list_proxy_models()->empty());
}

TEST_P(ProxyModelStoreTest, RefusalsChangeNothing) {
  ASSERT_TRUE(store_->create_proxy_model(model("m1")));
  const auto g = generation();
  auto dup = store_->create_proxy_model(model("m1"));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, StoreErrorCode::conflict);
  auto empty = store_->create_proxy_model(model(""));
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, StoreErrorCode::invalid);
  auto missing = store_->update_proxy_model(model("nope"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, StoreErrorCode::not_found);
  auto gone = store_->delete_proxy_model("nope");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, StoreErrorCode::not_found);
  EXPECT_EQ(generation(), g);
  EXPECT_EQ(store_->list_proxy_models()->size(), 1u);
}

TEST_P(ProxyModelStoreTest, ListedOldestFirstAndSeenByASecondConnection) {
  auto a = model("b-second");
  a.created_at_ms = 2000;
  auto b = model("a-first");
  b.created_at_ms = 1000;
  ASSERT_TRUE(store_->create_proxy_model(a));
  ASSERT_TRUE(store_->create_proxy_model(b));
  auto other = db_->open();  // another instance on the same database
  ASSERT_TRUE(other);
  auto list = other->list_proxy_models();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].model_id, "a-first");
  EXPECT_EQ((*list)[1].model_id, "b-second");
  EXPECT_EQ(other->proxy_model_generation().value(), 2);
}

}  // namespace
}  // namespace tollgate::store
