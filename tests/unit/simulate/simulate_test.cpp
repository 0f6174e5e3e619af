#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "config/loader.hpp"
#include "simulate/catalogue.hpp"
#include "simulate/report.hpp"
#include "simulate/scenario.hpp"
#include "simulate/simulator.hpp"

using namespace tollgate;
using namespace tollgate::simulate;
namespace json = boost::json;

namespace {

/// Group `a` (openai, one deployment a1) falls back to group `b` (anthropic, b1).
const char* kConfig = R"(
model_list:
  - model_name: a
    litellm_params: {model: openai/a-model, api_base: "http://127.0.0.1:1/v1", api_key: k, timeout: 5,
                     input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: a1}
  - model_name: b
    litellm_params: {model: anthropic/b-model, api_key: k, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: b1}
litellm_settings:
  fallbacks: [{"a": ["b"]}]
router_settings: {num_retries: 2, allowed_fails: 100, cooldown_time: 1}
fallback_policy:
  defaults:
    budgets: {max_retries: 2, max_fallbacks: 1, deadline_ms: 10000}
    circuit: {consecutive_failures: 2, cooldown_ms: 5000}
)";

std::shared_ptr<const config::Config> config() {
  auto r = config::load_config_string(
      kConfig, "<test>", config::EnvLookup([](std::string_view) -> std::optional<std::string> { return std::nullopt; }));
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.config;
}

Scenario scenario(const std::string& yaml) {
  auto s = parse_scenario(yaml, "<scenario>");
  if (!s) {
    for (const auto& p : s.error()) ADD_FAILURE() << p.to_string();
    return {};
  }
  auto cfg = config();
  for (const auto& p : check_against(*s, *cfg)) ADD_FAILURE() << p.to_string();
  return *s;
}

SimulationResult run(const std::string& yaml) { return run_simulation(*config(), scenario(yaml)); }

/// Every problem of an invalid scenario, one per line.
std::string problems(const std::string& yaml) {
  auto s = parse_scenario(yaml, "<scenario>");
  std::string out;
  if (s) {
    for (const auto& p : check_against(*s, *config())) out += p.to_string() + "\n";
    return out;
  }
  for (const auto& p : s.error()) out += p.to_string() + "\n";
  return out;
}

const json::array& steps(const RequestResult& r) { return r.decision.at("steps").as_array(); }

std::vector<const json::object*> attempts(const RequestResult& r) {
  std::vector<const json::object*> out;
  for (const auto& s : steps(r))
    if (s.as_object().at("step").as_string() == "attempt") out.push_back(&s.as_object());
  return out;
}

std::string s(const json::value& v) { return v.is_string() ? std::string(v.as_string()) : json::serialize(v); }

}  // namespace

// --- scenario parsing ------------------------------------------------------------------------

TEST(ScenarioParse, ValidScenarioWithShorthandsAndTimes) {
  auto sc = parse_scenario(R"(
name: x
seed: 7
latency_ms: 50
default: {status: 200, completion_tokens: 3}
keys:
  team: {max_budget: 0.5, spent: 0.1, request_budget: {max_retries: 1}}
upstream:
  a1: [rate_limit_exceeded, ok, 503, reset, {error: server_error, times: 3}]
requests:
  - model: a
    headers: {X-Tollgate-Deadline-Ms: 2000}
    key: team
    repeat: 2
  - model: b
    key: {alias: inline, max_budget: 1}
)");
  ASSERT_TRUE(sc) << sc.error().front().to_string();
  EXPECT_EQ(sc->seed, 7u);
  ASSERT_EQ(sc->upstream.size(), 1u);
  const auto& a1 = sc->upstream[0].second;
  ASSERT_EQ(a1.size(), 7u);
  EXPECT_EQ(a1[0].error, "rate_limit_exceeded");
  EXPECT_TRUE(a1[1].error.empty());
  EXPECT_EQ(a1[2].status, 503);
  EXPECT_EQ(a1[3].fault, "reset");
  EXPECT_EQ(a1[6].error, "server_error");
  ASSERT_EQ(sc->keys.size(), 2u);
  EXPECT_EQ(sc->keys[0].max_budget_nanos, 500'000'000);
  EXPECT_EQ(sc->keys[0].spent_nanos, 100'000'000);
  EXPECT_EQ(sc->requests[0].headers.at(0).first, "x-tollgate-deadline-ms");
  EXPECT_EQ(sc->requests[1].key, "inline");
  EXPECT_EQ(sc->requests[0].messages.size(), 1u);  // the default message
}

