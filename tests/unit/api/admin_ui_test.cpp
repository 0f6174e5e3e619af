// The admin UI's server side (docs/admin_api.md "Admin UI endpoints"): the overview's buckets,
// the routing view (api_base redaction, the fallback graph), the budget listing, and the admin
// API's per-route access (virtual keys read their own data; everything else stays master-only).
#include "api/admin_ui.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include <boost/json.hpp>

#include "api/budget_list.hpp"
#include "api/routing_view.hpp"
#include "auth/keys.hpp"
#include "config/loader.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/attempt_loop.hpp"
#include "store/sqlite/sqlite_store.hpp"

namespace tollgate::api {
namespace {
namespace json = boost::json;
using namespace std::chrono_literals;

std::shared_ptr<const config::Config> config_of(const std::string& yaml) {
  auto r = config::load_config_string(yaml, "ui.yaml", config::EnvLookup([](std::string_view) { return std::nullopt; }));
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors.front().to_string());
  return r.config;
}

// ---- overview buckets --------------------------------------------------------------------

TEST(OverviewBuckets, AlignedOnWholeBucketsAndCoveringTheEnd) {
  constexpr std::int64_t hour = 3'600'000;
  const std::int64_t start = 10 * hour + 1234, end = start + 24 * hour;
  auto p = admin::plan_buckets(start, end, hour);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->origin_ms, 10 * hour);
  EXPECT_EQ(p->count, 25);  // the first bucket starts before `start`, the last holds `end`
  auto exact = admin::plan_buckets(10 * hour, 34 * hour, hour);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->count, 24);
  EXPECT_EQ(admin::plan_buckets(0, 1, hour)->count, 1);
}

TEST(OverviewBuckets, TooManyBucketsIs400NamingBucket) {
  constexpr std::int64_t hour = 3'600'000;
  EXPECT_TRUE(admin::plan_buckets(0, 2000 * hour, hour));
  auto over = admin::plan_buckets(0, 2000 * hour + 1, hour);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().status, 400);
  EXPECT_EQ(over.error().param, "bucket");
  // The whole int64 line does not overflow into a small count.
  auto huge = admin::plan_buckets(std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), 1);
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("more than 2000"), std::string::npos);
  auto wide = admin::plan_buckets(0, std::numeric_limits<std::int64_t>::max(), hour);
  ASSERT_FALSE(wide);
  EXPECT_EQ(wide.error().param, "bucket");
}

TEST(OverviewSeries, EveryBucketPresentZerosWhereNoRows) {
  admin::BucketPlan plan{0, 3'600'000, 4};
  std::vector<store::SpendTotals> rows{{"", 1, 1'500'000'000, 3, 1}, {"", 3, 7, 1, 0}};
  auto s = admin::series_json(plan, rows);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].at("t").as_string(), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(s[0].at("requests").as_int64(), 0);
  EXPECT_EQ(s[0].at("spend"), json::value(0));
  EXPECT_EQ(s[1].at("t").as_string(), "1970-01-01T01:00:00.000Z");
  EXPECT_EQ(s[1].at("requests").as_int64(), 3);
  EXPECT_EQ(s[1].at("errors").as_int64(), 1);
  EXPECT_EQ(s[1].at("spend").as_double(), 1.5);
  EXPECT_EQ(s[2].at("requests").as_int64(), 0);
  EXPECT_EQ(s[3].at("requests").as_int64(), 1);
}

// ---- routing ------------------------------------------------------------------------------

TEST(RoutingView, ApiBaseLosesUserInfoQueryAndFragment) {
  EXPECT_EQ(redact_api_base("https://user:secret@host.example:8443/v1?api-key=abc#x"), "https://host.example:8443/v1");
  EXPECT_EQ(redact_api_base("https://host/openai/deployments?key=1"), "https://host/openai/deployments");
  EXPECT_EQ(redact_api_base("http://a@b@host"), "http://host");
  EXPECT_EQ(redact_api_base("https://api.openai.com/v1"), "https://api.openai.com/v1");
  EXPECT_EQ(redact_api_base("host:8000/path?x"), "host:8000/path");
}

constexpr const char* kRouting = R"(
model_list:
  - model_name: big
    litellm_params: {model: openai/gpt-4o, api_key: sk-upstream-SECRET, api_base: "https://u:p@east.example/v1?token=t", input_cost_per_token: 0.0000025, output_cost_per_token: 0.00001}
    model_info: {id: big-east}
  - model_name: small
    litellm_params: {model: openai/gpt-4o-mini, api_key: k, input_cost_per_token: 0, output_cost_per_token: 0}
    model_info: {id: small-1}
  - model_name: long
    litellm_params: {model: openai/some-unpriced-model-xyz, api_key: k}
    model_info: {id: long-1}
litellm_settings:
  fallbacks: [{"big": ["small"]}]
  context_window_fallbacks: [{"big": ["long"]}]
  default_fallbacks: ["long"]
fallback_policy:
  model_groups:
    small:
      classes:
        retryable_capacity: {action: fail_fast}
    big:
      degradation: {mode: reduced, model: small, max_tokens: 64}
)";

