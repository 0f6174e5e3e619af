// The operation seam (providers/provider.hpp "Operations"): which adapter serves which client
// API for a deployment, and the OpenAI/Azure embeddings and legacy completions adapters'
// requests and response parsing.
#include "providers/provider.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
using providers::CallApi;
namespace json = boost::json;

namespace {

config::Deployment deployment(config::ProviderKind kind, std::string prefix, std::string api_base = "http://up:1/v1") {
  config::Deployment d;
  d.provider = kind;
  d.provider_prefix = std::move(prefix);
  d.api_base = std::move(api_base);
  d.upstream_model = "text-embedding-3-small";
  d.model_name = "group";
  d.id = "dep-1";
  return d;
}

json::object body(const char* text) { return json::parse(text).as_object(); }

}  // namespace

TEST(Operations, ChatIsServedByTheProviderItself) {
  const auto d = deployment(config::ProviderKind::openai, "openai");
  EXPECT_EQ(providers::adapter_for(d, CallApi::chat), &providers::provider_for(config::ProviderKind::openai));
  const auto a = deployment(config::ProviderKind::anthropic, "anthropic");
  EXPECT_EQ(providers::adapter_for(a, CallApi::chat), &providers::provider_for(config::ProviderKind::anthropic));
}

TEST(Operations, AnthropicServesNoEmbeddingsOrCompletionsAndSaysSo) {
  const auto a = deployment(config::ProviderKind::anthropic, "anthropic");
  EXPECT_EQ(providers::adapter_for(a, CallApi::embeddings), nullptr);
  EXPECT_EQ(providers::adapter_for(a, CallApi::completions), nullptr);
  EXPECT_EQ(providers::operation_unsupported_message(a, CallApi::embeddings),
            "deployment 'dep-1' (anthropic) of model group 'group' does not support embeddings");
}

TEST(Operations, ModeEmbeddingServesEmbeddingsOnlyAndChatModesNone) {
  auto d = deployment(config::ProviderKind::openai, "openai");
  d.mode = "embedding";
  EXPECT_NE(providers::adapter_for(d, CallApi::embeddings), nullptr);
  EXPECT_EQ(providers::adapter_for(d, CallApi::chat), nullptr);
  EXPECT_EQ(providers::adapter_for(d, CallApi::completions), nullptr);
  d.mode = "chat";
  EXPECT_EQ(providers::adapter_for(d, CallApi::embeddings), nullptr);
  EXPECT_NE(providers::adapter_for(d, CallApi::chat), nullptr);
}

TEST(Operations, TextCompletionOpenAiIsCalledOnCompletionsOnly) {
  const auto d = deployment(config::ProviderKind::openai, "text-completion-openai");
  EXPECT_EQ(providers::adapter_for(d, CallApi::chat), nullptr);
  EXPECT_EQ(providers::adapter_for(d, CallApi::embeddings), nullptr);
  ASSERT_NE(providers::adapter_for(d, CallApi::completions), nullptr);
}

TEST(Operations, UnsupportedProvidersTakeEveryApiToFailAsBefore) {
  const auto d = deployment(config::ProviderKind::unsupported, "huggingface");
  EXPECT_EQ(providers::adapter_for(d, CallApi::embeddings), &providers::provider_for(config::ProviderKind::unsupported));
}

TEST(Operations, OpenAiEmbeddingsRequestGoesToEmbeddingsWithoutStreamFields) {
  const auto d = deployment(config::ProviderKind::openai, "openai");
  const auto* p = providers::adapter_for(d, CallApi::embeddings);
  ASSERT_NE(p, nullptr);
  auto b = body(R"({"model":"group","input":"hi","encoding_format":"base64"})");
  p->set_output_limit(d, b, 0, providers::OutputField::none);
  EXPECT_FALSE(b.contains("max_tokens"));
  EXPECT_FALSE(b.contains("max_completion_tokens"));
  auto req = p->build_request(d, b, true);
  ASSERT_TRUE(req) << req.error();
  EXPECT_EQ(req->target.path_and_query, "/v1/embeddings");
  const auto sent = json::parse(req->body).as_object();
  EXPECT_EQ(sent.at("model").as_string(), "text-embedding-3-small");
  EXPECT_FALSE(sent.contains("stream"));
  EXPECT_FALSE(sent.contains("stream_options"));
  EXPECT_EQ(sent.at("encoding_format").as_string(), "base64");
  EXPECT_EQ(p->stream_decoder(d, false), nullptr);
}