TEST(ScenarioParse, ErrorsNameTheirYamlPath) {
  const std::string out = problems(R"(
nmae: typo
upstream:
  a1:
    - {error: rate_limit_exceded}
    - {fault: unplugged}
    - {fault: reset, status: 500}
    - {latency_ms: -5}
requests:
  - max_tokens: 10
  - model: a
    headers: {x-tollgate-deadline-ms: soon, x-custom: 1}
    key: nobody
    repeat: 0
)");
  EXPECT_NE(out.find("nmae"), std::string::npos) << out;
  EXPECT_NE(out.find("upstream.a1[0].error (line 5): unknown error 'rate_limit_exceded'"), std::string::npos) << out;
  EXPECT_NE(out.find("upstream.a1[1].fault"), std::string::npos) << out;
  EXPECT_NE(out.find("upstream.a1[2] (line 7): a fault has no HTTP response"), std::string::npos) << out;
  EXPECT_NE(out.find("upstream.a1[3].latency_ms"), std::string::npos) << out;
  EXPECT_NE(out.find("requests[0].model"), std::string::npos) << out;
  EXPECT_NE(out.find("requests[1].headers.x-tollgate-deadline-ms"), std::string::npos) << out;
  EXPECT_NE(out.find("requests[1].headers.x-custom"), std::string::npos) << out;
  EXPECT_NE(out.find("requests[1].key"), std::string::npos) << out;
  EXPECT_NE(out.find("requests[1].repeat"), std::string::npos) << out;
}

TEST(ScenarioParse, MissingRequestsAndInvalidYaml) {
  EXPECT_NE(problems("name: x\n").find("requests"), std::string::npos);
  EXPECT_NE(problems("requests: []\n").find("non-empty"), std::string::npos);
  EXPECT_NE(problems("requests: [model: a\n").find("invalid YAML"), std::string::npos);
  EXPECT_NE(problems("- just\n- a list\n").find("a scenario is a map"), std::string::npos);
}

TEST(ScenarioParse, NamesMustExistInTheConfig) {
  const std::string out = problems(R"(
upstream:
  nowhere: [ok]
requests:
  - model: gpt-9
    upstream: {b2: [ok]}
)");
  EXPECT_NE(out.find("upstream.nowhere: 'nowhere' is neither a deployment id nor a model group"), std::string::npos) << out;
  EXPECT_NE(out.find("requests[0].model (line 5): 'gpt-9' is not a model group"), std::string::npos) << out;
  EXPECT_NE(out.find("requests[0].upstream.b2"), std::string::npos) << out;
}

// --- the catalogue ---------------------------------------------------------------------------

TEST(Catalogue, ProviderShapedErrors) {
  RequestFacts req;
  req.model = "m";
  Outcome o;
  o.error = "insufficient_quota";
  auto openai = error_response(config::ProviderKind::openai, o, req, "req_1");
  EXPECT_EQ(openai.status, 429);
  EXPECT_EQ(json::parse(openai.body).at("error").at("code").as_string(), "insufficient_quota");
  auto anthropic = error_response(config::ProviderKind::anthropic, o, req, "req_1");
  EXPECT_EQ(anthropic.status, 400);
  EXPECT_EQ(json::parse(anthropic.body).at("error").at("type").as_string(), "billing_error");

  Outcome rl;
  rl.error = "rate_limit_exceeded";
  rl.retry_after_ms = 1500;
  auto r = error_response(config::ProviderKind::openai, rl, req, "req_2");
  bool retry_after = false, retry_after_ms = false;
  for (const auto& [k, v] : r.headers) {
    retry_after |= k == "retry-after" && v == "1";
    retry_after_ms |= k == "retry-after-ms" && v == "1500";
  }
  EXPECT_TRUE(retry_after && retry_after_ms);
}