TEST(RoutingView, FallbackEdgesFollowTheClassActions) {
  auto cfg = config_of(kRouting);
  ASSERT_TRUE(cfg);
  policy::PolicySet policies(*cfg);
  auto edges = fallback_edges(*cfg, policies);
  auto find = [&](std::string from, std::string to, std::string kind) -> const FallbackEdge* {
    for (const auto& e : edges)
      if (e.from == from && e.to == to && e.kind == kind) return &e;
    return nullptr;
  };
  const auto* plain = find("big", "small", "fallbacks");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->order, 0);
  auto has = [](const FallbackEdge* e, std::string_view c) {
    return std::find(e->classes.begin(), e->classes.end(), c) != e->classes.end();
  };
  EXPECT_TRUE(has(plain, "retryable_capacity"));
  EXPECT_TRUE(has(plain, "transient_provider_error"));
  EXPECT_FALSE(has(plain, "caller_fix_required"));  // fail_fast: nothing goes along any edge
  EXPECT_FALSE(has(plain, "context_overflow"));     // that class has its own list
  const auto* dflt = find("big", "long", "default_fallbacks");
  ASSERT_NE(dflt, nullptr);
  EXPECT_EQ(dflt->order, 1);
  const auto* ctx = find("big", "long", "context_window_fallbacks");
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->classes, std::vector<std::string>{"context_overflow"});
  // small's policy: capacity errors fail fast, so they never reach its default fallback.
  const auto* small = find("small", "long", "default_fallbacks");
  ASSERT_NE(small, nullptr);
  EXPECT_FALSE(has(small, "retryable_capacity"));
  EXPECT_TRUE(has(small, "transient_provider_error"));
  EXPECT_EQ(find("long", "long", "default_fallbacks"), nullptr);  // never to itself
  // big's degradation mode answers with small: every class that may end in it, not context overflow.
  const auto* degrade = find("big", "small", "degradation");
  ASSERT_NE(degrade, nullptr);
  EXPECT_EQ(degrade->mode, "reduced");
  EXPECT_TRUE(has(degrade, "retryable_capacity"));
  EXPECT_FALSE(has(degrade, "context_overflow"));
  EXPECT_FALSE(has(degrade, "caller_fix_required"));
  EXPECT_FALSE(has(degrade, "commercial_limit"));
  EXPECT_EQ(find("small", "small", "degradation"), nullptr);
}