TEST(Operations, AzureEmbeddingsAndCompletionsUseTheDeploymentUrl) {
  auto d = deployment(config::ProviderKind::azure, "azure", "https://res.openai.azure.com");
  d.upstream_model = "emb dep";
  d.api_version = "2024-10-21";
  auto b = body(R"({"input":"hi"})");
  auto req = providers::adapter_for(d, CallApi::embeddings)->build_request(d, b, false);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->target.path_and_query, "/openai/deployments/emb%20dep/embeddings?api-version=2024-10-21");
  auto c = body(R"({"prompt":"hi"})");
  req = providers::adapter_for(d, CallApi::completions)->build_request(d, c, false);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->target.path_and_query, "/openai/deployments/emb%20dep/completions?api-version=2024-10-21");
}

TEST(Operations, CompletionsBoundGoesInMaxTokensAndTheStreamAsksForUsage) {
  const auto d = deployment(config::ProviderKind::openai, "openai");
  const auto* p = providers::adapter_for(d, CallApi::completions);
  auto b = body(R"({"prompt":"hi","max_tokens":100,"max_completion_tokens":90})");
  p->set_output_limit(d, b, 40, providers::OutputField::none);
  EXPECT_EQ(b.at("max_tokens").as_int64(), 40);
  EXPECT_FALSE(b.contains("max_completion_tokens"));
  auto req = p->build_request(d, b, true);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->target.path_and_query, "/v1/completions");
  const auto sent = json::parse(req->body).as_object();
  EXPECT_TRUE(sent.at("stream").as_bool());
  EXPECT_TRUE(sent.at("stream_options").at("include_usage").as_bool());
  EXPECT_NE(p->stream_decoder(d, true), nullptr);
}

TEST(Operations, EmbeddingsResponseUsageIsPromptTokensOnly) {
  const auto d = deployment(config::ProviderKind::openai, "openai");
  const auto* p = providers::adapter_for(d, CallApi::embeddings);
  auto ok = p->parse_response(
      d, R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"m","usage":{"prompt_tokens":8,"total_tokens":8}})");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_TRUE(ok->usage.reported);
  EXPECT_EQ(ok->usage.prompt_tokens, 8);
  EXPECT_EQ(ok->usage.completion_tokens, 0);
  EXPECT_EQ(ok->completion.at("object").as_string(), "list");
  // Parsed into an arena of its own (core::document_arena), kept by the move out of the adapter.
  EXPECT_TRUE(ok->completion.storage().is_deallocate_trivial());
  auto no_usage = p->parse_response(d, R"({"object":"list","data":[]})");
  ASSERT_TRUE(no_usage);
  EXPECT_FALSE(no_usage->usage.reported);  // unknown, not zero: the reservation is charged
  auto bad_usage = p->parse_response(d, R"({"data":[],"usage":{"prompt_tokens":"8"}})");
  ASSERT_TRUE(bad_usage);
  EXPECT_FALSE(bad_usage->usage.reported);
  EXPECT_FALSE(p->parse_response(d, R"({"object":"list"})"));  // no data: not an embeddings answer
  EXPECT_FALSE(p->parse_response(d, "not json"));
}

TEST(Operations, TextCompletionResponseUsage) {
  const auto d = deployment(config::ProviderKind::openai, "openai");
  const auto* p = providers::adapter_for(d, CallApi::completions);
  auto ok = p->parse_response(
      d, R"({"id":"cmpl-1","object":"text_completion","choices":[{"text":"x","index":0,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":16,"total_tokens":19}})");
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->usage.reported);
  EXPECT_EQ(ok->usage.prompt_tokens, 3);
  EXPECT_EQ(ok->usage.completion_tokens, 16);
}

TEST(Operations, ChatResponseIsParsedIntoAnArenaOfItsOwn) {
  const auto d = deployment(config::ProviderKind::openai, "openai");
  const auto* p = providers::adapter_for(d, CallApi::chat);
  auto ok = p->parse_response(
      d, R"({"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_TRUE(ok->usage.reported);
  EXPECT_EQ(ok->usage.prompt_tokens, 5);
  EXPECT_EQ(ok->usage.completion_tokens, 2);
  EXPECT_EQ(ok->completion.at("choices").as_array().at(0).at("message").at("content").as_string(), "hi");
  // The document's storage came along with it (core::adopt), not a copy into the default one.
  EXPECT_TRUE(ok->completion.storage().is_deallocate_trivial());
  EXPECT_FALSE(p->parse_response(d, R"({"id":"x"})"));  // no choices
  EXPECT_FALSE(p->parse_response(d, "{\"choices\":[1e400]}"));  // not writable back as JSON
}