// --- runs through the real attempt loop -----------------------------------------------------

TEST(Simulate, A429ThenA200IsRetriedAfterItsRetryAfter) {
  auto r = run(R"(
latency_ms: 100
requests:
  - model: a
    max_tokens: 20
    upstream:
      a1: [{error: rate_limit_exceeded, retry_after: "2"}, {completion_tokens: 10}]
)");
  ASSERT_EQ(r.requests.size(), 1u);
  const auto& q = r.requests[0];
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(q.category, "served");
  EXPECT_EQ(q.attempts, 2);
  EXPECT_EQ(q.retries, 1);
  auto at = attempts(q);
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(s(at[0]->at("class")), "retryable_capacity");
  EXPECT_EQ(s(at[0]->at("decision")), "retry");
  EXPECT_EQ(s(at[1]->at("decision")), "served");
  // The same deployment again: the 2 s Retry-After was waited out, on the virtual clock.
  EXPECT_GE(q.virtual_ms, 2200);
  EXPECT_LT(q.virtual_ms, 3000);
  EXPECT_NE(q.headers.end(), std::find_if(q.headers.begin(), q.headers.end(), [](const auto& h) {
              return h.first == "x-tollgate-decision" && h.second.find("a/a1 429 retryable_capacity->retry") != std::string::npos;
            }));
  EXPECT_GT(q.charged, 0);  // 10 output + prompt tokens of the served attempt
  EXPECT_EQ(r.summary.served, 1);
}

TEST(Simulate, CommercialLimitStopsWithoutFallback) {
  auto r = run(R"(
requests:
  - model: a
    upstream:
      a1: [insufficient_quota]
)");
  const auto& q = r.requests[0];
  EXPECT_EQ(q.status, 429);
  EXPECT_EQ(q.category, "failed");
  EXPECT_EQ(q.attempts, 1);
  EXPECT_EQ(q.fallbacks, 0);
  ASSERT_EQ(q.calls.size(), 1u);  // b1 (another provider) was never asked
  EXPECT_EQ(q.calls[0].deployment_id, "a1");
  ASSERT_TRUE(q.error);
  EXPECT_NE(q.error->message.find("Stopped by fallback policy"), std::string::npos) << q.error->message;
  for (const auto& st : steps(q)) EXPECT_NE(s(st.as_object().at("step")), "fallback");
  ASSERT_EQ(q.alerts.size(), 1u);
  EXPECT_EQ(q.alerts[0], "commercial_limit (openai)");
  bool provider_open = false;
  for (const auto& c : r.circuits) provider_open |= c.scope == "provider" && c.id == "openai" && c.state == policy::CircuitState::open;
  EXPECT_TRUE(provider_open);
}

TEST(Simulate, RetryAfterLongerThanTheDeadlineGoesStraightToTheFallback) {
  auto r = run(R"(
latency_ms: 100
requests:
  - model: a
    headers: {x-tollgate-deadline-ms: 2000}
    upstream:
      a1: [{error: rate_limit_exceeded, retry_after: "30"}]
)");
  const auto& q = r.requests[0];
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(q.served_by, "b/b1");
  ASSERT_EQ(q.calls.size(), 2u);
  EXPECT_EQ(q.calls[0].deployment_id, "a1");
  EXPECT_EQ(q.calls[1].deployment_id, "b1");
  auto at = attempts(q);
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(s(at[0]->at("decision")), "fallback");
  EXPECT_EQ(q.retries, 0);
  // Two 100 ms attempts: the 30 s Retry-After (and any backoff) was not waited.
  EXPECT_EQ(q.virtual_ms, 200);
  EXPECT_EQ(q.decision.at("budget").at("deadline_ms").as_int64(), 2000);
}