TEST(RoutingView, DeploymentsShowPriceCircuitAndNoSecret) {
  core::ManualClock clock;
  auto services = pipeline::Services::make(config_of(kRouting), clock);
  services->circuits->on_failure(0, config::FailureClass::retryable_capacity);
  const auto o = routing_json(*services->config, services->prices, *services->policies, services->circuits->snapshot());
  const auto text = json::serialize(o);
  EXPECT_EQ(text.find("SECRET"), std::string::npos);
  EXPECT_EQ(text.find("token=t"), std::string::npos);
  EXPECT_EQ(text.find("u:p"), std::string::npos);
  const auto& groups = o.at("model_groups").as_array();
  ASSERT_EQ(groups.size(), 3u);
  const auto& big = groups[0].at("deployments").as_array()[0].as_object();
  EXPECT_EQ(big.at("id").as_string(), "big-east");
  EXPECT_EQ(big.at("provider").as_string(), "openai");
  EXPECT_EQ(big.at("model").as_string(), "gpt-4o");
  EXPECT_EQ(big.at("api_base").as_string(), "https://east.example/v1");
  EXPECT_EQ(big.at("input_cost_per_token").as_double(), 0.0000025);
  EXPECT_TRUE(big.at("priced").as_bool());
  EXPECT_FALSE(big.at("free").as_bool());
  EXPECT_TRUE(big.at("circuit").at("state").is_string());
  const auto& small = groups[1].at("deployments").as_array()[0].as_object();
  EXPECT_TRUE(small.at("free").as_bool());
  EXPECT_TRUE(small.at("api_base").is_null());
  const auto& unpriced = groups[2].at("deployments").as_array()[0].as_object();
  EXPECT_FALSE(unpriced.at("priced").as_bool());
  EXPECT_TRUE(unpriced.at("input_cost_per_token").is_null());
  EXPECT_FALSE(o.at("fallbacks").as_array().empty());
}

// ---- budgets ------------------------------------------------------------------------------

constexpr const char* kBudgets = R"(
model_list:
  - model_name: big
    litellm_params: {model: openai/gpt-4o, api_key: k}
litellm_settings:
  max_budget: 100
  budget_duration: 30d
)";

store::KeyRecord key(std::string hash, std::string alias, std::optional<std::int64_t> max) {
  store::KeyRecord k;
  k.token_hash = std::move(hash);
  k.key_alias = std::move(alias);
  k.max_budget_nanos = max;
  return k;
}

struct BudgetFixture : testing::Test {
  void SetUp() override {
    cfg = config_of(kBudgets);
    store::IdentitySnapshot s;
    auto a = key("hash-a", "alpha", 1'000'000'000);  // $1
    a.team_id = "t1";
    a.budget_duration = "1d";
    a.model_max_budget = R"({"big": {"max_budget": 0.5}})";
    a.tags = {"search"};
    s.keys.push_back(a);
    s.keys.push_back(key("hash-b", "", std::nullopt));  // no budget of its own
    store::TeamRecord t;
    t.team_id = "t1";
    t.team_alias = "Search team";
    t.max_budget_nanos = 10'000'000'000;
    s.teams.push_back(t);
    store::TeamRecord lonely;
    lonely.team_id = "t2";
    lonely.max_budget_nanos = 2'000'000'000;
    s.teams.push_back(lonely);
    store::TagRecord tag;
    tag.name = "search";
    tag.max_budget_nanos = 4'000'000'000;
    s.tags.push_back(tag);
    index = auth::IdentityIndex::build(std::move(s));
  }
  const BudgetRow* find(const std::vector<BudgetRow>& rows, budget::ScopeKind kind, std::string id) {
    for (const auto& r : rows)
      if (r.scope.kind == kind && r.scope.id == id) return &r;
    return nullptr;
  }
  std::shared_ptr<const config::Config> cfg;
  std::shared_ptr<const auth::IdentityIndex> index;
  budget::Ledger ledger;
  budget::SystemTime now = std::chrono::system_clock::now();
};

TEST_F(BudgetFixture, EveryEnforcedScopeWithLedgerFiguresSortedByUse) {
  // $0.6 spent and $0.2 reserved on key alpha (and every scope admission applies with it).
  auto p = auth::principal_of_key(*index, index->key("hash-a"));
  auto bound = auth::with_request(p, *index, "", {});
  ASSERT_TRUE(bound);
  const auto scopes = pipeline::applicable_scopes(**bound, "", *cfg);
  auto spent = ledger.reserve(scopes, 600'000'000, now);
  ASSERT_TRUE(spent);
  ledger.settle(std::move(*spent), 600'000'000, budget::SettleKind::actual, now);
  auto held = ledger.reserve(scopes, 200'000'000, now);
  ASSERT_TRUE(held);

  const auto rows = list_budgets(*index, *cfg, ledger, &ledger, nullptr, now);
  const auto* k = find(rows, budget::ScopeKind::key, "hash-a");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "alpha");
  EXPECT_EQ(k->max_budget, 1'000'000'000);
  EXPECT_EQ(k->spend, 600'000'000);
  EXPECT_EQ(k->reserved, 200'000'000);
  EXPECT_EQ(k->budget_duration, "1d");
  EXPECT_TRUE(k->reset_at_ms);
  EXPECT_DOUBLE_EQ(k->used_ratio, 0.8);
  EXPECT_EQ(rows.front().scope.id, "hash-a");  // the most used first
  const auto* team = find(rows, budget::ScopeKind::team, "t1");
  ASSERT_NE(team, nullptr);
  EXPECT_EQ(team->name, "Search team");
  EXPECT_EQ(team->reserved, 200'000'000);
  EXPECT_NE(find(rows, budget::ScopeKind::team, "t2"), nullptr);  // a team no key reaches
  EXPECT_NE(find(rows, budget::ScopeKind::tag, "search"), nullptr);
  EXPECT_NE(find(rows, budget::ScopeKind::global, "global"), nullptr);
  const auto* per_model = find(rows, budget::ScopeKind::key_model, "hash-a/big");
  ASSERT_NE(per_model, nullptr);
  EXPECT_EQ(per_model->name, "alpha big");
  EXPECT_EQ(per_model->max_budget, 500'000'000);
  EXPECT_EQ(find(rows, budget::ScopeKind::key, "hash-b"), nullptr);  // tracked only: no budget
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].used_ratio, rows[i].used_ratio);
  ledger.settle(std::move(*held), 0, budget::SettleKind::no_usage, now);

  const auto o = budget_row_json(*k);
  EXPECT_EQ(o.at("scope").as_string(), "key");
  EXPECT_EQ(o.at("spend").as_double(), 0.6);
  EXPECT_EQ(o.at("reserved").as_double(), 0.2);
  EXPECT_EQ(o.at("max_budget"), json::value(1));
  EXPECT_TRUE(o.at("budget_reset_at").is_string());
}

