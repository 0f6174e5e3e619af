// LiteLLM wildcard model names: matching, what the `*` captured, the most specific pattern,
// and the upstream model a wildcard deployment is sent.
#include <gtest/gtest.h>

#include "config/wildcard.hpp"

namespace tollgate::config {
namespace {

TEST(Wildcard, MatchesAndCaptures) {
  EXPECT_EQ(wildcard_capture("*", "gpt-4o"), "gpt-4o");
  EXPECT_EQ(wildcard_capture("openai/*", "openai/gpt-4o"), "gpt-4o");
  EXPECT_EQ(wildcard_capture("anthropic/claude-3-*", "anthropic/claude-3-haiku"), "haiku");
  EXPECT_EQ(wildcard_capture("*-preview", "o1-preview"), "o1");
  EXPECT_EQ(wildcard_capture("a/*/b*", "a/x/y/bz"), "x/y") << "the first star takes what the rest allows";
  EXPECT_FALSE(wildcard_capture("openai/*", "openai/")) << "nothing to pass through";
  for (const char* bad : {"azure/x/../o1-pro/chat/completions?api-version=1#", "azure/a b", "azure/%2e%2e", "azure//x",
                          "azure/.hidden", "azure/x\n", "azure/\xc3\xa9"})
    EXPECT_FALSE(wildcard_capture("azure/*", bad)) << "not a model identifier: " << bad;
  EXPECT_EQ(wildcard_capture("*", "meta-llama/Llama-3.1-8B"), "meta-llama/Llama-3.1-8B");
  EXPECT_FALSE(wildcard_capture("openai/*", "azure/gpt-4o"));
  EXPECT_FALSE(wildcard_capture("openai/*", "openai"));
  EXPECT_FALSE(wildcard_capture("gpt-4o", "gpt-4o")) << "not a pattern";
  EXPECT_FALSE(wildcard_capture("*", std::string(100000, 'a'))) << "absurd names match nothing";
}

TEST(Wildcard, SpecificityAndUpstreamModel) {
  EXPECT_GT(wildcard_specificity("openai/*"), wildcard_specificity("*"));
  EXPECT_EQ(resolve_wildcard_model("*", "gpt-4o", "openai"), "gpt-4o");
  EXPECT_EQ(resolve_wildcard_model("*", "openai/gpt-4o", "openai"), "gpt-4o") << "the provider's own prefix is not sent";
  EXPECT_EQ(resolve_wildcard_model("*", "meta-llama/Llama-3", "openai"), "meta-llama/Llama-3");
  EXPECT_EQ(resolve_wildcard_model("claude-3-*", "haiku", "anthropic"), "claude-3-haiku");
  EXPECT_EQ(resolve_wildcard_model("gpt-4o", "x", "openai"), "gpt-4o") << "a fixed model stays";
}

}  // namespace
}  // namespace tollgate::config