TEST(Simulate, CircuitOpensAcrossRequestsThenHalfOpensAfterAdvance) {
  auto r = run(R"(
latency_ms: 100
requests:
  - name: fails
    model: a
    headers: {x-tollgate-max-retries: 0}
    repeat: 2
    upstream:
      a1: [server_error, server_error]
  - name: open
    model: a
    headers: {x-tollgate-max-retries: 0}
    advance_ms: 1000
  - name: probe
    model: a
    headers: {x-tollgate-max-retries: 0}
    advance_ms: 5000
)");
  ASSERT_EQ(r.requests.size(), 4u);
  // Two failures in a row (consecutive_failures: 2) open a1's circuit during request 2.
  EXPECT_TRUE(r.requests[0].circuit_changes.empty());
  ASSERT_EQ(r.requests[1].circuit_changes.size(), 1u);
  EXPECT_EQ(r.requests[1].circuit_changes[0], "deployment a1: closed -> open (2 consecutive failures)");
  EXPECT_EQ(r.requests[1].served_by, "b/b1");
  // While open, a1 is not tried at all: the fallback serves.
  const auto& open = r.requests[2];
  ASSERT_EQ(open.calls.size(), 1u);
  EXPECT_EQ(open.calls[0].deployment_id, "b1");
  EXPECT_EQ(open.status, 200);
  // 1000 + 100 + 5000 ms later the 5 s cooldown is over: one probe goes to a1 and closes it.
  const auto& probe = r.requests[3];
  ASSERT_EQ(probe.calls.size(), 1u);
  EXPECT_EQ(probe.calls[0].deployment_id, "a1");
  auto at = attempts(probe);
  ASSERT_EQ(at.size(), 1u);
  EXPECT_EQ(s(at[0]->at("circuit")), "half_open");
  ASSERT_FALSE(probe.circuit_changes.empty());
  EXPECT_EQ(probe.circuit_changes[0], "deployment a1: open -> closed");
  for (const auto& c : r.circuits)
    if (c.scope == "deployment" && c.id == "a1") {
      EXPECT_EQ(c.state, policy::CircuitState::closed);
      EXPECT_EQ(c.opened_total, 1u);
    }
}

TEST(Simulate, LatencyPastTheAttemptTimeoutIsAnUnknownOutcomeAtTheTimeout) {
  auto r = run(R"(
keys:
  k: {max_budget: 10}
requests:
  - model: a
    key: k
    max_tokens: 100
    headers: {x-tollgate-max-retries: 0, x-tollgate-max-fallbacks: 0}
    upstream:
      a1: [{latency_ms: 60000}]
)");
  const auto& q = r.requests[0];
  EXPECT_EQ(q.status, 504);
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.calls[0].fault, "timeout");
  auto at = attempts(q);
  ASSERT_EQ(at.size(), 1u);
  EXPECT_EQ(s(at[0]->at("class")), "unknown_outcome");
  // The deployment's 5 s timeout, not the scripted 60 s; charged at its reservation.
  EXPECT_EQ(q.virtual_ms, 5000);
  EXPECT_GT(q.charged, 0);
  EXPECT_EQ(q.charged, q.reserved);
}

TEST(Simulate, TransportFaultsAndGarbageAreClassified) {
  // One fault per request, each after a 6 s pause so that a1's circuit (2 failures) has cooled down.
  auto r = run(R"(
upstream:
  a1: [connect_refused, reset, garbage]
requests:
  - model: a
    headers: {x-tollgate-max-retries: 0, x-tollgate-max-fallbacks: 0}
    repeat: 3
    advance_ms: 6000
)");
  ASSERT_EQ(r.requests.size(), 3u);
  const char* expected[] = {"transient_provider_error", "unknown_outcome", "transient_provider_error"};
  const int status[] = {502, 502, 502};
  for (int i = 0; i < 3; ++i) {
    auto at = attempts(r.requests[i]);
    ASSERT_EQ(at.size(), 1u) << i;
    EXPECT_EQ(s(at[0]->at("class")), expected[i]) << i;
    EXPECT_EQ(r.requests[i].status, status[i]) << i;
  }
  EXPECT_EQ(r.requests[0].calls[0].fault, "connect_refused");
  EXPECT_EQ(r.requests[1].calls[0].fault, "reset");
  EXPECT_EQ(r.requests[2].calls[0].status, 200);  // garbage: a 200 that is not JSON
}

