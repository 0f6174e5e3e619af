#include <gtest/gtest.h>

#include <limits>

#include "test_util.hpp"

namespace tollgate::store {
namespace {


SpendLogRow row(std::string id, std::string key, std::string user, std::string team,
                std::string group, std::int64_t start, std::int64_t spend) {
  SpendLogRow r;
  r.request_id = std::move(id);
  r.call_type = "acompletion";
  r.api_key = std::move(key);
  r.key_alias = "alias";
  r.user = std::move(user);
  r.team_id = std::move(team);
  r.organization_id = "org";
  r.end_user = "end";
  r.request_tags = {"t1", "t2"};
  r.requested_model = group;
  r.model_group = std::move(group);
  r.model = "gpt-4o-2024-08-06";
  r.model_id = "dep-1";
  r.custom_llm_provider = "openai";
  r.api_base = "https://api.openai.com/v1";
  r.attempts = R"([{"deployment":"dep-1","outcome":"success"}])";
  r.skipped_fallbacks = "[]";
  r.prompt_tokens = 10;
  r.completion_tokens = 5;
  r.cached_tokens = 2;
  r.total_tokens = 15;
  r.spend_nanos = spend;
  r.start_ms = start;
  r.end_ms = start + 100;
  r.request_duration_ms = 100;
  r.completion_start_ms = start + 20;
  r.metadata = "{}";
  return r;
}

class SpendLogTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (not_ready()) return;
    store_ = db_->open();
    ASSERT_TRUE(store_);
    store_->append_spend_log(row("r1", "k1", "alice", "ta", "gpt-4o", 1000, 100));
    store_->append_spend_log(row("r2", "k1", "alice", "ta", "claude", 2000, 300));
    store_->append_spend_log(row("r3", "k2", "bob", "tb", "gpt-4o", 3000, 50));
    SpendLogRow failed = row("r4", "k2", "bob", "", "gpt-4o", 4000, 0);
    failed.status = "failure";
    failed.error_status = "429";
    failed.priced = false;
    failed.unknown_outcome = true;
    failed.completion_start_ms.reset();
    store_->append_spend_log(failed);
    ASSERT_TRUE(store_->flush());
  }
  std::vector<std::string> ids(const SpendLogFilter& f) { return testing::spend_log_ids(*store_, f); }
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Engines, SpendLogTest, testing::kLedgerEngines, testing::engine_name);

using V = std::vector<std::string>;

TEST_P(SpendLogTest, RoundTripKeepsEveryField) {
  auto rows = store_->query_spend_logs({.request_id = "r1"});
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front(), row("r1", "k1", "alice", "ta", "gpt-4o", 1000, 100));
  auto r4 = store_->query_spend_logs({.request_id = "r4"});
  ASSERT_TRUE(r4);
  ASSERT_EQ(r4->size(), 1u);
  EXPECT_FALSE(r4->front().priced);
  EXPECT_TRUE(r4->front().unknown_outcome);
  EXPECT_FALSE(r4->front().completion_start_ms);
  EXPECT_EQ(r4->front().status, "failure");
}

TEST_P(SpendLogTest, DegradationAndDecisionRoundTrip) {
  SpendLogRow degraded = row("r5", "k1", "alice", "ta", "gpt-4o", 5000, 7);
  degraded.degradation = "reduced";
  degraded.decision =
      R"({"attempts":[{"target":"gpt-4o/dep-1","class":"retryable_capacity","action":"fallback"}],)"
      R"("skipped":[{"target":"claude","reason":"circuit_open"}],"degradation":"reduced"})";
  store_->append_spend_log(degraded);
  ASSERT_TRUE(store_->flush());
  auto got = store_->get_spend_log("r5");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, degraded);
  auto listed = store_->query_spend_logs({.request_id = "r5"});
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().decision, degraded.decision);
  // Rows without them read back empty: a full answer, no trace.
  EXPECT_EQ(store_->get_spend_log("r1").value().degradation, "");
  EXPECT_EQ(store_->get_spend_log("r1").value().decision, "");
}

