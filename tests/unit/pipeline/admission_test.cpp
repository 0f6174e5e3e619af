#include "pipeline/admission.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "budget/scope.hpp"
#include "budget/token_bounds.hpp"
#include "pipeline/output_bound.hpp"
#include "config/loader.hpp"

using namespace tollgate;
using budget::ScopeKind;

namespace {

std::shared_ptr<const config::Config> load(const std::string& yaml) {
  auto r = config::load_config_string(
      yaml, "<test>", config::EnvLookup([](std::string_view) -> std::optional<std::string> { return std::nullopt; }));
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.config;
}

const char* kConfig = R"(
model_list:
  - model_name: paid
    litellm_params: {model: openai/paid, api_base: "http://127.0.0.1:1/v1", input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
  - model_name: free
    litellm_params: {model: openai/free, api_base: "http://127.0.0.1:1/v1", input_cost_per_token: 0, output_cost_per_token: 0}
  - model_name: mystery
    litellm_params: {model: openai/mystery-model, api_base: "http://127.0.0.1:1/v1"}
litellm_settings:
  max_budget: 100
)";

boost::json::object chat(int max_tokens) {
  boost::json::object msg;
  msg["role"] = "user";
  msg["content"] = "hi";
  boost::json::array msgs;
  msgs.push_back(msg);
  boost::json::object o;
  o["model"] = "paid";
  o["messages"] = msgs;
  o["max_tokens"] = max_tokens;
  return o;
}

pipeline::AttemptPlan plan_for(const budget::ResolvedPrice& price, const boost::json::object& body,
                               pipeline::OutputBoundSettings settings = {}) {
  auto out = pipeline::read_output_request(body);
  EXPECT_TRUE(out);
  return pipeline::plan_attempt(price, pipeline::input_bound_for(price, body, {}), body, *out, settings);
}

auth::Principal full_principal() {
  auth::Principal p;
  auto key = std::make_shared<store::KeyRecord>();
  key->token_hash = "kh";
  key->team_id = "t1";
  key->user_id = "u1";
  key->max_budget_nanos = 5'000'000'000;
  key->budget_limits = R"([{"budget_duration": "1d", "max_budget": 1.5}])";
  key->model_max_budget = R"({"paid": {"max_budget": "0.25"}})";
  p.key = key;
  auto user = std::make_shared<store::UserRecord>();
  user->user_id = "u1";
  user->max_budget_nanos = 7;
  p.user = user;
  auto team = std::make_shared<store::TeamRecord>();
  team->team_id = "t1";
  team->max_budget_nanos = 9;
  p.team = team;
  auto m = std::make_shared<store::TeamMemberRecord>();
  m->team_id = "t1";
  m->user_id = "u1";
  m->max_budget_in_team_nanos = 11;
  p.membership = m;
  p.end_user = "alice";
  return p;
}

const budget::ScopeLimit* find(const std::vector<budget::ScopeLimit>& v, ScopeKind k) {
  for (const auto& s : v)
    if (s.scope.kind == k) return &s;
  return nullptr;
}

}  // namespace

