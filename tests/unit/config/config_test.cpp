#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "config/config.hpp"
#include "config/loader.hpp"
#include "load_helpers.hpp"

namespace tollgate::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string fixture(const std::string& name) {
  return std::string(TOLLGATE_SOURCE_DIR) + "/tests/unit/config/fixtures/" + name;
}
std::string example(const std::string& name) {
  return std::string(TOLLGATE_SOURCE_DIR) + "/examples/" + name;
}

using testing_helpers::all;
using testing_helpers::env_of;
using testing_helpers::load;
using testing_helpers::only;

const std::map<std::string, std::string> kDocsEnv{
    {"AZURE_API_KEY_EU", "az-eu"},         {"AZURE_API_KEY_CA", "az-ca"},
    {"OPENAI_API_KEY", "sk-openai"},       {"ANTHROPIC_API_KEY", "sk-ant"},
    {"REDIS_HOST", "localhost"},           {"REDIS_PASSWORD", "pw"},
    {"LITELLM_MASTER_KEY", "sk-1234"},     {"DATABASE_URL", "sqlite:///tmp/t.db"}};

// ---------------------------------------------------------------------------------------
// Redis (router_settings.redis_*): parsed, and a bad value is a config error with its path.

TEST(ConfigLoader, RedisSettingsAreParsedAndCheckedWithTheirPaths) {
  auto url = load("router_settings:\n  redis_url: redis://:s3cret@cache.internal:6380/2\n  redis_host: ignored\n");
  ASSERT_TRUE(url.ok()) << all(url.errors);
  EXPECT_EQ(url.config->router_settings.redis.host, "cache.internal");
  EXPECT_EQ(url.config->router_settings.redis.port, 6380);
  EXPECT_EQ(url.config->router_settings.redis.password, "s3cret");
  EXPECT_EQ(url.config->router_settings.redis.db, 2);
  auto keys = load("router_settings:\n  redis_host: r1\n  redis_port: 6390\n  redis_password: pw\n");
  ASSERT_TRUE(keys.ok()) << all(keys.errors);
  EXPECT_EQ(keys.config->router_settings.redis.host, "r1");
  EXPECT_EQ(keys.config->router_settings.redis.port, 6390);
  EXPECT_FALSE(load("model_list: []\n").config->router_settings.redis.configured());
  for (const char* bad : {"router_settings:\n  redis_url: rediss://x:1\n", "router_settings:\n  redis_url: http://x\n",
                          "router_settings:\n  redis_url: redis://x:99999\n", "router_settings:\n  redis_url: redis://x/db\n",
                          "router_settings:\n  redis_url: 'not a url'\n", "router_settings:\n  redis_port: 70000\n  redis_host: x\n",
                          "router_settings:\n  redis_port: 6380\n", "router_settings:\n  redis_host: ''\n",
                          "tollgate_settings:\n  ledger_lease_ms: 10\n", "tollgate_settings:\n  redis_timeout_ms: 0\n",
                          "tollgate_settings:\n  redis_key_prefix: ''\n"}) {
    auto r = load(bad);
    EXPECT_FALSE(r.ok()) << bad;
    ASSERT_FALSE(r.errors.empty()) << bad;
    EXPECT_TRUE(r.errors[0].path.starts_with("router_settings.") || r.errors[0].path.starts_with("tollgate_settings."))
        << bad << " -> " << r.errors[0].path;
  }
}

// Deferred jobs' limits (tollgate_settings): defaults, values, and errors naming their path.
TEST(ConfigLoader, DeferredJobSettingsAreParsedAndChecked) {
  auto def = load("model_list: []\n");
  ASSERT_TRUE(def.ok()) << all(def.errors);
  EXPECT_EQ(def.config->tollgate_settings.max_queued_jobs_per_key, 100);
  EXPECT_EQ(def.config->tollgate_settings.job_retention, std::chrono::milliseconds(7LL * 24 * 3600 * 1000));
  auto set = load("tollgate_settings:\n  max_queued_jobs_per_key: 0\n  job_retention_ms: 86400000\n");
  ASSERT_TRUE(set.ok()) << all(set.errors);
  EXPECT_EQ(set.config->tollgate_settings.max_queued_jobs_per_key, 0);
  EXPECT_EQ(set.config->tollgate_settings.job_retention, std::chrono::milliseconds(86400000));
  for (const auto& [bad, path] : std::vector<std::pair<std::string, std::string>>{
           {"tollgate_settings:\n  max_queued_jobs_per_key: -1\n", "tollgate_settings.max_queued_jobs_per_key"},
           {"tollgate_settings:\n  max_queued_jobs_per_key: 2000000\n", "tollgate_settings.max_queued_jobs_per_key"},
           {"tollgate_settings:\n  max_queued_jobs_per_key: many\n", "tollgate_settings.max_queued_jobs_per_key"},
           {"tollgate_settings:\n  job_retention_ms: 999\n", "tollgate_settings.job_retention_ms"},
           {"tollgate_settings:\n  job_retention_ms: 315360000001\n", "tollgate_settings.job_retention_ms"}}) {
    auto r = load(bad);
    EXPECT_FALSE(r.ok()) << bad;
    ASSERT_FALSE(r.errors.empty()) << bad;
    EXPECT_EQ(r.errors[0].path, path) << bad;
  }
}

// ---------------------------------------------------------------------------------------
// A LiteLLM documentation-style config loads unchanged.