TEST_P(SpendLogTest, GetSpendLogNotFoundAndInvalid) {
  auto missing = store_->get_spend_log("nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, StoreErrorCode::not_found);
  EXPECT_EQ(missing.error().field, "request_id");
  EXPECT_EQ(store_->get_spend_log("").error().code, StoreErrorCode::invalid);
  // Duplicate request ids (not expected, but not prevented): the newest row wins.
  SpendLogRow again = row("r1", "k1", "alice", "ta", "gpt-4o", 9000, 1);
  again.degradation = "stale_cache";
  store_->append_spend_log(again);
  ASSERT_TRUE(store_->flush());
  EXPECT_EQ(store_->get_spend_log("r1").value().degradation, "stale_cache");
}

TEST_P(SpendLogTest, Filters) {
  EXPECT_EQ(ids({}), (V{"r4", "r3", "r2", "r1"}));  // newest first
  EXPECT_EQ(ids({.api_key = "k1"}), (V{"r2", "r1"}));
  EXPECT_EQ(ids({.user = "bob"}), (V{"r4", "r3"}));
  EXPECT_EQ(ids({.team_id = "tb"}), (V{"r3"}));
  EXPECT_EQ(ids({.start_ms = 2000, .end_ms = 4000}), (V{"r3", "r2"}));
  EXPECT_EQ(ids({.api_key = "k2", .start_ms = 3500}), (V{"r4"}));
  EXPECT_EQ(ids({.limit = 2}), (V{"r4", "r3"}));
  EXPECT_TRUE(ids({.request_id = "nope"}).empty());
}

TEST_P(SpendLogTest, UiFiltersModelStatusDegradationOffset) {
  SpendLogRow degraded = row("r5", "k1", "alice", "ta", "gpt-4o", 5000, 7);
  degraded.degradation = "reduced";
  degraded.model = "small-model-v2";
  store_->append_spend_log(degraded);
  SpendLogRow aliased = row("r6", "k1", "alice", "ta", "big", 6000, 1);
  aliased.requested_model = "my-alias";
  store_->append_spend_log(aliased);
  ASSERT_TRUE(store_->flush());
  // model: model_group, requested_model or the served model.
  EXPECT_EQ(ids({.model = "claude"}), (V{"r2"}));
  EXPECT_EQ(ids({.model = "my-alias"}), (V{"r6"}));
  EXPECT_EQ(ids({.model = "small-model-v2"}), (V{"r5"}));
  EXPECT_EQ(ids({.model = "gpt-4o"}), (V{"r5", "r4", "r3", "r1"}));
  EXPECT_EQ(ids({.status = "failure"}), (V{"r4"}));
  EXPECT_EQ(ids({.status = "success", .limit = 2}), (V{"r6", "r5"}));
  EXPECT_EQ(ids({.degradation = "reduced"}), (V{"r5"}));
  EXPECT_EQ(ids({.degradation = "stale_cache"}), V{});
  EXPECT_EQ(ids({.degradation = ""}), (V{"r6", "r4", "r3", "r2", "r1"}));
  EXPECT_EQ(ids({.degraded = true}), (V{"r5"}));
  // Filters combine, and offset pages through the newest-first order.
  EXPECT_EQ(ids({.api_key = "k1", .model = "gpt-4o", .degradation = ""}), (V{"r1"}));
  EXPECT_EQ(ids({.limit = 2, .offset = 0}), (V{"r6", "r5"}));
  EXPECT_EQ(ids({.limit = 2, .offset = 2}), (V{"r4", "r3"}));
  EXPECT_EQ(ids({.limit = 2, .offset = 4}), (V{"r2", "r1"}));
  EXPECT_EQ(ids({.limit = 2, .offset = 6}), V{});
  // A value that looks like SQL is a value.
  EXPECT_EQ(ids({.model = "x' OR '1'='1"}), V{});
}

TEST_P(SpendLogTest, SpendTotalsGroupAndBucketInTheQuery) {
  auto totals = [&](SpendTotalsQuery q) {
    auto r = store_->query_spend_totals(q);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : std::vector<SpendTotals>{};
  };
  auto all = totals({});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].spend_nanos, 450);
  EXPECT_EQ(all[0].requests, 4);
  EXPECT_EQ(all[0].errors, 1);
  // Nothing matches: one row of zeros.
  auto none = totals({.filter = {.api_key = "nobody"}});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].requests, 0);
  EXPECT_EQ(none[0].spend_nanos, 0);

  auto groups = totals({.by = SpendGroupBy::model_group});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "claude");  // the most spent first
  EXPECT_EQ(groups[0].spend_nanos, 300);
  EXPECT_EQ(groups[1].name, "gpt-4o");
  EXPECT_EQ(groups[1].requests, 3);
  EXPECT_EQ(groups[1].errors, 1);
  auto keys = totals({.filter = {.start_ms = 1500}, .by = SpendGroupBy::api_key, .limit = 1});
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].name, "k1");
  EXPECT_EQ(keys[0].spend_nanos, 300);
  auto teams = totals({.by = SpendGroupBy::team_id});
  EXPECT_EQ(teams.size(), 3u);
  auto models = totals({.filter = {.api_key = "k2"}, .by = SpendGroupBy::model});
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "gpt-4o-2024-08-06");
  EXPECT_EQ(models[0].requests, 2);

  // Buckets of 1500 ms from 500: r1 (1000) → 0, r2 (2000) → 1, r3 (3000) → 1, r4 (4000) → 2.
  auto buckets = totals({.by = SpendGroupBy::time_bucket, .origin_ms = 500, .bucket_ms = 1500});
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].bucket, 0);
  EXPECT_EQ(buckets[0].spend_nanos, 100);
  EXPECT_EQ(buckets[1].bucket, 1);
  EXPECT_EQ(buckets[1].spend_nanos, 350);
  EXPECT_EQ(buckets[1].requests, 2);
  EXPECT_EQ(buckets[2].bucket, 2);
  EXPECT_EQ(buckets[2].errors, 1);
  // Rows before the origin are not counted; the filter still applies.
  auto late = totals({.filter = {.api_key = "k1"}, .by = SpendGroupBy::time_bucket, .origin_ms = 1500, .bucket_ms = 1000});
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].bucket, 0);
  EXPECT_EQ(late[0].spend_nanos, 300);
  auto bad = store_->query_spend_totals({.by = SpendGroupBy::time_bucket, .bucket_ms = 0});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, StoreErrorCode::invalid);
}

