// Config hot reload (config/reload.hpp) and deployments kept outside the file
// (LoadOptions::extra_models: the store's /model/new models).
#include "config/reload.hpp"

#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "load_helpers.hpp"

namespace tollgate::config {
namespace {

using testing_helpers::all;
using testing_helpers::load;

constexpr std::string_view kRunning = R"(
model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o-mini, api_key: k}
general_settings:
  master_key: sk-old
  database_url: sqlite:///tmp/old.db
tollgate_settings:
  worker_threads: 2
  min_output_tokens: 16
)";

TEST(PlanReload, RestartRequiredSettingsKeepTheirRunningValueAndAreNamed) {
  auto running = load(kRunning);
  ASSERT_TRUE(running.ok()) << all(running.errors);
  auto loaded = load(R"(
model_list:
  - model_name: b
    litellm_params: {model: openai/gpt-4o, api_key: k}
general_settings:
  master_key: sk-new
  database_url: sqlite:///tmp/new.db
tollgate_settings:
  worker_threads: 8
  min_output_tokens: 32
)");
  ASSERT_TRUE(loaded.ok()) << all(loaded.errors);
  const auto plan = plan_reload(*running.config, *loaded.config);
  EXPECT_EQ(plan.config->general_settings.master_key, "sk-old");
  EXPECT_EQ(plan.config->general_settings.database_url, "sqlite:///tmp/old.db");
  EXPECT_EQ(plan.config->tollgate_settings.worker_threads, 2);
  // What can change does.
  EXPECT_EQ(plan.config->tollgate_settings.min_output_tokens, 32);
  ASSERT_EQ(plan.config->model_list.size(), 1u);
  EXPECT_EQ(plan.config->model_list[0].model_name, "b");
  ASSERT_EQ(plan.restart_required.size(), 3u);
  EXPECT_EQ(plan.restart_required[0], "general_settings.master_key: restart required (the running value is kept)");
  EXPECT_TRUE(plan.restart_required[1].starts_with("general_settings.database_url"));
  EXPECT_TRUE(plan.restart_required[2].starts_with("tollgate_settings.worker_threads"));
}

TEST(PlanReload, AnUnchangedFileNeedsNoRestart) {
  auto running = load(kRunning);
  auto again = load(kRunning);
  ASSERT_TRUE(running.ok() && again.ok());
  EXPECT_TRUE(plan_reload(*running.config, *again.config).restart_required.empty());
}

LoadResult with_models(std::string_view yaml, std::vector<ExtraModel> extras) {
  LoadOptions o;
  o.getenv = testing_helpers::env_of({});
  o.export_environment_variables = false;
  o.extra_models = std::move(extras);
  return load_config_string(yaml, "test.yaml", o);
}

TEST(ExtraModels, LoadAfterTheFileAndAreMarkedDbModels) {
  auto r = with_models(kRunning,
                       {{"model m1", R"({"model_name":"api","litellm_params":{"model":"openai/gpt-4o",)"
                                     R"("api_key":"x","input_cost_per_token":2.5e-06},"model_info":{"id":"m1"}})"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  ASSERT_EQ(r.config->model_list.size(), 2u);
  EXPECT_FALSE(r.config->model_list[0].db_model);
  const auto& d = r.config->model_list[1];
  EXPECT_TRUE(d.db_model);
  EXPECT_EQ(d.model_name, "api");
  EXPECT_EQ(d.id, "m1");
  EXPECT_EQ(d.upstream_model, "gpt-4o");
  EXPECT_EQ(d.input_cost_per_token, "0.0000025");  // the loader's exact decimal, as for the file
  EXPECT_EQ(r.config->model_groups(), (std::vector<std::string>{"a", "api"}));
}

TEST(ExtraModels, ProblemsAreReportedUnderTheirLabelWithoutALine) {
  auto r = with_models(kRunning, {{"", R"({"model_name":"api","litellm_params":{"model":"openai/gpt-4o","rpm":-1}})"}});
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u) << all(r.errors);
  EXPECT_EQ(r.errors[0].path, "litellm_params.rpm");
  EXPECT_EQ(r.errors[0].line, 0);

  auto named = with_models(kRunning, {{"model m9", R"({"model_name":"api","litellm_params":{}})"}});
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.errors.at(0).path, "model m9.litellm_params.model") << all(named.errors);
}

TEST(ExtraModels, CheckedWithTheWholeFileDuplicateIdsAndNotJson) {
  constexpr std::string_view kWithId =
      "model_list:\n  - model_name: a\n    litellm_params: {model: openai/gpt-4o}\n"
      "    model_info: {id: taken}\n";
  auto dup = with_models(
      kWithId, {{"", R"({"model_name":"x","litellm_params":{"model":"openai/gpt-4o"},"model_info":{"id":"taken"}})"}});
  ASSERT_FALSE(dup.ok());  // the file's id
  EXPECT_NE(dup.errors.at(0).message.find("taken"), std::string::npos) << all(dup.errors);

  auto bad = with_models(kRunning, {{"model m2", "[1, 2"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors.at(0).path, "model m2");

  auto no_list = with_models("general_settings: {master_key: k}\n",
                             {{"", R"({"model_name":"only","litellm_params":{"model":"openai/gpt-4o"}})"}});
  ASSERT_TRUE(no_list.ok()) << all(no_list.errors);
  ASSERT_EQ(no_list.config->model_list.size(), 1u);
  EXPECT_TRUE(no_list.config->model_list[0].db_model);
}

TEST(StoreModelInDb, IsASupportedSetting) {
  auto r = load(
      "model_list: []\ngeneral_settings:\n  store_model_in_db: true\ntollgate_settings:\n  model_refresh_ms: 200\n");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.config->general_settings.store_model_in_db);
  EXPECT_EQ(r.config->tollgate_settings.model_refresh.count(), 200);
  for (const auto& w : r.warnings) EXPECT_EQ(w.path.find("store_model_in_db"), std::string::npos) << w.to_string();
  auto low = load("model_list: []\ntollgate_settings:\n  model_refresh_ms: 10\n");
  EXPECT_FALSE(low.ok());
}

}  // namespace
}  // namespace tollgate::config