TEST_F(BudgetFixture, AVirtualKeySeesOnlyTheBudgetsAppliedToIt) {
  auto b = auth::principal_of_key(*index, index->key("hash-b"));
  const auto rows = list_budgets(*index, *cfg, ledger, &ledger, b.get(), now);
  ASSERT_EQ(rows.size(), 1u);  // only the global budget applies to key b
  EXPECT_EQ(rows[0].scope.kind, budget::ScopeKind::global);
  auto a = auth::principal_of_key(*index, index->key("hash-a"));
  const auto mine = list_budgets(*index, *cfg, ledger, &ledger, a.get(), now);
  EXPECT_NE(find(mine, budget::ScopeKind::team, "t1"), nullptr);
  EXPECT_NE(find(mine, budget::ScopeKind::tag, "search"), nullptr);
  EXPECT_EQ(find(mine, budget::ScopeKind::team, "t2"), nullptr);
}

// ---- access: the admin API per route ------------------------------------------------------

constexpr const char* kMaster = "sk-master-ui-test";

class AdminAccess : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tg_admin_ui_" + std::to_string(::getpid()) + "_" +
                                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto s = store::sqlite::open_sqlite_store((dir_ / "t.db").string());
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::shared_ptr<store::Store>(std::move(*s));
    auto own = key(auth::sha256_hex(kOwn), "own", std::nullopt);
    own.models = {"big"};
    own.team_id = "";
    ASSERT_TRUE(store_->create_key(own));
    ASSERT_TRUE(store_->create_key(key(auth::sha256_hex(kOther), "other", std::nullopt)));
    auto blocked = key(auth::sha256_hex(kBlocked), "blocked", std::nullopt);
    blocked.blocked = true;
    ASSERT_TRUE(store_->create_key(blocked));
    store::SpendLogRow r;
    r.request_id = "mine";
    r.api_key = auth::sha256_hex(kOwn);
    r.model_group = "big";
    r.start_ms = 1000;
    store_->append_spend_log(r);
    r.request_id = "theirs";
    r.api_key = auth::sha256_hex(kOther);
    store_->append_spend_log(r);
    ASSERT_TRUE(store_->flush());
    identities_ = std::make_shared<auth::Identities>();
    ASSERT_TRUE(identities_->reload(*store_));
    AdminDeps d;
    d.config = config_of(std::string(kBudgets) + "general_settings: {master_key: " + kMaster + "}\n");
    d.store = store_;
    d.identities = identities_;
    admin_ = std::make_unique<Admin>(std::move(d));
  }
  void TearDown() override {
    admin_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  http::Response call(std::string target, std::string_view key, bool post = false, std::string body = "{}") {
    http::Request req{post ? boost::beast::http::verb::post : boost::beast::http::verb::get, target, 11};
    if (!key.empty()) req.set(boost::beast::http::field::authorization, "Bearer " + std::string(key));
    if (post) req.body() = body;
    req.prepare_payload();
    return admin_->handle(req);
  }
  static json::value body(const http::Response& r) { return json::parse(r.body()); }

  static constexpr const char* kOwn = "sk-own-key-0123456789abcdef";
  static constexpr const char* kOther = "sk-other-key-0123456789abcdef";
  static constexpr const char* kBlocked = "sk-blocked-key-0123456789abcdef";
  std::filesystem::path dir_;
  std::shared_ptr<store::Store> store_;
  std::shared_ptr<auth::Identities> identities_;
  std::unique_ptr<Admin> admin_;
};