TEST(ConfigLoader, LiteLLMDocsConfigLoadsWithoutErrors) {
  LoadResult r = load_config_file(fixture("litellm_docs.yaml"), env_of(kDocsEnv));
  ASSERT_TRUE(r.ok()) << all(r.errors);
  // LiteLLM's cosmetic keys are silent; the one logging callback Tollgate does not have is named.
  ASSERT_EQ(r.warnings.size(), 1u) << all(r.warnings);
  EXPECT_THAT(only(r.warnings, "litellm_settings.success_callback[0]").message, HasSubstr("'langfuse' is not supported"));

  const Config& c = *r.config;
  // Redis: the shared ledger's server (docs/scale_out.md).
  EXPECT_EQ(c.router_settings.redis.host, "localhost");
  EXPECT_EQ(c.router_settings.redis.password, "pw");
  EXPECT_EQ(c.source_path, fixture("litellm_docs.yaml"));
  ASSERT_EQ(c.model_list.size(), 6u);
  EXPECT_THAT(c.model_groups(),
              ElementsAre("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "gpt-4o-long"));

  const Deployment& eu = c.model_list[0];
  EXPECT_EQ(eu.model_name, "gpt-4o");
  EXPECT_EQ(eu.provider, ProviderKind::azure);
  EXPECT_EQ(eu.provider_prefix, "azure");
  EXPECT_EQ(eu.upstream_model, "gpt-4o-eu");
  EXPECT_EQ(eu.api_base, "https://my-endpoint-europe.openai.azure.com");  // trailing slash dropped
  EXPECT_EQ(eu.api_key, "az-eu");
  EXPECT_EQ(eu.api_version, "2024-08-01-preview");
  EXPECT_EQ(eu.rpm, 6);
  EXPECT_EQ(eu.id, "gpt-4o/0");
  EXPECT_EQ(c.model_list[1].id, "gpt-4o/1");

  const Deployment& oa = c.model_list[2];
  EXPECT_EQ(oa.provider, ProviderKind::openai);
  EXPECT_EQ(oa.upstream_model, "gpt-4o");
  EXPECT_EQ(oa.api_base, "");
  EXPECT_EQ(oa.api_key, "sk-openai");
  EXPECT_EQ(oa.tpm, 200000);
  EXPECT_EQ(oa.timeout, 300s);
  EXPECT_EQ(oa.stream_timeout, 60s);
  EXPECT_EQ(oa.id, "openai-gpt-4o");
  EXPECT_EQ(oa.base_model, "gpt-4o");

  const Deployment& mini = c.model_list[3];
  EXPECT_EQ(mini.input_cost_per_token, "0.00000015");
  EXPECT_EQ(mini.output_cost_per_token, "0.0000006");
  EXPECT_EQ(mini.max_input_tokens, 128000);
  EXPECT_EQ(mini.max_output_tokens, 16384);
  EXPECT_EQ(mini.id, "gpt-4o-mini/0");

  const Deployment& claude = c.model_list[4];
  EXPECT_EQ(claude.provider, ProviderKind::anthropic);
  EXPECT_EQ(claude.upstream_model, "claude-3-5-sonnet-20241022");
  EXPECT_EQ(claude.api_key, "sk-ant");
  EXPECT_THAT(c.model_list[5].access_groups, ElementsAre("beta-models"));

  const LitellmSettings& ls = c.litellm_settings;
  EXPECT_EQ(ls.num_retries, 3);
  EXPECT_EQ(ls.request_timeout, 10s);
  ASSERT_EQ(ls.fallbacks.size(), 1u);
  EXPECT_EQ(ls.fallbacks[0].from, "gpt-4o");
  EXPECT_THAT(ls.fallbacks[0].to, ElementsAre("claude-3-5-sonnet", "gpt-4o-mini"));
  ASSERT_EQ(ls.context_window_fallbacks.size(), 2u);
  EXPECT_EQ(ls.context_window_fallbacks[1].from, "gpt-4o");
  EXPECT_THAT(ls.default_fallbacks, ElementsAre("gpt-4o-mini"));

  EXPECT_EQ(c.router_settings.routing_strategy, RoutingStrategy::usage_based);
  EXPECT_EQ(c.router_settings.cooldown_time, 30s);
  EXPECT_EQ(c.router_settings.allowed_fails, 2);
  EXPECT_EQ(c.general_settings.master_key, "sk-1234");
  EXPECT_EQ(c.general_settings.database_url, "sqlite:///tmp/t.db");
  EXPECT_TRUE(c.general_settings.enforce_fallback_budget);

  // No router_settings.num_retries/timeout: litellm_settings applies (a per-call timeout; the
  // whole request keeps its 600 s default deadline).
  EXPECT_EQ(c.effective_num_retries, 3);
  EXPECT_EQ(c.call_timeout, 10s);
  EXPECT_EQ(c.effective_timeout, 600s);
}

TEST(ConfigLoader, MissingFileIsAnError) {
  LoadResult r = load_config_file(fixture("does-not-exist.yaml"), env_of({}));
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_THAT(r.errors[0].message, HasSubstr("does-not-exist.yaml"));
}

// ---------------------------------------------------------------------------------------
// os.environ/

TEST(ConfigLoader, OsEnvironSubstitutesAnyStringScalar) {
  LoadResult r = load(R"(
model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      api_base: os.environ/BASE
      api_key: os.environ/KEY
      rpm: os.environ/RPM
general_settings:
  master_key: os.environ/MASTER
  disable_spend_logs: os.environ/NO_LOGS
)",
                      {{"BASE", "http://127.0.0.1:9/v1/"}, {"KEY", "k"}, {"RPM", "12"},
                       {"MASTER", "sk-m"}, {"NO_LOGS", "True"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_EQ(r.config->model_list[0].api_base, "http://127.0.0.1:9/v1");
  EXPECT_EQ(r.config->model_list[0].api_key, "k");
  EXPECT_EQ(r.config->model_list[0].rpm, 12);
  EXPECT_EQ(r.config->general_settings.master_key, "sk-m");
  EXPECT_TRUE(r.config->general_settings.disable_spend_logs);
}

TEST(ConfigLoader, MissingEnvironmentVariableIsAWarningInADeploymentAndAnErrorElsewhere) {
  // In a deployment's litellm_params, LiteLLM reads an unset variable as None and loads the
  // file; the deployment then fails when called. Elsewhere (master_key, database_url, ...)
  // an unset secret is an error: Tollgate does not start without what it was told to use.
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/NOT_SET_ANYWHERE
)");
  EXPECT_TRUE(r.ok()) << r.errors.front().to_string();
  Problem p = only(r.warnings, "model_list[0].litellm_params.api_key");
  EXPECT_EQ(p.line, 5);
  EXPECT_THAT(p.message, HasSubstr("NOT_SET_ANYWHERE"));
  EXPECT_THAT(p.to_string(), HasSubstr("model_list[0].litellm_params.api_key (line 5): "));
  EXPECT_EQ(r.config->model_list.at(0).api_key, "");
  // Never filled in from a provider default (OPENAI_API_KEY, api.openai.com): the deployment
  // is unusable and fails when called.
  EXPECT_EQ(r.config->model_list.at(0).provider, ProviderKind::unsupported);
  EXPECT_THAT(r.config->model_list.at(0).unusable, HasSubstr("NOT_SET_ANYWHERE"));

  LoadResult g = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
general_settings:
  master_key: os.environ/NOT_SET_ANYWHERE
)");
  EXPECT_FALSE(g.ok());
  EXPECT_EQ(g.config, nullptr);
  EXPECT_THAT(only(g.errors, "general_settings.master_key").message, HasSubstr("NOT_SET_ANYWHERE"));
}

TEST(ConfigLoader, EnvironmentVariablesSectionFeedsOsEnviron) {
  LoadResult r = load(R"(
model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/MY_KEY
environment_variables:
  MY_KEY: from-file
  PASSTHROUGH: os.environ/OUTER
)",
                      {{"MY_KEY", "from-env"}, {"OUTER", "outer"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_EQ(r.config->model_list[0].api_key, "from-file");  // the file's map wins, as in LiteLLM
  EXPECT_EQ(r.config->environment_variables.at("PASSTHROUGH"), "outer");
}

TEST(ConfigLoader, DefaultOptionsExportEnvironmentVariablesOnSuccessOnly) {
  ::unsetenv("TOLLGATE_CONFIG_TEST_EXPORTED");
  ::unsetenv("TOLLGATE_CONFIG_TEST_NOT_EXPORTED");
  LoadResult bad = load_config_string(
      "environment_variables: {TOLLGATE_CONFIG_TEST_NOT_EXPORTED: x}\nrouter_settings: {timeout: -1}\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(std::getenv("TOLLGATE_CONFIG_TEST_NOT_EXPORTED"), nullptr);
  LoadResult good = load_config_string(
      "environment_variables: {TOLLGATE_CONFIG_TEST_EXPORTED: yes-really}\n"
      "general_settings: {master_key: os.environ/TOLLGATE_CONFIG_TEST_EXPORTED}\n");
  ASSERT_TRUE(good.ok()) << all(good.errors);
  EXPECT_EQ(good.config->general_settings.master_key, "yes-really");
  ASSERT_NE(std::getenv("TOLLGATE_CONFIG_TEST_EXPORTED"), nullptr);
  EXPECT_STREQ(std::getenv("TOLLGATE_CONFIG_TEST_EXPORTED"), "yes-really");
  ::unsetenv("TOLLGATE_CONFIG_TEST_EXPORTED");
}

TEST(ConfigLoader, ProviderKeyDefaultsComeFromTheEnvironment) {
  LoadResult r = load(R"(
model_list:
  - {model_name: a, litellm_params: {model: gpt-4o}}
  - {model_name: b, litellm_params: {model: claude-3-haiku-20240307}}
  - {model_name: c, litellm_params: {model: groq/llama3-8b-8192}}
  - {model_name: d, litellm_params: {model: azure/dep, api_base: "https://x.openai.azure.com"}}
)",
                      {{"OPENAI_API_KEY", "sk-o"}, {"ANTHROPIC_API_KEY", "sk-a"},
                       {"GROQ_API_KEY", "gsk"}, {"AZURE_API_KEY", "az"},
                       {"AZURE_API_VERSION", "2024-02-01"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const auto& m = r.config->model_list;
  EXPECT_EQ(m[0].provider, ProviderKind::openai);
  EXPECT_EQ(m[0].provider_prefix, "openai");
  EXPECT_EQ(m[0].upstream_model, "gpt-4o");
  EXPECT_EQ(m[0].api_key, "sk-o");
  EXPECT_EQ(m[1].provider, ProviderKind::anthropic);
  EXPECT_EQ(m[1].provider_prefix, "anthropic");
  EXPECT_EQ(m[1].api_key, "sk-a");
  EXPECT_EQ(m[2].provider, ProviderKind::openai);
  EXPECT_EQ(m[2].provider_prefix, "groq");
  EXPECT_EQ(m[2].api_base, "https://api.groq.com/openai/v1");
  EXPECT_EQ(m[2].api_key, "gsk");
  EXPECT_EQ(m[3].api_key, "az");
  EXPECT_EQ(m[3].api_version, "2024-02-01");
}

// ---------------------------------------------------------------------------------------
// Providers

TEST(ConfigLoader, OpenAICompatiblePrefixesMapToOpenAI) {
  for (const char* prefix : {"openai_compatible", "hosted_vllm", "vllm", "groq", "together_ai",
                             "deepseek", "mistral", "fireworks_ai", "perplexity", "xai"}) {
    std::string yaml = std::string("model_list:\n  - model_name: m\n    litellm_params:\n") +
                       "      model: " + prefix + "/org/some-model\n" +
                       "      api_base: http://127.0.0.1:8000/v1\n";
    LoadResult r = load(yaml);
    ASSERT_TRUE(r.ok()) << prefix << "\n" << all(r.errors);
    EXPECT_EQ(r.config->model_list[0].provider, ProviderKind::openai) << prefix;
    EXPECT_EQ(r.config->model_list[0].provider_prefix, prefix);
    EXPECT_EQ(r.config->model_list[0].upstream_model, "org/some-model") << prefix;
  }
}

TEST(ConfigLoader, UnsupportedProviderAndMissingApiBaseAreWarningsAndTheDeploymentsAreKept) {
  LoadResult r = load(R"(model_list:
  - model_name: a
    litellm_params:
      model: replicate/meta/llama-2-7b
  - model_name: b
    litellm_params:
      model: hosted_vllm/llama
  - model_name: c
    litellm_params:
      model: azure/gpt
  - model_name: d
    litellm_params:
      model: openai/gpt-4o
      api_base: ftp://nope
  - model_name: e
    litellm_params:
      model: azure/
)");
  // As LiteLLM: the file loads; each of these deployments fails only when it is called.
  EXPECT_TRUE(r.ok()) << r.errors.front().to_string();
  EXPECT_THAT(only(r.warnings, "model_list[0].litellm_params.model").message, HasSubstr("\"replicate\" is not supported"));
  EXPECT_THAT(only(r.warnings, "model_list[1].litellm_params.api_base").message, HasSubstr("api_base is required"));
  EXPECT_THAT(only(r.warnings, "model_list[2].litellm_params.api_base").message, HasSubstr("api_base is required"));
  EXPECT_THAT(only(r.warnings, "model_list[3].litellm_params.api_base").message, HasSubstr("http://"));
  EXPECT_THAT(only(r.warnings, "model_list[4].litellm_params.model").message, HasSubstr("empty"));
  ASSERT_EQ(r.config->model_list.size(), 5u);
  for (const auto& d : r.config->model_list) EXPECT_EQ(d.provider, ProviderKind::unsupported) << d.model_name;
  EXPECT_TRUE(r.config->model_list[0].unusable.empty()) << "an unimplemented provider: unsupported_provider";
  EXPECT_FALSE(r.config->model_list[1].unusable.empty()) << "a misconfigured one: deployment_misconfigured";
}

TEST(ConfigLoader, AwsDeploymentsReadAwsParamsElseTheAwsEnvironment) {
  LoadResult r = load(R"(model_list:
  - model_name: a
    litellm_params:
      model: bedrock/converse/us.anthropic.claude-3-5-sonnet-20241022-v2:0
      aws_access_key_id: AKIDPARAM
      aws_secret_access_key: os.environ/MY_SECRET
      aws_region_name: eu-west-1
      aws_bedrock_runtime_endpoint: http://127.0.0.1:9/
  - model_name: b
    litellm_params:
      model: sagemaker_chat/my-endpoint
  - model_name: c
    litellm_params:
      model: bedrock/amazon.nova-pro-v1:0
)",
                      {{"MY_SECRET", "s3cr3t"}, {"AWS_ACCESS_KEY_ID", "AKIDENV"}, {"AWS_SECRET_ACCESS_KEY", "envsecret"},
                       {"AWS_SESSION_TOKEN", "tok"}, {"AWS_DEFAULT_REGION", "us-west-2"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front().to_string();
  const auto& m = r.config->model_list;
  EXPECT_EQ(m[0].provider, ProviderKind::bedrock);
  EXPECT_EQ(m[0].upstream_model, "us.anthropic.claude-3-5-sonnet-20241022-v2:0") << "LiteLLM's converse/ route prefix is dropped";
  EXPECT_EQ(m[0].cloud.aws_access_key_id, "AKIDPARAM");
  EXPECT_EQ(m[0].cloud.aws_secret_access_key, "s3cr3t");
  EXPECT_EQ(m[0].cloud.aws_session_token, "") << "the environment's token belongs to the environment's key";
  EXPECT_EQ(m[0].cloud.aws_region_name, "eu-west-1");
  EXPECT_EQ(m[0].api_base, "http://127.0.0.1:9");
  EXPECT_EQ(m[1].provider, ProviderKind::sagemaker);
  EXPECT_EQ(m[1].provider_prefix, "sagemaker_chat");
  EXPECT_EQ(m[1].cloud.aws_access_key_id, "AKIDENV");
  EXPECT_EQ(m[1].cloud.aws_session_token, "tok");
  EXPECT_EQ(m[1].cloud.aws_region_name, "us-west-2");
  EXPECT_EQ(m[2].upstream_model, "amazon.nova-pro-v1:0");

  LoadResult bare = load("model_list:\n  - model_name: x\n    litellm_params:\n      model: bedrock/amazon.nova-pro-v1:0\n");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare.config->model_list.at(0).provider, ProviderKind::bedrock) << "kept callable: each call fails 401";
  EXPECT_THAT(only(bare.warnings, "model_list[0].litellm_params.model").message,
              HasSubstr("AWS credentials missing: aws_access_key_id (AWS_ACCESS_KEY_ID), aws_secret_access_key"));
}

TEST(ConfigLoader, CustomLlmProviderActsAsThePrefix) {
  LoadResult r = load(R"(
model_list:
  - model_name: m
    litellm_params: {model: my-model, custom_llm_provider: hosted_vllm, api_base: "http://h:1/v1"}
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_EQ(r.config->model_list[0].provider_prefix, "hosted_vllm");
  EXPECT_EQ(r.config->model_list[0].upstream_model, "my-model");
}

TEST(ConfigLoader, RequiredDeploymentFields) {
  LoadResult r = load(R"(model_list:
  - litellm_params: {model: openai/x}
  - model_name: b
  - model_name: c
    litellm_params: {api_key: k}
  - just-a-string
)");
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(only(r.errors, "model_list[0].model_name").message, HasSubstr("required"));
  EXPECT_THAT(only(r.errors, "model_list[1].litellm_params").message, HasSubstr("required"));
  EXPECT_THAT(only(r.errors, "model_list[2].litellm_params.model").message, HasSubstr("required"));
  Problem p = only(r.errors, "model_list[3]");
  EXPECT_EQ(p.line, 6);
}

// ---------------------------------------------------------------------------------------
// Unknown keys and wrong types

TEST(ConfigLoader, UnknownKeysWarnWithPathAndLine) {
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      temprature: 0.2
    model_info:
      mode: chat
      favourite_colour: blue
litellm_settings:
  drop_params: true
  callbacks: ["prometheus"]
  mystery_knob: 1
router_settings:
  disable_cooldowns: true
general_settings:
  alerting: ["slack"]
  proxy_batch_write_at: 60
tollgate_settings:
  max_request_body_byte: 10
not_a_section: {}
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_EQ(only(r.warnings, "model_list[0].litellm_params.temprature").line, 5);
  EXPECT_EQ(only(r.warnings, "model_list[0].model_info.favourite_colour").line, 8);
  EXPECT_EQ(only(r.warnings, "litellm_settings.mystery_knob").line, 12);
  EXPECT_EQ(only(r.warnings, "router_settings.disable_cooldowns").line, 14);
  // Slack alerting is supported; its URL comes from SLACK_WEBHOOK_URL, which is not set here.
  Problem alerting = only(r.warnings, "general_settings.alerting");
  EXPECT_EQ(alerting.line, 16);
  EXPECT_THAT(alerting.message, HasSubstr("SLACK_WEBHOOK_URL"));
  only(r.warnings, "general_settings.proxy_batch_write_at");
  EXPECT_THAT(only(r.warnings, "tollgate_settings.max_request_body_byte").message,
              HasSubstr("unknown key"));
  EXPECT_EQ(only(r.warnings, "not_a_section").line, 20);
  EXPECT_EQ(r.warnings.size(), 8u) << all(r.warnings);  // drop_params, callbacks, mode: silent
}

TEST(ConfigLoader, WrongTypesAreErrorsWithPathAndLine) {
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      rpm: "abc"
      tpm: 1.5
      timeout: soon
      input_cost_per_token: -0.1
litellm_settings:
  num_retries: -1
  fallbacks: "gpt-4o-mini"
  request_timeout: [1]
router_settings:
  routing_strategy: cost-based-routing
  cooldown_time: -3
general_settings:
  enforce_fallback_budget: maybe
tollgate_settings:
  header_read_timeout_ms: 0
  worker_threads: many
)");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.config, nullptr);
  Problem rpm = only(r.errors, "model_list[0].litellm_params.rpm");
  EXPECT_EQ(rpm.line, 5);
  EXPECT_THAT(rpm.message, HasSubstr("expected an integer"));
  EXPECT_EQ(only(r.errors, "model_list[0].litellm_params.tpm").line, 6);
  EXPECT_EQ(only(r.errors, "model_list[0].litellm_params.timeout").line, 7);
  EXPECT_THAT(only(r.errors, "model_list[0].litellm_params.input_cost_per_token").message,
              HasSubstr("negative"));
  Problem retries = only(r.errors, "litellm_settings.num_retries");
  EXPECT_EQ(retries.line, 10);
  EXPECT_THAT(retries.message, HasSubstr("at least 0"));
  Problem fb = only(r.errors, "litellm_settings.fallbacks");
  EXPECT_EQ(fb.line, 11);
  EXPECT_THAT(fb.message, HasSubstr("expected a list"));
  EXPECT_EQ(only(r.errors, "litellm_settings.request_timeout").line, 12);
  EXPECT_THAT(only(r.errors, "router_settings.routing_strategy").message,
              HasSubstr("cost-based-routing"));
  only(r.errors, "router_settings.cooldown_time");
  EXPECT_EQ(only(r.errors, "general_settings.enforce_fallback_budget").line, 17);
  only(r.errors, "tollgate_settings.header_read_timeout_ms");
  only(r.errors, "tollgate_settings.worker_threads");
  EXPECT_EQ(r.errors.size(), 12u) << all(r.errors);
}

TEST(ConfigLoader, InvalidYamlReportsTheLine) {
  LoadResult r = load("model_list:\n  - model_name: [unclosed\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_GT(r.errors[0].line, 0);
  EXPECT_THAT(r.errors[0].message, HasSubstr("invalid YAML"));
}

TEST(ConfigLoader, DuplicateKeysAreErrors) {
  LoadResult r = load("general_settings:\n  master_key: sk-a\n  master_key: sk-b\n");
  EXPECT_EQ(only(r.errors, "general_settings.master_key").line, 3);
}

TEST(ConfigLoader, YamlMergeKeysAreExpanded) {
  LoadResult r = load(R"(
shared: &shared
  api_base: http://127.0.0.1:4010/v1
  api_key: sk-shared
  rpm: 10
model_list:
  - model_name: a
    litellm_params:
      <<: *shared
      model: openai/a
      rpm: 20
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const Deployment& d = r.config->model_list[0];
  EXPECT_EQ(d.api_base, "http://127.0.0.1:4010/v1");
  EXPECT_EQ(d.api_key, "sk-shared");
  EXPECT_EQ(d.rpm, 20);  // explicit keys win over merged ones
  EXPECT_EQ(only(r.warnings, "shared").line, 2);  // the anchor holder itself is an unknown key
}

TEST(ConfigLoader, TopLevelMustBeAMapAndEmptyIsAllowed) {
  EXPECT_FALSE(load("- a\n- b\n").ok());
  LoadResult empty = load("");
  ASSERT_TRUE(empty.ok()) << all(empty.errors);
  only(empty.warnings, "model_list");
  LoadResult no_models = load("model_list: []\n");
  ASSERT_TRUE(no_models.ok());
  EXPECT_THAT(only(no_models.warnings, "model_list").message, HasSubstr("empty"));
  EXPECT_TRUE(no_models.config->model_groups().empty());
}

// ---------------------------------------------------------------------------------------
// Fallbacks

constexpr const char* kTwoGroups = R"(model_list:
  - {model_name: a, litellm_params: {model: openai/a}}
  - {model_name: b, litellm_params: {model: openai/b}}
)";

TEST(ConfigLoader, FallbackToUnknownGroupIsAnError) {
  LoadResult r = load(std::string(kTwoGroups) + R"(litellm_settings:
  fallbacks: [{"a": ["b", "nope"]}]
  context_window_fallbacks: [{"ghost": ["a"]}]
  default_fallbacks: ["zzz"]
)");
  EXPECT_FALSE(r.ok());
  Problem p = only(r.errors, "litellm_settings.fallbacks[0].a[1]");
  EXPECT_EQ(p.line, 5);
  EXPECT_THAT(p.message, HasSubstr("\"nope\" is not in model_list"));
  only(r.errors, "litellm_settings.context_window_fallbacks[0].ghost");
  only(r.errors, "litellm_settings.default_fallbacks[0]");
  EXPECT_EQ(r.errors.size(), 3u) << all(r.errors);
}

TEST(ConfigLoader, FallbackShapes) {
  LoadResult r = load(std::string(kTwoGroups) + R"(litellm_settings:
  fallbacks: [{"*": ["b"]}]
  content_policy_fallbacks: {"b": [], "a": ["b"]}
  context_window_fallbacks:
    - a: [b]
      b: []
)");
  // (b: [a] anywhere here would close a circular chain with a: [b]: policy_test.cpp.)
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const LitellmSettings& s = r.config->litellm_settings;
  ASSERT_EQ(s.fallbacks.size(), 1u);
  EXPECT_EQ(s.fallbacks[0].from, "*");
  ASSERT_EQ(s.content_policy_fallbacks.size(), 2u);
  EXPECT_EQ(s.content_policy_fallbacks[1].from, "a");
  EXPECT_THAT(s.content_policy_fallbacks[1].to, ElementsAre("b"));
  ASSERT_EQ(s.context_window_fallbacks.size(), 2u);
  EXPECT_TRUE(s.context_window_fallbacks[1].to.empty());

  LoadResult star_target = load(std::string(kTwoGroups) + "litellm_settings:\n  fallbacks: [{a: ['*']}]\n");
  EXPECT_FALSE(star_target.ok());
  LoadResult not_list = load(std::string(kTwoGroups) + "litellm_settings:\n  fallbacks: [{a: b}]\n");
  EXPECT_THAT(only(not_list.errors, "litellm_settings.fallbacks[0].a").message,
              HasSubstr("expected a list"));
}

TEST(ConfigLoader, RouterSettingsFallbacksLandInLitellmSettings) {
  LoadResult r = load(std::string(kTwoGroups) + R"(router_settings:
  fallbacks: [{a: [b]}]
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  ASSERT_EQ(r.config->litellm_settings.fallbacks.size(), 1u);
  EXPECT_EQ(r.config->litellm_settings.fallbacks[0].from, "a");
}

// ---------------------------------------------------------------------------------------
// Ids

TEST(ConfigLoader, DeploymentIdsAreGeneratedStableAndUnique) {
  LoadResult r = load(R"(model_list:
  - {model_name: a, litellm_params: {model: openai/x}}
  - {model_name: b, litellm_params: {model: openai/x}}
  - {model_name: a, litellm_params: {model: openai/y}, model_info: {id: mine}}
  - {model_name: a, litellm_params: {model: openai/z}}
  - {model_name: b, litellm_params: {model: openai/z}, model_info: {id: "a/3"}}
  - {model_name: a, litellm_params: {model: openai/w}}
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  std::vector<std::string> ids;
  for (const Deployment& d : r.config->model_list) ids.push_back(d.id);
  EXPECT_THAT(ids, ElementsAre("a/0", "b/0", "mine", "a/2", "a/3", "a/3~2"));
}

TEST(ConfigLoader, DuplicateModelInfoIdIsAnError) {
  LoadResult r = load(R"(model_list:
  - model_name: a
    litellm_params: {model: openai/x}
    model_info: {id: same}
  - model_name: b
    litellm_params: {model: openai/y}
    model_info:
      id: same
)");
  EXPECT_FALSE(r.ok());
  Problem p = only(r.errors, "model_list[1].model_info.id");
  EXPECT_EQ(p.line, 8);
  EXPECT_THAT(p.message, HasSubstr("duplicate"));
}

// ---------------------------------------------------------------------------------------
// Prices and durations

TEST(NormalizeDecimal, PlainAndScientific) {
  EXPECT_EQ(normalize_decimal("0.0000025"), "0.0000025");
  EXPECT_EQ(normalize_decimal("0.00000250"), "0.00000250");  // as written
  EXPECT_EQ(normalize_decimal("2.5e-06"), "0.0000025");
  EXPECT_EQ(normalize_decimal("2.5E-6"), "0.0000025");
  EXPECT_EQ(normalize_decimal("1e-6"), "0.000001");
  EXPECT_EQ(normalize_decimal("1.50e-7"), "0.00000015");
  EXPECT_EQ(normalize_decimal("1E3"), "1000");
  EXPECT_EQ(normalize_decimal("12.345e1"), "123.45");
  EXPECT_EQ(normalize_decimal("3.75e+2"), "375");
  EXPECT_EQ(normalize_decimal("0e0"), "0");
  EXPECT_EQ(normalize_decimal("15"), "15");
  EXPECT_EQ(normalize_decimal(".5"), "0.5");
  EXPECT_EQ(normalize_decimal("+3"), "3");
  EXPECT_EQ(normalize_decimal("3."), "3");
  std::string why;
  EXPECT_EQ(normalize_decimal("-1e-6", &why), std::nullopt);
  EXPECT_THAT(why, HasSubstr("negative"));
  for (const char* bad : {"", ".", "abc", ".inf", "nan", "1e", "1e400", "1.2.3", "0x10", "1,5"})
    EXPECT_EQ(normalize_decimal(bad), std::nullopt) << bad;
}

TEST(ConfigLoader, EveryLitellmCostKeyIsLoadedFromEitherSection) {
  // Each flat cost key, written in litellm_params of one deployment and in model_info of another.
  std::string yaml = "model_list:\n";
  for (const char* section : {"litellm_params", "model_info"}) {
    yaml += std::string("  - model_name: m\n    litellm_params:\n      model: openai/gpt-4o\n");
    if (std::string(section) == "model_info") yaml += "    model_info:\n";
    int i = 1;
    for (const CostKey& k : kDeploymentCostKeys) {
      yaml += "      " + std::string(k.key) + ": " + std::to_string(i++) + ".5e-07\n";
    }
  }
  LoadResult r = load(yaml);
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);  // no "not supported" any more
  ASSERT_EQ(r.config->model_list.size(), 2u);
  for (const Deployment& d : r.config->model_list) {
    int i = 1;
    for (const CostKey& k : kDeploymentCostKeys) {
      EXPECT_EQ(d.*k.field, normalize_decimal(std::to_string(i++) + ".5e-07")) << k.key;
    }
    EXPECT_EQ(d.input_cost_per_token, "0.00000015");
    EXPECT_EQ(d.cache_read_input_token_cost_flex, "0.00000165");
  }
}

TEST(ConfigLoader, CostKeysFromLitellmParamsWinKeyByKey) {
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: anthropic/claude-sonnet-4-5
      cache_read_input_token_cost: "3e-7"
      input_cost_per_token_above_200k_tokens: 6e-06
    model_info:
      cache_read_input_token_cost: 1e-7
      cache_creation_input_token_cost: 3.75e-06
      input_cost_per_token_above_200k_tokens: 1e-05
      output_cost_per_token_above_200k_tokens: 2.25e-05
      search_context_cost_per_query:
        search_context_size_low: 0.005
        search_context_size_medium: 0.01
        search_context_size_high: 0.02
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
  const Deployment& d = r.config->model_list[0];
  EXPECT_EQ(d.cache_read_input_token_cost, "0.0000003");
  EXPECT_EQ(d.cache_creation_input_token_cost, "0.00000375");
  EXPECT_EQ(d.web_search_cost_per_call, "0.01");
  EXPECT_FALSE(d.input_cost_per_token.has_value());
  ASSERT_TRUE(d.long_prompt_tier_cost.has_value());
  EXPECT_EQ(d.long_prompt_tier_cost->above_input_tokens, 200'000);
  EXPECT_EQ(d.long_prompt_tier_cost->input_cost_per_token, "0.000006");
  EXPECT_EQ(d.long_prompt_tier_cost->output_cost_per_token, "0.0000225");
  EXPECT_FALSE(d.long_prompt_tier_cost->cache_read_input_token_cost.has_value());
}

TEST(ConfigLoader, BadCostValuesAreErrorsWithPathAndLine) {
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      cache_read_input_token_cost: -1e-7
      cache_creation_input_token_cost: cheap
      output_cost_per_reasoning_token: [1]
      input_cost_per_token_above_200k_tokens: "-0.000006"
    model_info:
      input_cost_per_token_priority: "1e-6x"
      output_cost_per_token_above_128k_tokens: 0.00001
      search_context_cost_per_query: {search_context_size_medium: lots, size_xl: 1}
)");
  EXPECT_FALSE(r.ok());
  Problem read = only(r.errors, "model_list[0].litellm_params.cache_read_input_token_cost");
  EXPECT_EQ(read.line, 5);
  EXPECT_THAT(read.message, HasSubstr("negative"));
  Problem write = only(r.errors, "model_list[0].litellm_params.cache_creation_input_token_cost");
  EXPECT_EQ(write.line, 6);
  EXPECT_THAT(write.message, HasSubstr("expected a non-negative decimal number"));
  EXPECT_EQ(only(r.errors, "model_list[0].litellm_params.output_cost_per_reasoning_token").line, 7);
  EXPECT_EQ(only(r.errors, "model_list[0].litellm_params.input_cost_per_token_above_200k_tokens").line, 8);
  EXPECT_EQ(only(r.errors, "model_list[0].model_info.input_cost_per_token_priority").line, 10);
  EXPECT_EQ(only(r.errors, "model_list[0].model_info.search_context_cost_per_query.search_context_size_medium").line, 12);
  EXPECT_THAT(only(r.warnings, "model_list[0].model_info.search_context_cost_per_query.size_xl").message,
              HasSubstr("unknown key"));
  // The 200k key did not parse, so the 128k one stands alone: no threshold conflict reported.
  EXPECT_EQ(r.errors.size(), 6u) << all(r.errors);
}

TEST(ConfigLoader, TierKeysOfOneDeploymentNameOneThreshold) {
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      input_cost_per_token_above_200k_tokens: 6e-06
    model_info:
      output_cost_per_token_above_128k_tokens: 1e-05
)");
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u) << all(r.errors);
  EXPECT_THAT(r.errors[0].message, HasSubstr("one threshold"));
  EXPECT_THAT(r.errors[0].path, HasSubstr("_above_"));
  // Keys that only look like tier keys are not cost keys.
  LoadResult other = load(R"(model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-4o, input_cost_per_token_above_200k_tokens_priority: 1e-05}
)");
  ASSERT_TRUE(other.ok()) << all(other.errors);
  EXPECT_THAT(only(other.warnings, "model_list[0].litellm_params.input_cost_per_token_above_200k_tokens_priority").message,
              HasSubstr("not supported"));
}

TEST(ConfigLoader, TierCostKeyNames) {
  auto k = parse_tier_cost_key("cache_creation_input_token_cost_above_200k_tokens");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->field, TierCostField::cache_creation_input_token_cost);
  EXPECT_EQ(k->above_input_tokens, 200'000);
  EXPECT_EQ(parse_tier_cost_key("output_cost_per_token_above_272k_tokens")->above_input_tokens, 272'000);
  for (const char* no : {"input_cost_per_token", "input_cost_per_token_above_k_tokens", "input_cost_per_token_above_0k_tokens",
                         "input_cost_per_token_above_-5k_tokens", "input_cost_per_token_above_200k_tokens_priority",
                         "cache_creation_input_token_cost_above_1hr", "input_cost_per_token_above_9999999999k_tokens",
                         "output_cost_per_reasoning_token_above_200k_tokens"}) {
    EXPECT_FALSE(parse_tier_cost_key(no).has_value()) << no;
  }
}

TEST(ConfigLoader, PriceFileSetting) {
  LoadResult r = load("model_list: []\ntollgate_settings:\n  data_dir: d\n  price_file: prices/litellm.json\n");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_EQ(r.config->tollgate_settings.price_file, "prices/litellm.json");
  EXPECT_EQ(r.config->tollgate_settings.price_file_line, 4);
  EXPECT_EQ(load("model_list: []\n").config->tollgate_settings.price_file, "");
  LoadResult empty = load("tollgate_settings:\n  price_file: \"\"\n");
  EXPECT_FALSE(empty.ok());
  EXPECT_EQ(only(empty.errors, "tollgate_settings.price_file").line, 2);
  LoadResult list = load("tollgate_settings:\n  price_file: [a]\n");
  EXPECT_THAT(only(list.errors, "tollgate_settings.price_file").message, HasSubstr("expected a string"));
}

TEST(ConfigLoader, PricesKeepDecimalTextAndLitellmParamsWin) {
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o
      input_cost_per_token: 2.5e-06
      output_cost_per_token: "1e-05"
    model_info:
      input_cost_per_token: 0.5
      output_cost_per_token: 0.7
  - model_name: n
    litellm_params: {model: openai/gpt-4o}
    model_info: {input_cost_per_token: 0.000003, output_cost_per_token: 0}
litellm_settings:
  max_budget: 100
  max_end_user_budget: 1.5e1
  budget_duration: 30d
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_EQ(r.config->model_list[0].input_cost_per_token, "0.0000025");
  EXPECT_EQ(r.config->model_list[0].output_cost_per_token, "0.00001");
  EXPECT_EQ(r.config->model_list[1].input_cost_per_token, "0.000003");
  EXPECT_EQ(r.config->model_list[1].output_cost_per_token, "0");
  EXPECT_EQ(r.config->litellm_settings.max_budget, "100");
  EXPECT_EQ(r.config->litellm_settings.max_end_user_budget, "15");
  EXPECT_EQ(r.config->litellm_settings.budget_duration, "30d");

  LoadResult bad = load("litellm_settings:\n  budget_duration: monthly\n");
  only(bad.errors, "litellm_settings.budget_duration");
}

TEST(ConfigLoader, DurationsAreSecondsConvertedToMilliseconds) {
  LoadResult r = load(R"(model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-4o, timeout: 0.5, stream_timeout: 2.25}
router_settings:
  cooldown_time: 0
  retry_after: 1.0005
  timeout: 45
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_EQ(r.config->model_list[0].timeout, 500ms);
  EXPECT_EQ(r.config->model_list[0].stream_timeout, 2250ms);
  EXPECT_EQ(r.config->router_settings.cooldown_time, 0ms);
  EXPECT_EQ(r.config->router_settings.retry_after, 1001ms);  // rounded half up
  EXPECT_EQ(r.config->router_settings.timeout, 45s);
  EXPECT_EQ(r.config->call_timeout, 45s);

  LoadResult zero = load("litellm_settings:\n  request_timeout: 0\n");
  EXPECT_THAT(only(zero.errors, "litellm_settings.request_timeout").message,
              HasSubstr("greater than 0"));
}

TEST(ConfigLoader, EffectiveRetriesAndTimeoutPrecedence) {
  LoadResult defaults = load("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults.config->effective_num_retries, 2);
  EXPECT_EQ(defaults.config->effective_timeout, 600s);
  EXPECT_FALSE(defaults.config->call_timeout);

  LoadResult litellm = load("litellm_settings: {num_retries: 0, request_timeout: 20}\n");
  ASSERT_TRUE(litellm.ok());
  EXPECT_EQ(litellm.config->effective_num_retries, 0);
  EXPECT_EQ(litellm.config->call_timeout, 20s);  // per call, as in LiteLLM
  EXPECT_EQ(litellm.config->effective_timeout, 600s);

  LoadResult router = load(
      "litellm_settings: {num_retries: 5, request_timeout: 20}\n"
      "router_settings: {num_retries: 1, timeout: 7, max_fallbacks: 2, routing_strategy: least-busy}\n");
  ASSERT_TRUE(router.ok()) << all(router.errors);
  EXPECT_EQ(router.config->effective_num_retries, 1);
  EXPECT_EQ(router.config->call_timeout, 7s);
  EXPECT_EQ(router.config->effective_timeout, 600s);
  // A per-call timeout longer than the default deadline lengthens the deadline with it.
  LoadResult slow = load("router_settings: {timeout: 900}\n");
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(slow.config->effective_timeout, 900s);
  EXPECT_EQ(router.config->router_settings.num_retries, 1);
  EXPECT_EQ(router.config->router_settings.max_fallbacks, 2);
  EXPECT_EQ(router.config->router_settings.routing_strategy, RoutingStrategy::least_busy);
}

TEST(ConfigLoader, StreamTimeoutPrecedenceIsLiteLLMs) {
  // LiteLLM (Router._get_stream_timeout, then _get_timeout): a stream's deployment
  // stream_timeout, then router_settings.stream_timeout, then the deployment's timeout, then
  // router_settings.timeout; a call that does not stream never reads a stream_timeout.
  LoadResult r = load(
      "model_list:\n"
      "  - model_name: a\n"
      "    litellm_params: {model: openai/a, timeout: 600}\n"
      "  - model_name: b\n"
      "    litellm_params: {model: openai/b, timeout: 600, stream_timeout: 3}\n"
      "  - model_name: c\n"
      "    litellm_params: {model: openai/c}\n"
      "router_settings: {timeout: 30, stream_timeout: 10}\n");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const auto& c = *r.config;
  EXPECT_EQ(c.stream_call_timeout, 10s);
  EXPECT_EQ(c.call_timeout_for(c.model_list[0], true), 10s);
  EXPECT_EQ(c.call_timeout_for(c.model_list[0], false), 600s);
  EXPECT_EQ(c.call_timeout_for(c.model_list[1], true), 3s);
  EXPECT_EQ(c.call_timeout_for(c.model_list[1], false), 600s);
  EXPECT_EQ(c.call_timeout_for(c.model_list[2], true), 10s);
  EXPECT_EQ(c.call_timeout_for(c.model_list[2], false), 30s);
  LoadResult none = load("model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.config->call_timeout_for(none.config->model_list[0], true));
  EXPECT_FALSE(load("router_settings: {stream_timeout: 0}\n").ok()) << "seconds > 0";
}

// ---------------------------------------------------------------------------------------
// tollgate_settings and general_settings

TEST(ConfigLoader, TollgateSettingsDefaults) {
  LoadResult r = load("");
  ASSERT_TRUE(r.ok());
  const TollgateSettings& t = r.config->tollgate_settings;
  EXPECT_EQ(t.max_request_body_bytes, 8 * 1024 * 1024);
  EXPECT_EQ(t.header_read_timeout, 10s);
  EXPECT_TRUE(t.tls_verify);
  EXPECT_EQ(t.data_dir, "./data");
  EXPECT_EQ(t.drain_timeout, 30s);
}

TEST(ConfigLoader, DrainTimeout) {
  EXPECT_EQ(load("tollgate_settings:\n  drain_timeout_ms: 500\n").config->tollgate_settings.drain_timeout, 500ms);
  // 0 = requests in flight are cut at once; one hour is the most.
  EXPECT_EQ(load("tollgate_settings:\n  drain_timeout_ms: 0\n").config->tollgate_settings.drain_timeout, 0ms);
  EXPECT_EQ(load("tollgate_settings:\n  drain_timeout_ms: 3600000\n").config->tollgate_settings.drain_timeout,
            3600000ms);
  LoadResult negative = load("tollgate_settings:\n  drain_timeout_ms: -1\n");
  EXPECT_FALSE(negative.ok());
  EXPECT_EQ(only(negative.errors, "tollgate_settings.drain_timeout_ms").line, 2);
  LoadResult absurd = load("tollgate_settings:\n  drain_timeout_ms: 3600001\n");
  EXPECT_FALSE(absurd.ok());
  EXPECT_THAT(only(absurd.errors, "tollgate_settings.drain_timeout_ms").message, HasSubstr("at most 3600000"));
  LoadResult text = load("tollgate_settings:\n  drain_timeout_ms: soon\n");
  EXPECT_THAT(only(text.errors, "tollgate_settings.drain_timeout_ms").message, HasSubstr("expected an integer"));
}

TEST(ConfigLoader, TollgateSettingsAllFields) {
  LoadResult r = load(R"(tollgate_settings:
  max_request_body_bytes: 1048576
  max_upstream_body_bytes: 2097152
  header_read_timeout_ms: 1500
  body_read_timeout_ms: 2500
  idle_timeout_ms: 3500
  connect_timeout_ms: 450
  worker_threads: 2
  ca_file: /etc/ssl/mine.pem
  tls_verify: false
  max_idle_connections_per_upstream: 8
  data_dir: os.environ/DATA
general_settings:
  enforce_fallback_budget: false
  enforce_fallback_model_access: no
  disable_spend_logs: true
)",
                      {{"DATA", "/var/lib/tollgate"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const TollgateSettings& t = r.config->tollgate_settings;
  EXPECT_EQ(t.max_request_body_bytes, 1048576);
  EXPECT_EQ(t.max_upstream_body_bytes, 2097152);
  EXPECT_EQ(t.header_read_timeout, 1500ms);
  EXPECT_EQ(t.body_read_timeout, 2500ms);
  EXPECT_EQ(t.idle_timeout, 3500ms);
  EXPECT_EQ(t.connect_timeout, 450ms);
  EXPECT_EQ(t.worker_threads, 2);
  EXPECT_EQ(t.ca_file, "/etc/ssl/mine.pem");
  EXPECT_FALSE(t.tls_verify);
  EXPECT_EQ(t.max_idle_connections_per_upstream, 8);
  EXPECT_EQ(t.data_dir, "/var/lib/tollgate");
  only(r.warnings, "tollgate_settings.tls_verify");  // disabling verification is called out
  EXPECT_FALSE(r.config->general_settings.enforce_fallback_budget);
  EXPECT_FALSE(r.config->general_settings.enforce_fallback_model_access);
  EXPECT_TRUE(r.config->general_settings.disable_spend_logs);
}

TEST(Problem, ToString) {
  EXPECT_EQ((Problem{"model_list[2].litellm_params.rpm", 14, "expected an integer"}.to_string()),
            "model_list[2].litellm_params.rpm (line 14): expected an integer");
  EXPECT_EQ((Problem{"a.b", 0, "m"}.to_string()), "a.b: m");
  EXPECT_EQ((Problem{"", 3, "m"}.to_string()), "(line 3): m");
  EXPECT_EQ((Problem{"", 0, "m"}.to_string()), "m");
}

// ---------------------------------------------------------------------------------------
// Bundled examples

TEST(Examples, SimulatorConfigLoads) {
  // The simulator example needs no environment at all: it is the embedded default.
  LoadResult r = load_config_file(example("simulator.yaml"), env_of({}));
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
  const Config& c = *r.config;
  EXPECT_THAT(c.model_groups(), ElementsAre("gpt-4o-mini", "gpt-4o", "claude-sonnet"));
  EXPECT_EQ(c.general_settings.master_key, "sk-tollgate-dev");
  for (const Deployment& d : c.model_list) {
    if (d.provider == ProviderKind::anthropic) EXPECT_EQ(d.api_base, "http://127.0.0.1:4010");
    else EXPECT_EQ(d.api_base, "http://127.0.0.1:4010/v1");
    EXPECT_TRUE(d.input_cost_per_token.has_value()) << d.id;
  }
}

TEST(Examples, ProviderConfigsLoad) {
  LoadResult oa = load_config_file(example("openai.yaml"), env_of({{"OPENAI_API_KEY", "sk-x"},
                                                                   {"TOLLGATE_MASTER_KEY", "sk-m"}}));
  ASSERT_TRUE(oa.ok()) << all(oa.errors);
  EXPECT_TRUE(oa.warnings.empty()) << all(oa.warnings);
  EXPECT_EQ(oa.config->model_list[0].api_key, "sk-x");
  LoadResult an =
      load_config_file(example("anthropic.yaml"), env_of({{"ANTHROPIC_API_KEY", "sk-ant"},
                                                          {"TOLLGATE_MASTER_KEY", "sk-m"}}));
  ASSERT_TRUE(an.ok()) << all(an.errors);
  EXPECT_TRUE(an.warnings.empty()) << all(an.warnings);
  EXPECT_EQ(an.config->model_list[0].provider, ProviderKind::anthropic);
}


// What serve cannot open is a config error with its YAML path (not a start failure); what it can
// open (SQLite, PostgreSQL) passes.
TEST(ConfigLoader, DatabaseUrlOfAnotherEngineOrUnparsableIsAConfigErrorNotAStartFailure) {
  auto r = load("model_list: []\ngeneral_settings:\n  database_url: mysql://u:p@db/tollgate\n");
  const auto p = only(r.errors, "general_settings.database_url");
  EXPECT_NE(p.message.find("mysql://"), std::string::npos) << p.message;
  EXPECT_EQ(p.line, 3);
  auto bad = load("model_list: []\ngeneral_settings:\n  database_url: postgresql://u:secret@db:port/x\n");
  const auto q = only(bad.errors, "general_settings.database_url");
  EXPECT_EQ(q.line, 3);
  EXPECT_EQ(q.message.find("secret"), std::string::npos) << "no password in messages: " << q.message;
  EXPECT_FALSE(load("model_list: []\ngeneral_settings:\n  database_url: 'sqlite://'\n").errors.empty());
  EXPECT_TRUE(load("model_list: []\ngeneral_settings:\n  database_url: sqlite:///tmp/t.db\n").errors.empty());
  EXPECT_TRUE(load("model_list: []\ngeneral_settings:\n  database_url: ./data/t.db\n").errors.empty());
  auto pg = load("model_list: []\ngeneral_settings:\n  database_url: postgresql://u:p@db:5432/tollgate\n"
                 "  database_connection_pool_limit: 3\n");
  ASSERT_TRUE(pg.errors.empty()) << pg.errors[0].message;
  EXPECT_EQ(pg.config->general_settings.database_url, "postgresql://u:p@db:5432/tollgate");
  EXPECT_EQ(pg.config->general_settings.database_connection_pool_limit, 3);
  EXPECT_TRUE(load("model_list: []\ngeneral_settings:\n  database_url: postgres://db/tollgate\n").errors.empty());
  EXPECT_FALSE(load("model_list: []\ngeneral_settings:\n  database_connection_pool_limit: 0\n").errors.empty());
  EXPECT_EQ(load("model_list: []\n").config->general_settings.database_connection_pool_limit, 10);
}

// As LiteLLM: DATABASE_URL names the database when the config does not; the config wins.
TEST(ConfigLoader, DatabaseUrlEnvironmentVariableWhenTheConfigHasNone) {
  auto r = load("model_list: []\n", {{"DATABASE_URL", "postgresql://u:p@db/tg"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config->general_settings.database_url, "postgresql://u:p@db/tg");
  auto both = load("model_list: []\ngeneral_settings:\n  database_url: sqlite:///tmp/t.db\n",
                   {{"DATABASE_URL", "postgresql://u:p@db/tg"}});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both.config->general_settings.database_url, "sqlite:///tmp/t.db");
  auto bad = load("model_list: []\n", {{"DATABASE_URL", "redis://cache:6379"}});
  EXPECT_NE(only(bad.errors, "general_settings.database_url").message.find("DATABASE_URL"), std::string::npos);
  EXPECT_TRUE(load("model_list: []\n").config->general_settings.database_url.empty());
}

// Span export (tollgate_settings.otel): off by default; on by `enabled` or LiteLLM's callbacks;
// the OpenTelemetry environment variables under what the file leaves unset; bad values are
// errors with their paths.
TEST(ConfigLoader, OtelSettingsFromTheFileLitellmCallbacksAndTheEnvironment) {
  auto none = load("model_list: []\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.config->tollgate_settings.otel.enabled);
  auto cb = load("model_list: []\nlitellm_settings:\n  callbacks: [\"otel\", \"langfuse\"]\n",
                 {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"},
                  {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, x-tenant = t1,broken"},
                  {"OTEL_SERVICE_NAME", "gw"},
                  {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,service.version=1"}});
  ASSERT_TRUE(cb.ok()) << all(cb.errors);
  const auto& o = cb.config->tollgate_settings.otel;
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.traces_endpoint, "http://collector:4318/v1/traces");
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0], (std::pair<std::string, std::string>{"api-key", "s=cret"}));
  EXPECT_EQ(o.headers[1], (std::pair<std::string, std::string>{"x-tenant", "t1"}));
  EXPECT_EQ(o.service_name, "gw");
  ASSERT_EQ(o.resource_attributes.size(), 2u);
  EXPECT_EQ(o.resource_attributes[0].second, "prod");
  auto file = load(
      "model_list: []\nlitellm_settings:\n  callbacks: [otel]\ntollgate_settings:\n  otel:\n    enabled: false\n"
      "    endpoint: https://otel.example.com\n    service_name: mine\n    capture_content: true\n"
      "    timeout_ms: 2000\n    queue_size: 10\n    headers: {authorization: Bearer t}\n",
      {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://ignored:4318/v1/traces"}, {"OTEL_SERVICE_NAME", "ignored"}});
  ASSERT_TRUE(file.ok()) << all(file.errors);
  const auto& f = file.config->tollgate_settings.otel;
  EXPECT_FALSE(f.enabled) << "the file's enabled: false wins over the callback";
  EXPECT_EQ(f.traces_endpoint, "https://otel.example.com/v1/traces");
  EXPECT_EQ(f.service_name, "mine");
  EXPECT_TRUE(f.capture_content);
  EXPECT_EQ(f.timeout.count(), 2000);
  EXPECT_EQ(f.queue_size, 10);
  ASSERT_EQ(f.headers.size(), 1u);
  auto traces = load("model_list: []\n", {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"}});
  EXPECT_EQ(traces.config->tollgate_settings.otel.traces_endpoint, "http://t:1/custom") << "used as is";
  EXPECT_EQ(none.config->tollgate_settings.otel.traces_endpoint, "http://localhost:4318/v1/traces");
  for (const char* bad : {"tollgate_settings:\n  otel:\n    endpoint: ftp://x\n",
                          "tollgate_settings:\n  otel:\n    traces_endpoint: 'not a url'\n",
                          "tollgate_settings:\n  otel:\n    queue_size: 0\n",
                          "tollgate_settings:\n  otel:\n    enabled: maybe\n",
                          "tollgate_settings:\n  otel:\n    service_name: ''\n"}) {
    auto r = load(bad);
    ASSERT_FALSE(r.errors.empty()) << bad;
    EXPECT_EQ(r.errors.front().path.rfind("tollgate_settings.otel", 0), 0u) << bad << ": " << r.errors.front().path;
  }
  auto unknown = load("tollgate_settings:\n  otel:\n    bogus: 1\n");
  EXPECT_EQ(only(unknown.warnings, "tollgate_settings.otel.bogus").path, "tollgate_settings.otel.bogus");
}

// Alerts: webhooks from the file and from LiteLLM's general_settings.alerting (the URL in the
// environment); budget threshold lists per scope kind, checked.
TEST(ConfigLoader, AlertChannelsAndBudgetThresholds) {
  auto d = load("model_list: []\n");
  ASSERT_TRUE(d.ok());
  const auto& defaults = d.config->tollgate_settings.alerts;
  EXPECT_TRUE(defaults.webhooks.empty());
  EXPECT_EQ(defaults.budget_thresholds.at("key"), (std::vector<int>{50, 80, 100}));
  EXPECT_EQ(defaults.budget_thresholds.at("organization"), (std::vector<int>{80, 90, 100}));
  auto r = load(
      "model_list: []\ngeneral_settings:\n  alerting: [slack]\ntollgate_settings:\n  alerts:\n"
      "    webhooks: [https://hooks.example.com/a]\n    budget_thresholds: {key: [90, 25, 90], team: [100]}\n",
      {{"SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T/B/x"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const auto& a = r.config->tollgate_settings.alerts;
  EXPECT_EQ(a.webhooks, (std::vector<std::string>{"https://hooks.example.com/a", "https://hooks.slack.com/services/T/B/x"}));
  EXPECT_EQ(a.budget_thresholds.at("key"), (std::vector<int>{25, 90})) << "sorted, once each";
  EXPECT_EQ(a.budget_thresholds.at("team"), (std::vector<int>{100}));
  auto missing = load("model_list: []\ngeneral_settings:\n  alerting: [slack]\n");
  ASSERT_TRUE(missing.ok());
  EXPECT_NE(only(missing.warnings, "general_settings.alerting").message.find("SLACK_WEBHOOK_URL"), std::string::npos);
  for (const char* bad : {"tollgate_settings:\n  alerts:\n    webhooks: [ftp://x]\n",
                          "tollgate_settings:\n  alerts:\n    budget_thresholds: {wallet: [50]}\n",
                          "tollgate_settings:\n  alerts:\n    budget_thresholds: {key: [0]}\n",
                          "tollgate_settings:\n  alerts:\n    budget_thresholds: {key: 50}\n"}) {
    auto e = load(bad);
    ASSERT_FALSE(e.errors.empty()) << bad;
    EXPECT_EQ(e.errors.front().path.rfind("tollgate_settings.alerts", 0), 0u) << bad << ": " << e.errors.front().path;
  }
}

}  // namespace
}  // namespace tollgate::config