TEST_P(SpendLogTest, GlobalSpend) {
  auto g = store_->global_spend(std::nullopt, std::nullopt);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->total_spend_nanos, 450);
  EXPECT_EQ(g->requests, 4);
  EXPECT_EQ(g->total_tokens, 60);
  ASSERT_EQ(g->by_model_group.size(), 2u);
  EXPECT_EQ(g->by_model_group[0].name, "claude");
  EXPECT_EQ(g->by_model_group[0].spend_nanos, 300);
  EXPECT_EQ(g->by_model_group[1].name, "gpt-4o");
  EXPECT_EQ(g->by_model_group[1].spend_nanos, 150);
  EXPECT_EQ(g->by_model_group[1].requests, 3);
  ASSERT_EQ(g->by_key.size(), 2u);
  EXPECT_EQ(g->by_key[0].name, "k1");
  EXPECT_EQ(g->by_key[0].spend_nanos, 400);
  EXPECT_EQ(g->by_team.size(), 3u);  // "ta", "tb" and "" (no team)

  auto window = store_->global_spend(1500, 3500);
  ASSERT_TRUE(window);
  EXPECT_EQ(window->total_spend_nanos, 350);
  EXPECT_EQ(window->requests, 2);
}

// Rows charged at the saturation value (an upstream that reported 10^15 tokens) make totals that
// saturate instead of failing the query with an integer overflow (which read as 503 forever).
TEST_P(SpendLogTest, TotalsOfHugeChargesSaturateInsteadOfFailing) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (const char* id : {"h1", "h2", "h3"}) {
    SpendLogRow r = row(id, "k3", "carol", "tc", "gpt-4o", 5000, kMax);
    r.total_tokens = kMax;
    store_->append_spend_log(std::move(r));
  }
  ASSERT_TRUE(store_->flush());
  auto g = store_->global_spend(std::nullopt, std::nullopt);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->total_spend_nanos, kMax);
  EXPECT_EQ(g->total_tokens, kMax);
  EXPECT_EQ(g->requests, 7);
  ASSERT_FALSE(g->by_key.empty());
  EXPECT_EQ(g->by_key[0].name, "k3");
  EXPECT_EQ(g->by_key[0].spend_nanos, kMax);
  auto t = store_->query_spend_totals({.by = SpendGroupBy::api_key});
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].name, "k3");
  EXPECT_EQ((*t)[0].spend_nanos, kMax);
  EXPECT_EQ((*t)[1].spend_nanos, 400);
  auto all = store_->query_spend_totals({});
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->at(0).spend_nanos, kMax);
}

TEST_P(SpendLogTest, SpendRowsAndLedgerShareTheWriter) {
  const WriterStats st = store_->writer_stats();
  EXPECT_EQ(st.spend_rows, 4u);
  EXPECT_EQ(st.dropped_spend_rows, 0u);
}

class SpendLogBound : public testing::EngineTest {};
INSTANTIATE_TEST_SUITE_P(Engines, SpendLogBound, testing::kLedgerEngines, testing::engine_name);

TEST_P(SpendLogBound, RowsBeyondTheQueueBoundAreDroppedAndCounted) {
  auto store = db_->open({.max_pending_spend_rows = 0});
  ASSERT_TRUE(store);
  store->append_spend_log(row("x", "k", "u", "t", "g", 1, 1));
  store->flush();
  EXPECT_EQ(store->writer_stats().dropped_spend_rows, 1u);
  EXPECT_TRUE(store->query_spend_logs({}).value().empty());
}

}  // namespace
}  // namespace tollgate::store
