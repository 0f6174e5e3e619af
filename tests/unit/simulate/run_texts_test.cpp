// simulate::run_texts: the one function behind `tollgate simulate` and POST /tollgate/simulate —
// texts in, problems or a result out; a sandboxed (pasted) config reads neither the environment
// nor files; the request count and the retry/fallback budgets are bounded.
#include "simulate/run_texts.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/ids.hpp"
#include "simulate/report.hpp"

namespace tollgate::simulate {
namespace {

const char* kPasted = R"(
model_list:
  - model_name: a
    litellm_params: {model: openai/a-model, api_key: os.environ/TG_RUN_TEXTS_SECRET, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: a1}
  - model_name: b
    litellm_params: {model: openai/b-model, api_key: k, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: b1}
litellm_settings:
  fallbacks: [{"a": ["b"]}]
router_settings: {num_retries: 50, allowed_fails: 1000}
fallback_policy:
  defaults:
    circuit: {consecutive_failures: 1000}
)";

const char* kScenario = R"(
requests:
  - model: a
    max_tokens: 20
    upstream:
      a1: [{error: server_error, times: 100}]
)";

RunTextsOptions sandboxed(std::string config) {
  RunTextsOptions o;
  o.config_text = std::move(config);
  o.config_name = "<pasted config>";
  o.sandboxed = true;
  return o;
}

TEST(RunTexts, ASandboxedConfigGetsPlaceholdersNeverTheEnvironment) {
  // The deployment id is shown (served_by): what os.environ/ resolved to is observable.
  const std::string config = R"(
model_list:
  - model_name: a
    litellm_params: {model: openai/a-model, api_key: k, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: os.environ/TG_RUN_TEXTS_SECRET}
)";
  ::setenv("TG_RUN_TEXTS_SECRET", "the-real-secret-value", 1);
  auto run = run_texts("requests:\n  - model: a\n", sandboxed(config));
  ::unsetenv("TG_RUN_TEXTS_SECRET");
  ASSERT_TRUE(run.result) << (run.config_errors.empty() ? "" : run.config_errors.front().to_string());
  const auto text = boost::json::serialize(render_json(*run.result));
  EXPECT_EQ(text.find("the-real-secret-value"), std::string::npos);
  EXPECT_EQ(run.result->requests.at(0).served_by, "a/sim-env-TG_RUN_TEXTS_SECRET");
  EXPECT_EQ(sandbox_env_value("X"), "sim-env-X");
  // Not sandboxed (the CLI), the given environment answers.
  RunTextsOptions cli;
  cli.config_text = config;
  cli.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "TG_RUN_TEXTS_SECRET") return "from-the-environment";
    return std::nullopt;
  };
  auto plain = run_texts("requests:\n  - model: a\n", cli);
  ASSERT_TRUE(plain.result);
  EXPECT_EQ(plain.result->requests.at(0).served_by, "a/from-the-environment");
}

TEST(RunTexts, RetryBudgetsAreCappedWhenAsked) {
  auto capped = sandboxed(kPasted);
  capped.max_retries_and_fallbacks = 3;
  auto run = run_texts(kScenario, capped);
  ASSERT_TRUE(run.result);
  ASSERT_EQ(run.result->requests.size(), 1u);
  EXPECT_LE(run.result->requests[0].retries, 3);
  auto uncapped = run_texts(kScenario, sandboxed(kPasted));
  ASSERT_TRUE(uncapped.result);
  EXPECT_GT(uncapped.result->requests[0].retries, 3);
}