TEST_F(AdminAccess, WhoamiForMasterKeyAndBlockedKey) {
  auto m = call("/tollgate/whoami", kMaster);
  ASSERT_EQ(m.result_int(), 200) << m.body();
  EXPECT_EQ(body(m).at("role").as_string(), "master");
  EXPECT_TRUE(body(m).at("token").is_null());
  auto k = call("/tollgate/whoami", kOwn);
  ASSERT_EQ(k.result_int(), 200) << k.body();
  EXPECT_EQ(body(k).at("role").as_string(), "key");
  EXPECT_EQ(body(k).at("token").as_string(), auth::sha256_hex(kOwn));
  EXPECT_EQ(body(k).at("key_alias").as_string(), "own");
  EXPECT_TRUE(body(k).at("team_id").is_null());
  EXPECT_EQ(body(k).at("models").as_array().size(), 1u);
  EXPECT_FALSE(body(k).at("blocked").as_bool());
  auto b = call("/tollgate/whoami", kBlocked);
  ASSERT_EQ(b.result_int(), 200) << b.body();
  EXPECT_TRUE(body(b).at("blocked").as_bool());
  EXPECT_EQ(call("/tollgate/whoami", "").result_int(), 401);
  EXPECT_EQ(call("/tollgate/whoami", "sk-unknown-0123456789").result_int(), 401);
}

TEST_F(AdminAccess, VirtualKeysReadTheirOwnDataOnly) {
  EXPECT_EQ(call("/key/info", kOwn).result_int(), 200);
  auto own = call(std::string("/key/info?key=") + kOwn, kOwn);
  ASSERT_EQ(own.result_int(), 200) << own.body();
  EXPECT_EQ(body(own).at("key").as_string(), auth::sha256_hex(kOwn));
  auto other = call(std::string("/key/info?key=") + kOther, kOwn);
  EXPECT_EQ(other.result_int(), 403) << other.body();
  EXPECT_EQ(body(other).at("error").at("param").as_string(), "key");
  EXPECT_EQ(call("/key/info?key=sk-nonexistent-123", kOwn).result_int(), 403);  // no probing for keys
  EXPECT_EQ(call(std::string("/key/info?key=") + kOther, kMaster).result_int(), 200);

  // Spend logs: forced to the caller's own key, whatever it asks.
  auto logs = call(std::string("/spend/logs?api_key=") + kOther, kOwn);
  ASSERT_EQ(logs.result_int(), 200) << logs.body();
  ASSERT_EQ(body(logs).as_array().size(), 1u);
  EXPECT_EQ(body(logs).as_array()[0].at("request_id").as_string(), "mine");
  EXPECT_EQ(body(call("/spend/logs", kMaster)).as_array().size(), 2u);

  // A blocked key reads nothing but whoami.
  EXPECT_EQ(call("/key/info", kBlocked).result_int(), 401);
  EXPECT_EQ(call("/spend/logs", kBlocked).result_int(), 401);
}