TEST(Simulate, KeyBudgetRefusesBeforeAnyAttempt) {
  auto r = run(R"(
keys:
  poor: {max_budget: 0.001, spent: 0.001}
requests:
  - model: a
    key: poor
    max_tokens: 100
)");
  const auto& q = r.requests[0];
  EXPECT_EQ(q.status, 429);
  EXPECT_TRUE(q.calls.empty());
  ASSERT_TRUE(q.error);
  EXPECT_EQ(q.error->type, "budget_exceeded");
}

TEST(Simulate, AnthropicStreamsAndOutputIsDeterministic) {
  const std::string yaml = R"(
seed: 3
requests:
  - model: b
    stream: true
    upstream:
      b1: [{completion_tokens: 5}]
  - model: a
    repeat: 3
    upstream:
      a: [overloaded]
)";
  auto first = run(yaml);
  EXPECT_TRUE(first.requests[0].streamed);
  EXPECT_EQ(first.requests[0].status, 200);
  EXPECT_NE(first.requests[0].body.find("chat.completion.chunk"), std::string::npos);
  EXPECT_EQ(json::serialize(render_json(first)), json::serialize(render_json(run(yaml))));
  EXPECT_EQ(render_text(first), render_text(run(yaml)));
}

TEST(Simulate, EveryCatalogueOutcomeLandsInItsDocumentedClass) {
  // docs/simulate.md "Named errors" and "Faults": the class of each outcome with the default
  // classification table, for an OpenAI-format (a1) and an Anthropic-format (b1) deployment.
  struct Row {
    const char* outcome;
    const char* openai;
    const char* anthropic;
  };
  const Row rows[] = {
      {"rate_limit_exceeded", "retryable_capacity", "retryable_capacity"},
      {"insufficient_quota", "commercial_limit", "commercial_limit"},
      {"context_length_exceeded", "context_overflow", "context_overflow"},
      {"content_filter", "content_policy", "content_policy"},
      {"invalid_api_key", "deployment_misconfigured", "deployment_misconfigured"},
      {"permission", "deployment_misconfigured", "deployment_misconfigured"},
      {"not_found", "caller_fix_required", "caller_fix_required"},
      {"invalid_request", "caller_fix_required", "caller_fix_required"},
      {"request_too_large", "caller_fix_required", "caller_fix_required"},
      {"server_error", "transient_provider_error", "transient_provider_error"},
      {"bad_gateway_html", "transient_provider_error", "transient_provider_error"},
      {"overloaded", "retryable_capacity", "retryable_capacity"},
      {"overloaded_529", "retryable_capacity", "retryable_capacity"},
      {"timeout", "retryable_capacity", "retryable_capacity"},
      {"reset", "unknown_outcome", "unknown_outcome"},
      {"connect_refused", "transient_provider_error", "transient_provider_error"},
      {"garbage", "transient_provider_error", "transient_provider_error"},
      {"{fault: timeout}", "unknown_outcome", "unknown_outcome"},
  };
  std::string yaml = "requests:\n";
  for (const auto& row : rows)
    for (const char* dep : {"a1", "b1"})
      yaml += std::string("  - model: ") + (dep[0] == 'a' ? "a" : "b") +
              "\n    advance_ms: 600000\n    headers: {x-tollgate-max-retries: 0, x-tollgate-max-fallbacks: 0}\n"
              "    upstream: {" + dep + ": [" + row.outcome + "]}\n";
  auto r = run(yaml);
  ASSERT_EQ(r.requests.size(), std::size(rows) * 2);
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    for (int p = 0; p < 2; ++p) {
      const char* want = p == 0 ? rows[i].openai : rows[i].anthropic;
      auto at = attempts(r.requests[i * 2 + p]);
      ASSERT_EQ(at.size(), 1u) << rows[i].outcome;
      EXPECT_EQ(s(at[0]->at("class")), want) << rows[i].outcome << (p == 0 ? " (openai)" : " (anthropic)");
    }
  }
}