TEST(RunTexts, FilePathsInAPastedConfigAreRefusedAndNothingIsRead) {
  auto price = run_texts(kScenario, sandboxed(std::string(kPasted) + "tollgate_settings: {price_file: /etc/passwd}\n"));
  ASSERT_FALSE(price.result);
  ASSERT_EQ(price.config_errors.size(), 1u);
  EXPECT_EQ(price.config_errors[0].path, "tollgate_settings.price_file");
  // The live config's own price file is allowed: the run goes on to read it (here it is missing).
  auto same = sandboxed(std::string(kPasted) + "tollgate_settings: {price_file: /nonexistent/prices.yaml}\n");
  same.allowed_price_file = "/nonexistent/prices.yaml";
  try {
    auto allowed = run_texts(kScenario, same);
    ADD_FAILURE() << "the missing price file was not read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/prices.yaml"), std::string::npos) << e.what();
  }

  auto vertex = run_texts("requests:\n  - model: v\n", sandboxed(R"(
model_list:
  - model_name: v
    litellm_params: {model: vertex_ai/gemini-pro, vertex_credentials: /etc/hostname, vertex_project: p}
)"));
  ASSERT_FALSE(vertex.result);
  ASSERT_FALSE(vertex.config_errors.empty());
  EXPECT_EQ(vertex.config_errors[0].path, "model_list[0].litellm_params.vertex_credentials");
  // Inline JSON is fine (a warning at most about its content, no file read).
  auto inline_json = run_texts("requests:\n  - model: v\n", sandboxed(R"(
model_list:
  - model_name: v
    litellm_params: {model: vertex_ai/gemini-pro, vertex_credentials: '{"type": "service_account"}', vertex_project: p}
)"));
  for (const auto& e : inline_json.config_errors) EXPECT_NE(e.path, "model_list[0].litellm_params.vertex_credentials");
}

TEST(RunTexts, ProblemsCarryTheirPathsAndTheRequestCountIsBounded) {
  auto broken = run_texts("requests: [\n", sandboxed(kPasted));
  ASSERT_FALSE(broken.result);
  ASSERT_FALSE(broken.scenario_errors.empty());
  auto unknown = run_texts("requests:\n  - model: a\n    upstream: {a1: [{error: nope}]}\n", sandboxed(kPasted));
  ASSERT_FALSE(unknown.scenario_errors.empty());
  EXPECT_EQ(unknown.scenario_errors[0].path.rfind("requests[0].upstream.a1[0]", 0), 0u) << unknown.scenario_errors[0].path;
  auto bad_config = run_texts(kScenario, sandboxed("model_list: [\n"));
  EXPECT_FALSE(bad_config.config_errors.empty());
  auto many = sandboxed(kPasted);
  many.max_requests = 10;
  auto over = run_texts("requests:\n  - model: b\n    repeat: 11\n", many);
  ASSERT_EQ(over.scenario_errors.size(), 1u);
  EXPECT_EQ(over.scenario_errors[0].path, "requests");
  EXPECT_TRUE(run_texts("requests:\n  - model: b\n    repeat: 10\n", many).result);
}

TEST(RunTexts, TheThreadsRandomStreamContinuesAsIfNothingRan) {
  // A server runs simulations on its admin thread, whose generator also draws UUIDs (/team/new).
  auto expected = core::thread_rng();
  ASSERT_TRUE(run_texts(kScenario, sandboxed(kPasted)).result);
  ASSERT_TRUE(run_texts(kScenario, sandboxed(kPasted)).result);
  EXPECT_EQ(core::thread_rng()(), expected());
  EXPECT_EQ(core::thread_rng()(), expected());
}

TEST(RunTexts, ALoadedConfigRunsAsIs) {
  RunTextsOptions o;
  auto loaded = config::load_config_string(kPasted, "live.yaml",
                                           config::EnvLookup([](std::string_view) { return std::optional<std::string>(); }));
  ASSERT_TRUE(loaded.ok());
  o.config = loaded.config;
  auto run = run_texts("requests:\n  - model: b\n", o);
  ASSERT_TRUE(run.result);
  EXPECT_EQ(run.result->config_path, "live.yaml");
  EXPECT_EQ(run.result->summary.served, 1);
}

}  // namespace
}  // namespace tollgate::simulate