TEST_F(AdminAccess, EveryOtherRouteAndEveryWriteStaysMasterOnly) {
  for (const char* path : {"/key/list", "/spend/keys", "/global/spend", "/team/list", "/user/list", "/tollgate/routing"}) {
    auto r = call(path, kOwn);
    EXPECT_EQ(r.result_int(), 403) << path << " " << r.body();
    EXPECT_EQ(body(r).at("error").at("message").as_string(), "the master key is required") << path;
    EXPECT_EQ(call(path, "").result_int(), 401) << path;
    EXPECT_EQ(call(path, "sk-unknown-0123456789").result_int(), 401) << path;
  }
  auto write = call("/key/generate", kOwn, true, R"({"key_alias":"mine2"})");
  EXPECT_EQ(write.result_int(), 403) << write.body();
  EXPECT_EQ(call("/key/block", kOwn, true, std::string(R"({"key":")") + kOther + "\"}").result_int(), 403);
  EXPECT_EQ(call("/tollgate/simulate", kOwn, true, R"({"scenario":"requests: []"})").result_int(), 403);
}

TEST_F(AdminAccess, SpendLogFiltersAreCheckedAndNamed) {
  for (auto [target, param] : {std::pair{"/spend/logs?status=ok", "status"}, {"/spend/logs?degradation=partial", "degradation"},
                               {"/spend/logs?offset=-1", "offset"}, {"/spend/logs?offset=x", "offset"},
                               {"/spend/logs?limit=0", "limit"}, {"/spend/logs?start_date=yesterday", "start_date"}}) {
    auto r = call(target, kMaster);
    EXPECT_EQ(r.result_int(), 400) << target << " " << r.body();
    EXPECT_EQ(body(r).at("error").at("param").as_string(), param) << target;
  }
  EXPECT_EQ(body(call("/spend/logs?status=success&degradation=none&model=big&offset=1", kMaster)).as_array().size(), 1u);
  EXPECT_EQ(body(call("/spend/logs?degradation=any", kMaster)).as_array().size(), 0u);
}

TEST_F(AdminAccess, OverviewRestrictsAVirtualKeyToItsRows) {
  auto m = call("/tollgate/overview?start_date=1970-01-01T00:00:00Z&end_date=1970-01-01T03:00:00Z", kMaster);
  ASSERT_EQ(m.result_int(), 200) << m.body();
  const auto mo = body(m).as_object();
  EXPECT_EQ(mo.at("series").as_array().size(), 3u);
  EXPECT_EQ(mo.at("series").as_array()[0].at("requests").as_int64(), 2);
  EXPECT_EQ(mo.at("top_keys").as_array().size(), 2u);
  EXPECT_EQ(mo.at("by_model_group").as_array()[0].at("requests").as_int64(), 2);
  auto k = call("/tollgate/overview?start_date=1970-01-01T00:00:00Z&end_date=1970-01-01T03:00:00Z", kOwn);
  ASSERT_EQ(k.result_int(), 200) << k.body();
  const auto ko = body(k).as_object();
  EXPECT_EQ(ko.at("series").as_array()[0].at("requests").as_int64(), 1);
  ASSERT_EQ(ko.at("top_keys").as_array().size(), 1u);
  EXPECT_EQ(ko.at("top_keys").as_array()[0].at("key_alias").as_string(), "own");
  EXPECT_TRUE(ko.at("alerts").as_array().empty());
  for (auto [target, param] : {std::pair{"/tollgate/overview?bucket=week", "bucket"},
                               {"/tollgate/overview?start_date=1970-01-01&end_date=1990-01-01", "bucket"},
                               {"/tollgate/overview?start_date=2020-01-02&end_date=2020-01-01T00:00:00Z", "end_date"},
                               {"/tollgate/overview?end_date=never", "end_date"}}) {
    auto r = call(target, kMaster);
    EXPECT_EQ(r.result_int(), 400) << target << " " << r.body();
    EXPECT_EQ(body(r).at("error").at("param").as_string(), param) << target;
  }
  EXPECT_EQ(call("/tollgate/overview?start_date=1970-01-01&end_date=1975-01-01&bucket=day", kMaster).result_int(), 200);
}

}  // namespace
}  // namespace tollgate::api