TEST(Scopes, EveryIdentityOfTheCallerApplies) {
  auto cfg = load(kConfig);
  auto scopes = pipeline::applicable_scopes(full_principal(), "paid", *cfg);
  ASSERT_TRUE(find(scopes, ScopeKind::key));
  EXPECT_EQ(find(scopes, ScopeKind::key)->max_budget, 5'000'000'000);
  ASSERT_TRUE(find(scopes, ScopeKind::key_window));
  EXPECT_EQ(find(scopes, ScopeKind::key_window)->max_budget, 1'500'000'000);
  EXPECT_EQ(find(scopes, ScopeKind::key_window)->scope.id, budget::key_window_id("kh", "1d"));
  ASSERT_TRUE(find(scopes, ScopeKind::key_model));
  EXPECT_EQ(find(scopes, ScopeKind::key_model)->max_budget, 250'000'000);
  // A team key: the user's personal budget is tracked but does not limit it.
  ASSERT_TRUE(find(scopes, ScopeKind::user));
  EXPECT_EQ(find(scopes, ScopeKind::user)->max_budget, budget::kMaxNanos);
  EXPECT_EQ(find(scopes, ScopeKind::team)->max_budget, 9);
  EXPECT_EQ(find(scopes, ScopeKind::team_member)->max_budget, 11);
  // An end user is a scope only while a budget applies to it (callers name end users freely).
  EXPECT_FALSE(find(scopes, ScopeKind::end_user));
  EXPECT_EQ(find(scopes, ScopeKind::global)->max_budget, 100'000'000'000);
  auto with_default = load(std::string(kConfig) + "  max_end_user_budget: 0.5\n");
  auto eu = pipeline::applicable_scopes(full_principal(), "paid", *with_default);
  ASSERT_TRUE(find(eu, ScopeKind::end_user));
  EXPECT_EQ(find(eu, ScopeKind::end_user)->scope.id, "team:t1/alice") << "the key's team's end user";
  EXPECT_EQ(find(eu, ScopeKind::end_user)->max_budget, 500'000'000);
  // No per-model budget for another group.
  EXPECT_FALSE(find(pipeline::applicable_scopes(full_principal(), "free", *cfg), ScopeKind::key_model));
}

// Issue 14 §5: an end user named by one tenant is not another tenant's end user.
TEST(Scopes, EndUserIdsLiveInTheCallersTenantUnlessGlobal) {
  using Mode = config::TollgateSettings::EndUserBudgetScope;
  auto p = full_principal();
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::team), "team:t1/alice");
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::global), "alice");
  // No organization: the organization mode falls back to the team.
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::organization), "team:t1/alice");
  auto org = std::make_shared<store::OrganizationRecord>();
  org->organization_id = "o1";
  p.organization = org;
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::organization), "organization:o1/alice");
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::team), "team:t1/alice");
  // A key of no team: its organization in team mode, else the key itself.
  auto solo = std::make_shared<store::KeyRecord>(*p.key);
  solo->team_id.clear();
  p.key = solo;
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::team), "organization:o1/alice");
  p.organization = nullptr;
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::team), "key:kh/alice");
  EXPECT_EQ(pipeline::end_user_scope_id(p, Mode::organization), "key:kh/alice");
  // Two keys of different tenants naming the same end user get different scopes.
  auto other = full_principal();
  auto other_key = std::make_shared<store::KeyRecord>(*other.key);
  other_key->team_id = "t2";
  other.key = other_key;
  EXPECT_NE(pipeline::end_user_scope_id(other, Mode::team), pipeline::end_user_scope_id(full_principal(), Mode::team));
  // The master key and the anonymous caller: the global namespace in every mode.
  auth::Principal master;
  master.is_master = true;
  master.end_user = "alice";
  EXPECT_EQ(pipeline::end_user_scope_id(master, Mode::team), "alice");
  auth::Principal anonymous;
  anonymous.end_user = "alice";
  EXPECT_EQ(pipeline::end_user_scope_id(anonymous, Mode::organization), "alice");
  // A tenant id with '/' or '%' is escaped, so the tenant ends at the first '/'; messages name
  // the end user and its tenant.
  auto slashed = std::make_shared<store::KeyRecord>(*other.key);
  slashed->team_id = "a/b%";
  other.key = slashed;
  const auto id = pipeline::end_user_scope_id(other, Mode::team);
  EXPECT_EQ(id, "team:a%2Fb%25/alice");
  EXPECT_EQ(pipeline::scope_name({ScopeKind::end_user, id}), "end_user alice (of team a/b%)");
  EXPECT_EQ(pipeline::scope_name({ScopeKind::end_user, "alice"}), "end_user alice");
  // The config key.
  auto cfg = load(std::string(kConfig) + "  max_end_user_budget: 0.5\ntollgate_settings:\n  end_user_budget_scope: global\n");
  EXPECT_EQ(find(pipeline::applicable_scopes(full_principal(), "paid", *cfg), ScopeKind::end_user)->scope.id, "alice");
}

TEST(Scopes, UserBudgetAppliesToTeamKeysWhenConfigured) {
  auto cfg = load(std::string(kConfig) + "general_settings:\n  apply_user_budget_to_team_keys: true\n");
  auto scopes = pipeline::applicable_scopes(full_principal(), "paid", *cfg);
  EXPECT_EQ(find(scopes, ScopeKind::user)->max_budget, 7);
}

TEST(Scopes, MalformedStoredBudgetFailsClosed) {
  auto cfg = load(kConfig);
  auto p = full_principal();
  auto key = std::make_shared<store::KeyRecord>(*p.key);
  key->budget_limits = "not json";
  p.key = key;
  auto scopes = pipeline::applicable_scopes(p, "paid", *cfg);
  ASSERT_TRUE(find(scopes, ScopeKind::key_window));
  EXPECT_EQ(find(scopes, ScopeKind::key_window)->max_budget, 0);
}

