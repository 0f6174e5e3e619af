// Provider::set_output_limit: the bound a reservation pays for goes upstream in one field.
#include "providers/provider.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
namespace json = boost::json;

namespace {

config::Deployment deployment(config::ProviderKind kind, std::string api_base) {
  config::Deployment d;
  d.provider = kind;
  d.api_base = std::move(api_base);
  d.upstream_model = "m";
  return d;
}

json::object body(const char* text) { return json::parse(text).as_object(); }

}  // namespace

TEST(OutputLimit, OpenAiKeepsTheCallersFieldAndDropsTheOther) {
  const auto& p = providers::provider_for(config::ProviderKind::openai);
  const auto d = deployment(config::ProviderKind::openai, "http://vllm:8000/v1");
  auto b = body(R"({"max_tokens":100,"max_completion_tokens":80})");
  p.set_output_limit(d, b, 40, providers::OutputField::max_completion_tokens);
  EXPECT_EQ(b.at("max_completion_tokens").as_int64(), 40);
  EXPECT_FALSE(b.contains("max_tokens"));
  auto c = body(R"({"max_tokens":100})");
  p.set_output_limit(d, c, 40, providers::OutputField::max_tokens);
  EXPECT_EQ(c.at("max_tokens").as_int64(), 40);
  EXPECT_FALSE(c.contains("max_completion_tokens"));
}

TEST(OutputLimit, WithNoCallerFieldOpenAiAndAzureGetMaxCompletionTokensOthersMaxTokens) {
  const auto& openai = providers::provider_for(config::ProviderKind::openai);
  auto a = body(R"({})");
  openai.set_output_limit(deployment(config::ProviderKind::openai, ""), a, 7, providers::OutputField::none);
  EXPECT_EQ(a.at("max_completion_tokens").as_int64(), 7);
  auto b = body(R"({})");
  openai.set_output_limit(deployment(config::ProviderKind::openai, "https://api.openai.com/v1"), b, 7,
                          providers::OutputField::none);
  EXPECT_TRUE(b.contains("max_completion_tokens"));
  auto c = body(R"({})");
  openai.set_output_limit(deployment(config::ProviderKind::openai, "http://localhost:11434/v1"), c, 7,
                          providers::OutputField::none);
  EXPECT_EQ(c.at("max_tokens").as_int64(), 7);
  EXPECT_FALSE(c.contains("max_completion_tokens"));
  const auto& azure = providers::provider_for(config::ProviderKind::azure);
  auto z = body(R"({})");
  azure.set_output_limit(deployment(config::ProviderKind::azure, "https://x.openai.azure.com"), z, 7,
                         providers::OutputField::none);
  EXPECT_TRUE(z.contains("max_completion_tokens"));
}

TEST(OutputLimit, AnthropicAlwaysMaxTokens) {
  const auto& p = providers::provider_for(config::ProviderKind::anthropic);
  auto b = body(R"({"max_completion_tokens":900})");
  p.set_output_limit(deployment(config::ProviderKind::anthropic, ""), b, 64, providers::OutputField::max_completion_tokens);
  EXPECT_EQ(b.at("max_tokens").as_int64(), 64);
  EXPECT_FALSE(b.contains("max_completion_tokens"));
}
