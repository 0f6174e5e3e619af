// Admission plans of non-chat calls (pipeline/output_bound.hpp): embeddings reserve their input
// alone, from their own `input`; completions bound every generated completion.
#include "pipeline/output_bound.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "config/loader.hpp"

using namespace tollgate;
namespace json = boost::json;

namespace {

std::shared_ptr<const config::Config> load(const std::string& yaml) {
  auto r = config::load_config_string(
      yaml, "<test>", config::EnvLookup([](std::string_view) -> std::optional<std::string> { return std::nullopt; }));
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.config;
}

const char* kConfig = R"(
model_list:
  - model_name: emb
    litellm_params: {model: openai/text-embedding-3-small, api_base: "http://127.0.0.1:1/v1"}
    model_info: {mode: embedding}
  - model_name: instruct
    litellm_params: {model: text-completion-openai/gpt-3.5-turbo-instruct, api_base: "http://127.0.0.1:1/v1"}
)";

}  // namespace

TEST(OperationPlan, EmbeddingsReserveTheirInputAlone) {
  auto cfg = load(kConfig);
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->model_list[0].mode, "embedding");
  const auto price = budget::resolve_deployment_price(cfg->model_list[0], budget::PriceTable::bundled());
  ASSERT_EQ(price.status, budget::PriceStatus::priced);
  const auto body = json::parse(R"({"model":"emb","input":["hello world","bye"]})").as_object();
  const auto input = pipeline::input_bound_for(price, body, {}, providers::CallApi::embeddings);
  EXPECT_EQ(input, 14);  // 11 + 3 bytes: no chat overhead
  pipeline::OutputRequest out;
  out.no_output = true;
  const auto plan = pipeline::plan_attempt(price, input, body, out, {});
  EXPECT_EQ(plan.want, 0);
  EXPECT_EQ(plan.least, 0);
  // text-embedding-3-small: $0.02 / M tokens = 20 nano-dollars a token; 14 tokens → 280 nanos.
  EXPECT_EQ(plan.range.min, 280);
  EXPECT_EQ(plan.range.max, 280);
}

TEST(OperationPlan, CompletionsBoundEveryCompletionGenerated) {
  auto cfg = load(kConfig);
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->model_list[1].provider, config::ProviderKind::openai);
  EXPECT_EQ(cfg->model_list[1].provider_prefix, "text-completion-openai");
  const auto price = budget::resolve_deployment_price(cfg->model_list[1], budget::PriceTable::bundled());
  ASSERT_EQ(price.status, budget::PriceStatus::priced);
  const auto body = json::parse(R"({"model":"instruct","prompt":"abcd","max_tokens":16,"best_of":3})").as_object();
  const auto input = pipeline::input_bound_for(price, body, {}, providers::CallApi::completions);
  EXPECT_EQ(input, 4);
  pipeline::OutputRequest out;
  out.max_tokens = 16;
  out.choices = 3;
  const auto plan = pipeline::plan_attempt(price, input, body, out, {});
  EXPECT_EQ(plan.want, 16);
  // gpt-3.5-turbo-instruct (priced through the text-completion-openai/ prefix): $1.50 / M in,
  // $2 / M out: 4 × 1,500 + 48 × 2,000 nanos = 102,000 nanos.
  EXPECT_EQ(plan.cost_at(16), 102'000);
}