// A request whose provider adds input the body does not show (a stored conversation, MCP tool
// definitions) is bounded by the model's context limit, or 10M tokens when that is unknown.
TEST(InputBound, HiddenInputIsTheContextLimit) {
  auto cfg = load(kConfig);
  auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  const auto body = chat(10);
  const std::int64_t shown = pipeline::input_bound_for(price, body, {});
  EXPECT_EQ(shown, 14);
  price.price.max_input_tokens = 128'000;
  EXPECT_EQ(pipeline::input_bound_for(price, body, {}, providers::CallApi::chat, true), 128'000);
  EXPECT_EQ(pipeline::input_bound_for(price, body, {}, providers::CallApi::chat, false), 14);
  price.price.max_input_tokens = 10;  // a body larger than the stated context keeps its own bound
  EXPECT_EQ(pipeline::input_bound_for(price, body, {}, providers::CallApi::chat, true), 14);
  price.price.max_input_tokens.reset();
  EXPECT_EQ(pipeline::input_bound_for(price, body, {}, providers::CallApi::chat, true), budget::kUnknownMediaTokenBound);
}

TEST(Admit, FreeModelIsNeverBlocked) {
  auto cfg = load(kConfig);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[1], budget::PriceTable::bundled());
  std::vector<budget::ScopeLimit> scopes{{{ScopeKind::key, "k"}, 0, std::nullopt}};  // an exhausted budget
  auto d = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, chat(10)), std::chrono::system_clock::now());
  EXPECT_EQ(d.outcome, pipeline::AdmissionDecision::Outcome::admitted);
  EXPECT_TRUE(d.reservation.empty());
}

TEST(Admit, ReservesTheWorstCaseAndRefusesPastTheLimit) {
  auto cfg = load(kConfig);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  // Worst case: the input bound (every string byte — "user" and "hi" — + 4 per message + 4 per
  // request = 14 tokens) at 1e-6 $/token (1,000 nanos) + 10 output tokens at 2,000 nanos = 34,000.
  std::vector<budget::ScopeLimit> scopes{{{ScopeKind::key, "k"}, 68'000, std::nullopt}};
  auto now = std::chrono::system_clock::now();
  auto a = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, chat(10)), now);
  ASSERT_EQ(a.outcome, pipeline::AdmissionDecision::Outcome::admitted);
  EXPECT_EQ(a.reservation.amount(), 34'000);
  auto b = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, chat(10)), now);
  ASSERT_EQ(b.outcome, pipeline::AdmissionDecision::Outcome::admitted);
  auto c = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, chat(10)), now);
  ASSERT_EQ(c.outcome, pipeline::AdmissionDecision::Outcome::budget_exceeded);
  EXPECT_EQ(c.error.status, 429);
  EXPECT_EQ(c.error.type, "budget_exceeded");
  EXPECT_NE(c.error.message.find("key k"), std::string::npos) << c.error.message;
  EXPECT_EQ(c.reason, "budget_exceeded key k");
  ledger.settle(std::move(a.reservation), 1'000, budget::SettleKind::actual, now);
  ledger.settle(std::move(b.reservation), 0, budget::SettleKind::no_usage, now);
  EXPECT_EQ(pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, chat(10)), now).outcome,
            pipeline::AdmissionDecision::Outcome::admitted);
}

TEST(Admit, UnpricedIsRefusedOnlyWhereABudgetAttaches) {
  auto cfg = load(kConfig);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[2], budget::PriceTable::bundled());
  ASSERT_EQ(price.status, budget::PriceStatus::unpriced);
  const auto now = std::chrono::system_clock::now();
  std::vector<budget::ScopeLimit> tracked{{{ScopeKind::key, "k"}, budget::kMaxNanos, std::nullopt}};
  EXPECT_EQ(pipeline::admit(ledger, *cfg, price, tracked, plan_for(price, chat(10)), now).outcome,
            pipeline::AdmissionDecision::Outcome::admitted);
  std::vector<budget::ScopeLimit> limited{{{ScopeKind::key, "k"}, 1'000'000'000, std::nullopt}};
  auto d = pipeline::admit(ledger, *cfg, price, limited, plan_for(price, chat(10)), now);
  EXPECT_EQ(d.outcome, pipeline::AdmissionDecision::Outcome::unpriced_blocked);
  EXPECT_EQ(d.error.status, 403);
  EXPECT_EQ(d.error.type, "unpriced_model_blocked");
  auto open = load(std::string(kConfig) + "general_settings:\n  block_unpriced_models: false\n");
  EXPECT_EQ(pipeline::admit(ledger, *open, price, limited, plan_for(price, chat(10)), now).outcome,
            pipeline::AdmissionDecision::Outcome::admitted);
}

// ---- the output bound (the reservation is the contract with the upstream) ----

namespace {
const char* kGpt4o = R"(
model_list:
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o, api_base: "http://127.0.0.1:1/v1", input_cost_per_token: 0.0000025, output_cost_per_token: 0.00001}
    model_info: {max_output_tokens: 16384}
)";

boost::json::object ask(std::optional<std::int64_t> max_tokens) {
  auto o = chat(1);
  o.erase("max_tokens");
  if (max_tokens) o["max_tokens"] = *max_tokens;
  return o;
}
}  // namespace

TEST(OutputBound, NoCallerLimitMeansTheModelsMaximumWhenTheBudgetAffordsIt) {
  auto cfg = load(kGpt4o);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  std::vector<budget::ScopeLimit> scopes{{{ScopeKind::key, "k"}, 5'000'000'000, std::nullopt}};  // $5
  auto d = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, ask(std::nullopt)), std::chrono::system_clock::now());
  ASSERT_EQ(d.outcome, pipeline::AdmissionDecision::Outcome::admitted);
  EXPECT_EQ(d.output_tokens, 16384);
  EXPECT_FALSE(d.output_reduced);
  EXPECT_EQ(d.reservation.amount(), d.worst);
}

TEST(OutputBound, ACallerLimitAboveTheModelsMaximumIsCappedSilently) {
  auto cfg = load(kGpt4o);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  std::vector<budget::ScopeLimit> scopes{{{ScopeKind::key, "k"}, 5'000'000'000, std::nullopt}};
  auto d = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, ask(1'000'000)), std::chrono::system_clock::now());
  EXPECT_EQ(d.output_tokens, 16384);
  EXPECT_FALSE(d.output_reduced);
}

TEST(OutputBound, ThreeCentsLeftBuysACappedAnswerNotARefusal) {
  auto cfg = load(kGpt4o);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  std::vector<budget::ScopeLimit> scopes{{{ScopeKind::key, "k"}, 30'000'000, std::nullopt}};  // $0.03
  const auto now = std::chrono::system_clock::now();
  pipeline::OutputBoundSettings all;  // one caller alone may take everything that is left
  all.share_percent = 100;
  auto d = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, ask(std::nullopt), all), now);
  ASSERT_EQ(d.outcome, pipeline::AdmissionDecision::Outcome::admitted);
  ASSERT_TRUE(d.output_tokens);
  EXPECT_TRUE(d.output_reduced);
  EXPECT_EQ(d.reduced_by, "key k");
  EXPECT_LT(*d.output_tokens, 3'000);  // $0.03 / $10 per M
  EXPECT_GT(*d.output_tokens, 2'900);  // minus the input's worst case
  EXPECT_LE(d.reservation.amount(), 30'000'000);
  EXPECT_LE(d.worst, d.reservation.amount());
}

TEST(OutputBound, RefusePolicyRefusesAnUnaffordableCallerLimitButStillCapsTheModelDefault) {
  auto cfg = load(kGpt4o);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  std::vector<budget::ScopeLimit> scopes{{{ScopeKind::key, "k"}, 30'000'000, std::nullopt}};
  const auto now = std::chrono::system_clock::now();
  pipeline::OutputBoundSettings refuse;
  refuse.refuse_unaffordable = true;
  auto d = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, ask(10'000), refuse), now);
  EXPECT_EQ(d.outcome, pipeline::AdmissionDecision::Outcome::budget_exceeded);
  auto e = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, ask(std::nullopt), refuse), now);
  EXPECT_EQ(e.outcome, pipeline::AdmissionDecision::Outcome::admitted);
  EXPECT_TRUE(e.output_reduced);
}

TEST(OutputBound, NotEvenTheLeastUsefulAnswerIsRefusedNamingTheScope) {
  auto cfg = load(kGpt4o);
  budget::Ledger ledger;
  const auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  // The input alone (~30 tokens at $2.50/M = 75 nanos) plus 16 output tokens (160,000 picos = 160 nanos).
  std::vector<budget::ScopeLimit> scopes{{{ScopeKind::end_user, "u"}, 200, std::nullopt}};
  auto d = pipeline::admit(ledger, *cfg, price, scopes, plan_for(price, ask(std::nullopt)), std::chrono::system_clock::now());
  EXPECT_EQ(d.outcome, pipeline::AdmissionDecision::Outcome::budget_exceeded);
  EXPECT_NE(d.error.message.find("end_user u"), std::string::npos) << d.error.message;
}

TEST(OutputBound, BadCallerLimitsAre400sNamingTheField) {
  for (const char* body : {R"({"max_tokens":0})", R"({"max_tokens":-5})", R"({"max_tokens":"100"})", R"({"max_tokens":1.5})",
                           R"({"max_completion_tokens":0})", R"({"n":0})", R"({"n":129})", R"({"service_tier":7})"}) {
    auto out = pipeline::read_output_request(boost::json::parse(body).as_object());
    ASSERT_FALSE(out) << body;
    EXPECT_EQ(out.error().status, 400) << body;
    EXPECT_FALSE(out.error().param.empty()) << body;
  }
  auto ok = pipeline::read_output_request(boost::json::parse(R"({"max_tokens":100,"max_completion_tokens":50,"n":2})").as_object());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->max_tokens, 50);
  EXPECT_EQ(ok->choices, 2);
}
