#include "budget/pricing.hpp"
#include "budget/cost.hpp"
#include "budget/token_bounds.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace tollgate::budget {
namespace {

const PriceTable& table() { return PriceTable::bundled(); }

std::string key_of(std::string_view model) {
  auto p = table().lookup(model);
  return p ? p->matched_key : "<unpriced>";
}


config::Deployment deployment(std::string prefix, std::string upstream) {
  config::Deployment d;
  d.model_name = "group";
  d.provider_prefix = std::move(prefix);
  d.upstream_model = std::move(upstream);
  return d;
}

// ------------------------------------------------------------------ bundled table

TEST(PricingBundled, EmbeddedCopyMatchesDataFile) {
  std::ifstream in(std::string(TOLLGATE_SOURCE_DIR) + "/data/prices.yaml", std::ios::binary);
  ASSERT_TRUE(in) << "data/prices.yaml not found";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_TRUE(ss.str() == PriceTable::bundled_yaml())
      << "src/budget/pricing.inc is stale; regenerate it from data/prices.yaml:\n"
         "  { printf 'R\"tollgate_prices('; cat data/prices.yaml; printf ')tollgate_prices\"\\n'; } > "
         "src/budget/pricing.inc";
}

TEST(PricingBundled, ParsesAndCoversTheRequiredModels) {
  ASSERT_TRUE(PriceTable::parse(PriceTable::bundled_yaml()).has_value());
  for (const char* m :
       {"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o1", "o1-mini", "o3", "o3-mini", "o4-mini",
        "gpt-3.5-turbo", "gpt-4-turbo", "text-embedding-3-small", "text-embedding-3-large", "claude-3-5-sonnet",
        "claude-3-5-haiku", "claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4", "claude-3-opus", "claude-3-haiku",
        "azure/gpt-4o", "azure/gpt-4o-mini", "azure/gpt-4.1", "azure/o3-mini", "gemini-1.5-pro", "gemini-1.5-flash",
        "gemini-2.0-flash", "gemini-2.5-pro", "gemini-2.5-flash", "mistral-large", "mistral-small", "codestral",
        "open-mistral-nemo", "groq/llama-3.1-8b-instant", "groq/llama-3.3-70b-versatile", "groq/mixtral-8x7b",
        // the current lines
        "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-pro", "gpt-5.1", "gpt-5.2", "gpt-5.4", "gpt-5.4-mini",
        "gpt-5.4-nano", "gpt-5.5", "o3-pro", "gpt-4o-audio-preview", "gpt-4o-mini-audio-preview", "gpt-audio",
        "claude-opus-4-1", "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-5", "claude-sonnet-4-6",
        "claude-haiku-4-5", "gemini-2.5-flash-lite", "gemini-2.0-flash-lite", "grok-4", "grok-4-fast",
        "grok-4-1-fast", "grok-3", "grok-3-mini", "grok-code-fast", "mistral-medium", "mistral-large-2512",
        "deepseek-chat", "deepseek-reasoner"}) {
    EXPECT_EQ(key_of(m), m);
  }
}

TEST(PricingBundled, BedrockModelIdsAndCrossRegionProfilesResolve) {
  EXPECT_EQ(key_of("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"), "anthropic.claude-3-5-sonnet");
  EXPECT_EQ(key_of("bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0"), "anthropic.claude-3-5-sonnet");
  EXPECT_EQ(key_of("bedrock/eu.amazon.nova-pro-v1:0"), "amazon.nova-pro");
  EXPECT_EQ(key_of("bedrock/amazon.titan-embed-text-v2:0"), "amazon.titan-embed-text-v2:0");
  EXPECT_EQ(key_of("bedrock/meta.llama3-1-70b-instruct-v1:0"), "meta.llama3-1-70b-instruct");
  // The geography is stripped only from bedrock/ models, and only a known one.
  EXPECT_EQ(key_of("us.anthropic.claude-3-5-sonnet-20241022-v2:0"), "<unpriced>");
  EXPECT_EQ(key_of("bedrock/xx.anthropic.claude-3-5-sonnet-20241022-v2:0"), "<unpriced>");
  EXPECT_EQ(key_of("sagemaker/my-endpoint"), "<unpriced>");
  const auto c = table().lookup("bedrock/anthropic.claude-3-5-haiku-20241022-v1:0").value();
  EXPECT_EQ(c.input.picos, 800'000);
  EXPECT_EQ(c.output.picos, 4'000'000);
  EXPECT_EQ(c.cached_input->picos, 80'000);
}

TEST(PricingBundled, CurrentModelsHaveTheirOwnPrice) {
  // gpt-5: $1.25 / $10, cached $0.125, priority $2.50 / $20, flex $0.625 / $5 per 1M tokens.
  const auto g = table().lookup("gpt-5").value();
  EXPECT_EQ(g.input.picos, 1'250'000);
  EXPECT_EQ(g.output.picos, 10'000'000);
  EXPECT_EQ(g.cached_input->picos, 125'000);
  ASSERT_TRUE(g.priority && g.flex);
  EXPECT_EQ(g.priority->input.picos, 2'500'000);
  EXPECT_EQ(g.priority->output.picos, 20'000'000);
  EXPECT_EQ(g.flex->output.picos, 5'000'000);
  EXPECT_EQ(g.max_output_tokens, 128000);
  EXPECT_EQ(table().lookup("gpt-5-nano")->input.picos, 50'000);
  EXPECT_EQ(table().lookup("gpt-5-pro")->output.picos, 120'000'000);

  // claude-haiku-4-5: $1 / $5, cache read 0.1x, 5-minute write 1.25x, 1-hour write 2x, $10 / 1k searches.
  const auto h = table().lookup("claude-haiku-4-5").value();
  EXPECT_EQ(h.input.picos, 1'000'000);
  EXPECT_EQ(h.output.picos, 5'000'000);
  EXPECT_EQ(h.cached_input->picos, 100'000);
  EXPECT_EQ(h.cache_write->picos, 1'250'000);
  EXPECT_EQ(h.cache_write_1h->picos, 2'000'000);
  EXPECT_EQ(h.web_search_call->picos, 10'000'000'000);  // $0.01 per call
  EXPECT_EQ(h.max_input_tokens, 200000);

  // grok-4: $3 / $15, cached $0.75, prompts above 128k at $6 / $30.
  const auto x = table().lookup("grok-4").value();
  EXPECT_EQ(x.input.picos, 3'000'000);
  EXPECT_EQ(x.cached_input->picos, 750'000);
  ASSERT_TRUE(x.long_prompt_tier.has_value());
  EXPECT_EQ(x.long_prompt_tier->above_input_tokens, 128'000);
  EXPECT_EQ(x.long_prompt_tier->output.picos, 30'000'000);

  // gemini-2.5-pro: $1.25 / $10, above 200k $2.50 / $15; cached $0.125 / $0.25.
  const auto p = table().lookup("gemini-2.5-pro").value();
  EXPECT_EQ(p.input.picos, 1'250'000);
  ASSERT_TRUE(p.long_prompt_tier.has_value());
  EXPECT_EQ(p.long_prompt_tier->above_input_tokens, 200'000);
  EXPECT_EQ(p.long_prompt_tier->input.picos, 2'500'000);
  EXPECT_EQ(p.long_prompt_tier->cached_input->picos, 250'000);
  // Audio prompt tokens priced apart where Google does.
  EXPECT_EQ(table().lookup("gemini-2.5-flash")->audio_input->picos, 1'000'000);
  EXPECT_EQ(table().lookup("gpt-4o-audio-preview")->audio_output->picos, 80'000'000);
  EXPECT_EQ(table().lookup("deepseek-chat")->cached_input->picos, 28'000);
}

TEST(PricingBundled, AnthropicCachePricesFollowTheMultipliers) {
  int claude = 0;
  for (const auto& [key, p] : table().entries()) {
    // Claude 3 Haiku's published figures are rounded ($0.03 read, $0.30 write on $0.25 input).
    if (!key.starts_with("claude-") || key == "claude-3-haiku") continue;
    ++claude;
    ASSERT_TRUE(p.cached_input && p.cache_write && p.cache_write_1h) << key;
    EXPECT_EQ(p.cached_input->picos * 10, p.input.picos) << key;
    EXPECT_EQ(p.cache_write->picos * 4, p.input.picos * 5) << key;  // 1.25x
    EXPECT_EQ(p.cache_write_1h->picos, p.input.picos * 2) << key;
    if (p.long_prompt_tier) {
      EXPECT_EQ(p.long_prompt_tier->input.picos, p.input.picos * 2) << key;
      EXPECT_EQ(p.long_prompt_tier->output.picos * 2, p.output.picos * 3) << key;
      EXPECT_EQ(p.long_prompt_tier->cache_write->picos * 4, p.long_prompt_tier->input.picos * 5) << key;
    }
  }
  EXPECT_GE(claude, 15);
}

TEST(PricingBundled, WritesItselfBackExactly) {
  const std::string yaml = table().to_yaml();
  auto back = PriceTable::parse(yaml);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->size(), table().size());
  EXPECT_EQ(back->to_yaml(), yaml);
}

TEST(PricingBundled, EveryEntryHasSourceDateAndSanePrices) {
  for (const auto& [key, p] : table().entries()) {
    EXPECT_TRUE(p.source.starts_with("https://")) << key;
    EXPECT_EQ(p.as_of.size(), 10u) << key;
    EXPECT_GT(p.input.picos, 0) << key;
    EXPECT_TRUE(p.max_input_tokens.has_value()) << key;
    if (!key.contains("embed")) {  // embedding models (text-embedding-*, amazon.titan-embed-*, cohere.embed-*) have no output
      EXPECT_GT(p.output.picos, 0) << key;
      EXPECT_TRUE(p.max_output_tokens.has_value()) << key;
    }
    if (p.cached_input) {
      EXPECT_LE(p.cached_input->picos, p.input.picos) << key;
    }
    if (p.long_prompt_tier) {
      EXPECT_GE(p.long_prompt_tier->input.picos, p.input.picos) << key;
    }
  }
}

TEST(PricingBundled, KnownFigures) {
  const auto p = table().lookup("gpt-4o").value();
  EXPECT_EQ(p.input.picos, 2'500'000);   // $2.50 / M
  EXPECT_EQ(p.output.picos, 10'000'000); // $10 / M
  EXPECT_EQ(p.cached_input->picos, 1'250'000);
  EXPECT_EQ(p.max_output_tokens, 16384);
  const auto h = table().lookup("claude-3-haiku").value();
  EXPECT_EQ(h.cached_input->picos, 30'000);  // $0.03 / M
  EXPECT_EQ(h.cache_write->picos, 300'000);  // $0.30 / M
  EXPECT_FALSE(table().lookup("gpt-4-turbo")->cached_input.has_value());
}

// ------------------------------------------------------------------ lookup

TEST(PricingLookup, DatedNamesResolveToLongestPrefix) {
  EXPECT_EQ(key_of("gpt-4o-2024-11-20"), "gpt-4o");
  EXPECT_EQ(key_of("gpt-4o-mini-2024-07-18"), "gpt-4o-mini");  // not gpt-4o
  EXPECT_EQ(key_of("gpt-4.1-mini-2025-04-14"), "gpt-4.1-mini");
  EXPECT_EQ(key_of("o3-mini-2025-01-31"), "o3-mini");
  EXPECT_EQ(key_of("o1-pro-2025-03-19"), "o1-pro");
  EXPECT_EQ(key_of("claude-3-5-sonnet-20241022"), "claude-3-5-sonnet");
  EXPECT_EQ(key_of("claude-3-5-sonnet-latest"), "claude-3-5-sonnet");
  EXPECT_EQ(key_of("claude-sonnet-4-20250514"), "claude-sonnet-4");
  EXPECT_EQ(key_of("claude-3-5-sonnet@20240620"), "claude-3-5-sonnet");  // Vertex spelling
  EXPECT_EQ(key_of("gemini-2.5-flash-lite-preview-06-17"), "gemini-2.5-flash-lite");
  EXPECT_EQ(key_of("mistral-large-2411"), "mistral-large");
  EXPECT_EQ(key_of("mistral-small-latest"), "mistral-small");
  // An exact dated key beats the shorter family key.
  EXPECT_EQ(key_of("gpt-4o-2024-05-13"), "gpt-4o-2024-05-13");
  EXPECT_EQ(table().lookup("gpt-4o-2024-05-13")->input.picos, 5'000'000);
  // Variants priced differently from their family have their own key.
  EXPECT_EQ(key_of("gpt-5-2025-08-07"), "gpt-5");
  EXPECT_EQ(key_of("gpt-5-chat-latest"), "gpt-5");
  EXPECT_EQ(key_of("gpt-5-mini-2025-08-07"), "gpt-5-mini");
  EXPECT_EQ(key_of("gpt-5-pro-2025-10-06"), "gpt-5-pro");
  EXPECT_EQ(key_of("gpt-5.1-codex"), "gpt-5.1");
  EXPECT_EQ(key_of("gpt-5.1-codex-mini"), "gpt-5.1-codex-mini");
  EXPECT_EQ(key_of("gpt-5.4-mini-2026-03-17"), "gpt-5.4-mini");
  EXPECT_EQ(key_of("gpt-5.5-2026-04-23"), "gpt-5.5");
  EXPECT_EQ(key_of("gpt-5.6"), "<unpriced>");  // not gpt-5: no '-' boundary
  EXPECT_EQ(key_of("o3-deep-research-2025-06-26"), "o3-deep-research");
  EXPECT_EQ(key_of("gpt-4o-audio-preview-2024-12-17"), "gpt-4o-audio-preview");
  EXPECT_EQ(key_of("gpt-4o-mini-audio-preview-2024-12-17"), "gpt-4o-mini-audio-preview");
  EXPECT_EQ(key_of("claude-haiku-4-5-20251001"), "claude-haiku-4-5");
  EXPECT_EQ(key_of("claude-opus-4-5-20251101"), "claude-opus-4-5");  // $5, not claude-opus-4's $15
  EXPECT_EQ(key_of("claude-opus-4-20250514"), "claude-opus-4");
  EXPECT_EQ(key_of("claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
  EXPECT_EQ(key_of("claude-sonnet-5-5"), "claude-sonnet-5");
  EXPECT_EQ(key_of("grok-4-0709"), "grok-4");
  EXPECT_EQ(key_of("grok-4-fast-reasoning"), "grok-4-fast");  // $0.20, not grok-4's $3
  EXPECT_EQ(key_of("grok-4-1-fast-non-reasoning"), "grok-4-1-fast");
  EXPECT_EQ(key_of("grok-3-fast-latest"), "grok-3-fast");
  EXPECT_EQ(key_of("grok-code-fast-1"), "grok-code-fast");
  EXPECT_EQ(key_of("mistral-medium-latest"), "mistral-medium");
  EXPECT_EQ(key_of("mistral-medium-2508"), "mistral-medium-2508");
}

TEST(PricingLookup, PrefixMatchesOnlyAtABoundary) {
  EXPECT_EQ(key_of("gpt-4o1"), "<unpriced>");
  EXPECT_EQ(key_of("o3x"), "<unpriced>");
  EXPECT_EQ(key_of("gpt-4"), "<unpriced>");
  EXPECT_EQ(key_of("gpt"), "<unpriced>");
  EXPECT_EQ(key_of(""), "<unpriced>");
  EXPECT_EQ(key_of("-"), "<unpriced>");
  EXPECT_EQ(key_of("totally-unknown-model"), "<unpriced>");
}

TEST(PricingLookup, ProviderPrefixes) {
  EXPECT_EQ(key_of("openai/gpt-4o"), "gpt-4o");
  EXPECT_EQ(key_of("openai/gpt-4o-mini-2024-07-18"), "gpt-4o-mini");
  EXPECT_EQ(key_of("anthropic/claude-3-7-sonnet-20250219"), "claude-3-7-sonnet");
  EXPECT_EQ(key_of("azure/gpt-4o-mini"), "azure/gpt-4o-mini");
  EXPECT_EQ(key_of("azure/gpt-4o-2024-08-06"), "azure/gpt-4o");
  EXPECT_EQ(key_of("azure/gpt-4.5-preview"), "<unpriced>");
  EXPECT_EQ(key_of("azure/gpt-3.5-turbo"), "gpt-3.5-turbo");  // falls back to OpenAI's price
  EXPECT_EQ(key_of("gemini/gemini-2.5-pro"), "gemini-2.5-pro");
  EXPECT_EQ(key_of("mistral/codestral-2501"), "codestral");
  EXPECT_EQ(key_of("groq/llama-3.1-8b-instant"), "groq/llama-3.1-8b-instant");
  EXPECT_EQ(key_of("xai/grok-4"), "grok-4");
  EXPECT_EQ(key_of("xai/grok-code-fast-1"), "grok-code-fast");
  EXPECT_EQ(key_of("deepseek/deepseek-reasoner"), "deepseek-reasoner");
  EXPECT_EQ(key_of("GPT-4o"), "gpt-4o");  // case-insensitive
  // Unknown prefixes are self-hosted / other clouds: never priced from a provider's list.
  EXPECT_EQ(key_of("vllm/gpt-4o"), "<unpriced>");
  EXPECT_EQ(key_of("llama-3.1-8b-instant"), "<unpriced>");  // Groq prices need groq/
}

// ------------------------------------------------------------------ parse errors

TEST(PricingParse, Errors) {
  const auto err = [](std::string_view yaml) {
    auto t = PriceTable::parse(yaml);
    return t ? std::string("<ok>") : t.error();
  };
  const std::string ok_entry = "input_cost_per_token: \"0.000001\"\n    output_cost_per_token: \"0.000002\"\n"
                               "    source: https://x\n    as_of: \"2025-01-01\"\n";
  EXPECT_EQ(err("version: 1\nmodels:\n  m:\n    " + ok_entry), "<ok>");
  EXPECT_NE(err("version: 2\nmodels: {}\n").find("version"), std::string::npos);
  EXPECT_NE(err("version: 1\n").find("models: missing"), std::string::npos);
  EXPECT_NE(err("[1, 2").find("invalid YAML"), std::string::npos);
  EXPECT_NE(err("version: 1\nmodels:\n  M:\n    " + ok_entry).find("lower-case"), std::string::npos);
  EXPECT_NE(err("version: 1\nmodels:\n  m:\n    " + ok_entry + "    colour: red\n").find("models.m.colour"),
            std::string::npos);
  EXPECT_NE(err("version: 1\nmodels:\n  m:\n    input_cost_per_token: \"-1\"\n").find("models.m.input_cost_per_token"),
            std::string::npos);
  EXPECT_NE(err("version: 1\nmodels:\n  m:\n    output_cost_per_token: \"0\"\n    source: s\n    as_of: d\n")
                .find("input_cost_per_token: missing"),
            std::string::npos);
  EXPECT_NE(err("version: 1\nmodels:\n  m:\n    " + ok_entry + "    max_output_tokens: 0\n").find("positive integer"),
            std::string::npos);
  EXPECT_NE(err("version: 1\nmodels:\n  m:\n    " + ok_entry + "  m:\n    " + ok_entry).find("duplicate"),
            std::string::npos);
}

TEST(PricingParse, UnquotedNumbersAreReadAsDecimalTextNotFloats) {
  auto t = PriceTable::parse(
      "version: 1\nmodels:\n  m:\n    input_cost_per_token: 3.75e-8\n    output_cost_per_token: 0.0000000375\n"
      "    source: s\n    as_of: d\n");
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t->lookup("m")->input.picos, 37'500);
  EXPECT_EQ(t->lookup("m")->output.picos, 37'500);
}

TEST(PricingParse, EveryFieldWithLiteLLMNames) {
  auto t = PriceTable::parse(R"(version: 1
models:
  m:
    input_cost_per_token: "0.000001"
    output_cost_per_token: 2e-06
    cache_read_input_token_cost: "1e-7"
    cache_creation_input_token_cost: 1.25e-06
    cache_creation_input_token_cost_above_1hr: "0.000002"
    output_cost_per_reasoning_token: "3e-6"
    input_cost_per_audio_token: "4e-6"
    output_cost_per_audio_token: "8e-6"
    output_cost_per_image_token: "4e-5"
    web_search_cost_per_call: "0.01"
    input_cost_per_token_priority: "2e-6"
    output_cost_per_token_priority: "4e-6"
    cache_read_input_token_cost_priority: "2e-7"
    input_cost_per_token_flex: "5e-7"
    output_cost_per_token_flex: "1e-6"
    cache_read_input_token_cost_flex: "5e-8"
    max_input_tokens: 1000
    max_output_tokens: 100
    tier:
      above_input_tokens: 500
      input_cost_per_token: "2e-6"
      output_cost_per_token: "3e-6"
      cache_read_input_token_cost: "2e-7"
      cache_creation_input_token_cost: "2.5e-6"
    source: https://x
    as_of: "2026-01-01"
)");
  ASSERT_TRUE(t.has_value()) << t.error();
  const ModelPrice p = t->lookup("m").value();
  EXPECT_EQ(p.input.picos, 1'000'000);
  EXPECT_EQ(p.output.picos, 2'000'000);
  EXPECT_EQ(p.cached_input->picos, 100'000);
  EXPECT_EQ(p.cache_write->picos, 1'250'000);
  EXPECT_EQ(p.cache_write_1h->picos, 2'000'000);
  EXPECT_EQ(p.reasoning->picos, 3'000'000);
  EXPECT_EQ(p.audio_input->picos, 4'000'000);
  EXPECT_EQ(p.audio_output->picos, 8'000'000);
  EXPECT_EQ(p.image_output->picos, 40'000'000);
  EXPECT_EQ(p.web_search_call->picos, 10'000'000'000);
  ASSERT_TRUE(p.priority && p.flex);
  EXPECT_EQ(p.priority->input.picos, 2'000'000);
  EXPECT_EQ(p.priority->output.picos, 4'000'000);
  EXPECT_EQ(p.priority->cached_input->picos, 200'000);
  EXPECT_EQ(p.flex->input.picos, 500'000);
  EXPECT_EQ(p.flex->output.picos, 1'000'000);
  EXPECT_EQ(p.flex->cached_input->picos, 50'000);
  ASSERT_TRUE(p.long_prompt_tier.has_value());
  EXPECT_EQ(p.long_prompt_tier->above_input_tokens, 500);
  EXPECT_EQ(p.long_prompt_tier->cache_write->picos, 2'500'000);
  EXPECT_FALSE(p.is_zero());
  // It round-trips through the writer.
  auto back = PriceTable::parse(t->to_yaml());
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->to_yaml(), t->to_yaml());
}

TEST(PricingParse, AServiceTierGivenInPartTakesTheBasePrices) {
  auto t = PriceTable::parse(
      "version: 1\nmodels:\n  m:\n    input_cost_per_token: \"1e-6\"\n    output_cost_per_token: \"2e-6\"\n"
      "    input_cost_per_token_priority: \"3e-6\"\n    cache_read_input_token_cost_flex: \"1e-8\"\n"
      "    source: s\n    as_of: d\n");
  ASSERT_TRUE(t.has_value()) << t.error();
  const ModelPrice p = t->lookup("m").value();
  ASSERT_TRUE(p.priority && p.flex);
  EXPECT_EQ(p.priority->input.picos, 3'000'000);
  EXPECT_EQ(p.priority->output.picos, 2'000'000);
  EXPECT_FALSE(p.priority->cached_input.has_value());
  EXPECT_EQ(p.flex->input.picos, 1'000'000);
  EXPECT_EQ(p.flex->cached_input->picos, 10'000);
  EXPECT_FALSE(p.cache_write.has_value());
  EXPECT_FALSE(p.web_search_call.has_value());
}

TEST(PricingParse, NewFieldErrorsNameThePathAndLine) {
  const auto err = [](std::string_view yaml) {
    auto t = PriceTable::parse(yaml);
    return t ? std::string("<ok>") : t.error();
  };
  const std::string head = "version: 1\nmodels:\n  m:\n    input_cost_per_token: \"1e-6\"\n    output_cost_per_token: \"1e-6\"\n";
  const std::string tail = "    source: s\n    as_of: d\n";
  EXPECT_NE(err(head + "    cache_creation_input_token_cost: \"-1\"\n" + tail)
                .find("models.m.cache_creation_input_token_cost (line 6): "),
            std::string::npos);
  EXPECT_NE(err(head + "    cache_creation_input_token_cost: \"-1\"\n" + tail).find("negative"), std::string::npos);
  EXPECT_NE(err(head + "    web_search_cost_per_call: ten\n" + tail).find("models.m.web_search_cost_per_call (line 6)"),
            std::string::npos);
  EXPECT_NE(err(head + "    output_cost_per_token_priority: [1]\n" + tail)
                .find("models.m.output_cost_per_token_priority (line 6): expected a decimal string"),
            std::string::npos);
  EXPECT_NE(err(head + "    cache_write: \"1e-6\"\n" + tail).find("models.m.cache_write (line 6): unknown field"),
            std::string::npos);
  EXPECT_NE(err(head + "    tier:\n      above_input_tokens: 10\n      input_cost_per_token: \"1e-6\"\n"
                       "      output_cost_per_token: \"1e-6\"\n      cache_creation_input_token_cost: x\n" +
                tail)
                .find("models.m.tier.cache_creation_input_token_cost (line 10)"),
            std::string::npos);
  EXPECT_NE(err(head + "    tier:\n      above_input_tokens: 10\n      input_cost_per_token: \"1e-6\"\n"
                       "      output_cost_per_token: \"1e-6\"\n      cache_creation_input_token_cost_above_1hr: \"1e-6\"\n" +
                tail)
                .find("models.m.tier.cache_creation_input_token_cost_above_1hr (line 10): unknown field"),
            std::string::npos);
}

TEST(PricingTable, MergedReplacesSameKeysAndAddsOthers) {
  auto base = PriceTable::parse(
      "version: 1\nmodels:\n  a:\n    input_cost_per_token: \"1e-6\"\n    output_cost_per_token: \"1e-6\"\n"
      "    source: s\n    as_of: d\n  b:\n    input_cost_per_token: \"1e-6\"\n    output_cost_per_token: \"1e-6\"\n"
      "    source: s\n    as_of: d\n");
  auto overlay = PriceTable::parse(
      "version: 1\nmodels:\n  b:\n    input_cost_per_token: \"5e-6\"\n    output_cost_per_token: \"5e-6\"\n"
      "    source: t\n    as_of: e\n  \"c/with: odd \\\"chars\\\"\":\n    input_cost_per_token: \"2e-6\"\n"
      "    output_cost_per_token: \"2e-6\"\n    source: t\n    as_of: e\n");
  ASSERT_TRUE(base && overlay) << (base ? overlay.error() : base.error());
  const PriceTable m = PriceTable::merged(*base, *overlay);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.lookup("a")->input.picos, 1'000'000);
  EXPECT_EQ(m.lookup("b")->input.picos, 5'000'000);
  EXPECT_EQ(m.lookup("b")->source, "t");
  EXPECT_EQ(m.lookup("c/with: odd \"chars\"")->input.picos, 2'000'000);
  auto back = PriceTable::parse(m.to_yaml());  // keys with ':' and quotes survive the writer
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->size(), 3u);
  EXPECT_EQ(PriceTable::parse(PriceTable{}.to_yaml())->size(), 0u);
}

// ------------------------------------------------------------------ deployments

TEST(ResolveDeployment, TableByUpstreamModel) {
  const auto r = resolve_deployment_price(deployment("openai", "gpt-4o-mini-2024-07-18"), table());
  EXPECT_EQ(r.status, PriceStatus::priced);
  EXPECT_EQ(r.how, "table: gpt-4o-mini");
  EXPECT_EQ(r.price.input.picos, 150'000);
}

TEST(ResolveDeployment, ProviderSpecificKeyFirst) {
  const auto r = resolve_deployment_price(deployment("groq", "llama-3.3-70b-versatile"), table());
  EXPECT_EQ(r.status, PriceStatus::priced);
  EXPECT_EQ(r.how, "table: groq/llama-3.3-70b-versatile");
}

TEST(ResolveDeployment, BaseModelWinsAndIsExclusive) {
  auto d = deployment("azure", "my-company-gpt4o");  // Azure deployment names are arbitrary
  EXPECT_EQ(resolve_deployment_price(d, table()).status, PriceStatus::unpriced);
  d.base_model = "azure/gpt-4o-2024-08-06";
  const auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::priced);
  EXPECT_EQ(r.how, "table: azure/gpt-4o");
  // An unknown base_model does not fall back to the upstream name.
  auto d2 = deployment("openai", "gpt-4o");
  d2.base_model = "no-such-model";
  EXPECT_EQ(resolve_deployment_price(d2, table()).status, PriceStatus::unpriced);
}

TEST(ResolveDeployment, UnknownModelIsUnpricedNotZero) {
  const auto r = resolve_deployment_price(deployment("openai", "my-finetune"), table());
  EXPECT_EQ(r.status, PriceStatus::unpriced);
  EXPECT_EQ(r.how, "unpriced");
  const auto self_hosted = resolve_deployment_price(deployment("vllm", "gpt-4o"), table());
  EXPECT_EQ(self_hosted.status, PriceStatus::unpriced);
}

TEST(ResolveDeployment, ExplicitZeroIsPricedZero) {
  auto d = deployment("vllm", "llama-local");
  d.input_cost_per_token = "0";
  d.output_cost_per_token = "0.0";
  const auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::priced_zero);
  EXPECT_EQ(r.how, "config override");
  EXPECT_EQ(actual_cost(r.price, 1000, 1000, 0), 0);
  // Zero on a model the table prices still wins: the operator said it is free.
  auto d2 = deployment("openai", "gpt-4o");
  d2.input_cost_per_token = "0";
  d2.output_cost_per_token = "0";
  EXPECT_EQ(resolve_deployment_price(d2, table()).status, PriceStatus::priced_zero);
}

TEST(ResolveDeployment, FullOverride) {
  auto d = deployment("openai", "gpt-4o");
  d.input_cost_per_token = "0.000001";
  d.output_cost_per_token = "0.000002";
  d.max_output_tokens = 1000;
  const auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::priced);
  EXPECT_EQ(r.how, "config override");
  EXPECT_EQ(r.price.input.picos, 1'000'000);
  EXPECT_EQ(r.price.output.picos, 2'000'000);
  EXPECT_FALSE(r.price.cached_input.has_value());  // cached tokens charged at the override input price
  EXPECT_EQ(r.price.max_output_tokens, 1000);
  EXPECT_EQ(r.price.max_input_tokens, 128000);  // limits still come from the table
}

TEST(ResolveDeployment, PartialOverrideUsesTableForTheOther) {
  auto d = deployment("openai", "gpt-4o");
  d.output_cost_per_token = "0.00002";
  const auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::priced);
  EXPECT_EQ(r.how, "config override + table: gpt-4o");
  EXPECT_EQ(r.price.input.picos, 2'500'000);
  EXPECT_EQ(r.price.output.picos, 20'000'000);

  auto unknown = deployment("openai", "my-finetune");
  unknown.input_cost_per_token = "0.000001";
  const auto u = resolve_deployment_price(unknown, table());
  EXPECT_EQ(u.status, PriceStatus::unpriced);
  EXPECT_NE(u.how.find("only input_cost_per_token"), std::string::npos);
}

TEST(ResolveDeployment, InvalidOverrideIsUnpricedNeverZero) {
  auto d = deployment("openai", "gpt-4o");
  d.input_cost_per_token = "cheap";
  d.output_cost_per_token = "0";
  const auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::unpriced);
  EXPECT_NE(r.how.find("invalid input_cost_per_token"), std::string::npos);
}

TEST(ResolveDeployment, EveryCostKeyOverridesItsOneField) {
  // Each key alone, on a table model: that one price changes, the rest is the table's.
  const ModelPrice base = table().lookup("claude-sonnet-4-5").value();
  struct Case {
    std::optional<std::string> config::Deployment::*field;
    std::function<std::optional<std::int64_t>(const ModelPrice&)> get;
  };
  const auto opt = [](const std::optional<PerTokenPrice>& p) { return p ? std::optional(p->picos) : std::nullopt; };
  const std::vector<Case> cases{
      {&config::Deployment::cache_read_input_token_cost, [&](const ModelPrice& p) { return opt(p.cached_input); }},
      {&config::Deployment::cache_creation_input_token_cost, [&](const ModelPrice& p) { return opt(p.cache_write); }},
      {&config::Deployment::cache_creation_input_token_cost_above_1hr,
       [&](const ModelPrice& p) { return opt(p.cache_write_1h); }},
      {&config::Deployment::output_cost_per_reasoning_token, [&](const ModelPrice& p) { return opt(p.reasoning); }},
      {&config::Deployment::input_cost_per_audio_token, [&](const ModelPrice& p) { return opt(p.audio_input); }},
      {&config::Deployment::output_cost_per_audio_token, [&](const ModelPrice& p) { return opt(p.audio_output); }},
      {&config::Deployment::output_cost_per_image_token, [&](const ModelPrice& p) { return opt(p.image_output); }},
      {&config::Deployment::web_search_cost_per_call, [&](const ModelPrice& p) { return opt(p.web_search_call); }},
      {&config::Deployment::input_cost_per_token_priority,
       [&](const ModelPrice& p) { return p.priority ? std::optional(p.priority->input.picos) : std::nullopt; }},
      {&config::Deployment::output_cost_per_token_priority,
       [&](const ModelPrice& p) { return p.priority ? std::optional(p.priority->output.picos) : std::nullopt; }},
      {&config::Deployment::cache_read_input_token_cost_priority,
       [&](const ModelPrice& p) { return p.priority ? opt(p.priority->cached_input) : std::nullopt; }},
      {&config::Deployment::input_cost_per_token_flex,
       [&](const ModelPrice& p) { return p.flex ? std::optional(p.flex->input.picos) : std::nullopt; }},
      {&config::Deployment::output_cost_per_token_flex,
       [&](const ModelPrice& p) { return p.flex ? std::optional(p.flex->output.picos) : std::nullopt; }},
      {&config::Deployment::cache_read_input_token_cost_flex,
       [&](const ModelPrice& p) { return p.flex ? opt(p.flex->cached_input) : std::nullopt; }},
  };
  for (const Case& c : cases) {
    auto d = deployment("anthropic", "claude-sonnet-4-5-20250929");
    d.*c.field = "0.000000123";
    const auto r = resolve_deployment_price(d, table());
    EXPECT_EQ(r.status, PriceStatus::priced);
    EXPECT_EQ(r.how, "config override + table: claude-sonnet-4-5");
    EXPECT_EQ(c.get(r.price), 123'000);
    EXPECT_EQ(r.price.input, base.input);
    EXPECT_EQ(r.price.output, base.output);
    ASSERT_TRUE(r.price.long_prompt_tier.has_value());  // only input/output overrides drop the tier
  }
  // Every flat key of the config has a case here or is input/output.
  EXPECT_EQ(cases.size() + 2, config::kDeploymentCostKeys.size());
}

TEST(ResolveDeployment, CachedTokensAreNoLongerBilledAtTheFullInputPrice) {
  // A LiteLLM config that prices cache reads and writes itself.
  auto d = deployment("openai", "my-claude-proxy");
  d.input_cost_per_token = "0.000003";
  d.output_cost_per_token = "0.000015";
  d.cache_read_input_token_cost = "0.0000003";
  d.cache_creation_input_token_cost = "0.00000375";
  const auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::priced);
  EXPECT_EQ(r.how, "config override");
  EXPECT_EQ(r.price.cached_input->picos, 300'000);
  EXPECT_EQ(r.price.cache_write->picos, 3'750'000);
  EXPECT_FALSE(r.price.long_prompt_tier.has_value());
  EXPECT_EQ(actual_cost(r.price, 1000, 0, 1000), 300'000);  // 1000 cached × $0.30/M = $0.0003
}

TEST(ResolveDeployment, PartialOverrideDropsThePricesRelativeToTheBase) {
  auto d = deployment("anthropic", "claude-sonnet-4-5");
  d.input_cost_per_token = "0.000002";
  auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.how, "config override + table: claude-sonnet-4-5");
  EXPECT_EQ(r.price.input.picos, 2'000'000);
  EXPECT_EQ(r.price.output.picos, 15'000'000);
  EXPECT_FALSE(r.price.cached_input || r.price.cache_write || r.price.cache_write_1h || r.price.long_prompt_tier);
  EXPECT_EQ(r.price.web_search_call->picos, 10'000'000'000);  // independent of the input price: kept
  // ... unless configured alongside.
  d.cache_read_input_token_cost = "2e-7";
  r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.price.cached_input->picos, 200'000);

  auto g = deployment("openai", "gpt-5");
  g.output_cost_per_token = "0.000011";
  r = resolve_deployment_price(g, table());
  EXPECT_FALSE(r.price.priority || r.price.flex);
  g.input_cost_per_token_priority = "0.000003";
  r = resolve_deployment_price(g, table());
  ASSERT_TRUE(r.price.priority.has_value());
  EXPECT_EQ(r.price.priority->input.picos, 3'000'000);
  EXPECT_EQ(r.price.priority->output.picos, 11'000'000);  // missing tier price: the (overridden) base
  EXPECT_FALSE(r.price.flex.has_value());
}

TEST(ResolveDeployment, LongPromptTierOverride) {
  // Same threshold as the table's tier: only the given prices change.
  auto d = deployment("gemini", "gemini-2.5-pro");
  config::TierCostOverride t;
  t.above_input_tokens = 200'000;
  t.output_cost_per_token = "0.00002";
  d.long_prompt_tier_cost = t;
  auto r = resolve_deployment_price(d, table());
  ASSERT_TRUE(r.price.long_prompt_tier.has_value());
  EXPECT_EQ(r.price.long_prompt_tier->input.picos, 2'500'000);
  EXPECT_EQ(r.price.long_prompt_tier->output.picos, 20'000'000);
  EXPECT_EQ(r.price.long_prompt_tier->cached_input->picos, 250'000);
  // Another threshold: a new tier, missing prices from the base.
  t.above_input_tokens = 128'000;
  t.cache_creation_input_token_cost = "0.000001";
  d.long_prompt_tier_cost = t;
  r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.price.long_prompt_tier->above_input_tokens, 128'000);
  EXPECT_EQ(r.price.long_prompt_tier->input.picos, 1'250'000);
  EXPECT_FALSE(r.price.long_prompt_tier->cached_input.has_value());
  EXPECT_EQ(r.price.long_prompt_tier->cache_write->picos, 1'000'000);
  // On a full override too.
  auto f = deployment("vllm", "llama");
  f.input_cost_per_token = "0.000001";
  f.output_cost_per_token = "0.000001";
  f.long_prompt_tier_cost = t;
  r = resolve_deployment_price(f, table());
  EXPECT_EQ(r.how, "config override");
  EXPECT_EQ(r.price.long_prompt_tier->output.picos, 20'000'000);
  // The whole request at the tier's input price: $1/M, the base's (the tier override gives none).
  EXPECT_EQ(actual_cost(r.price, 128'001, 0, 0), 128'001'000);
  f.long_prompt_tier_cost->input_cost_per_token = "bad";
  r = resolve_deployment_price(f, table());
  EXPECT_EQ(r.status, PriceStatus::unpriced);
  EXPECT_NE(r.how.find("invalid input_cost_per_token_above_tier"), std::string::npos);
}

TEST(ResolveDeployment, OtherKeysWithoutATableEntryAreUnpriced) {
  auto d = deployment("vllm", "llama");
  d.cache_read_input_token_cost = "0";
  auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::unpriced);
  EXPECT_NE(r.how.find("need a price table entry"), std::string::npos);
  d.input_cost_per_token = "0";
  d.output_cost_per_token = "0";
  EXPECT_EQ(resolve_deployment_price(d, table()).status, PriceStatus::priced_zero);
  d.web_search_cost_per_call = "0.01";
  EXPECT_EQ(resolve_deployment_price(d, table()).status, PriceStatus::priced);  // a priced call is not free
  d.cache_creation_input_token_cost_above_1hr = "1e-3000";
  r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::unpriced);
  EXPECT_NE(r.how.find("invalid cache_creation_input_token_cost_above_1hr"), std::string::npos);
}

TEST(ResolveDeployment, EmbeddingWithZeroOutputIsPriced) {
  const auto r = resolve_deployment_price(deployment("openai", "text-embedding-3-small"), table());
  EXPECT_EQ(r.status, PriceStatus::priced);
}

TEST(ResolveDeployment, StatusNames) {
  EXPECT_EQ(to_string(PriceStatus::priced), "priced");
  EXPECT_EQ(to_string(PriceStatus::priced_zero), "priced_zero");
  EXPECT_EQ(to_string(PriceStatus::unpriced), "unpriced");
}

// ------------------------------------------------------------------ cost

TEST(ActualCost, GptFourOExample) {
  const auto p = table().lookup("gpt-4o").value();
  // 1000 prompt (400 cached) + 500 completion:
  // 600 × 2.5e6 + 400 × 1.25e6 + 500 × 1e7 picos = 1.5e9 + 5e8 + 5e9 = 7e9 picos = 7,000,000 nanos.
  EXPECT_EQ(actual_cost(p, 1000, 500, 400), 7'000'000);
  EXPECT_EQ(actual_cost(p, 1000, 500, 0), 7'500'000);
  EXPECT_EQ(actual_cost(p, 0, 0, 0), 0);
}

TEST(ActualCost, CachedFallsBackToInputPrice) {
  const auto p = table().lookup("gpt-4-turbo").value();  // no cached price
  EXPECT_EQ(actual_cost(p, 1000, 0, 1000), actual_cost(p, 1000, 0, 0));
  EXPECT_EQ(actual_cost(p, 1000, 0, 0), 10'000'000);
}

TEST(ActualCost, ClampsAndRoundsOnce) {
  ModelPrice p;
  p.input = PerTokenPrice{37'500};   // $0.0375 / M
  p.output = PerTokenPrice{37'500};
  EXPECT_EQ(actual_cost(p, 1'000'000, 0, 0), 37'500'000);
  // 1 + 1 tokens = 75 nanos exactly; per-component rounding would give 76.
  EXPECT_EQ(actual_cost(p, 1, 1, 0), 75);
  EXPECT_EQ(actual_cost(p, 1, 0, 0), 38);
  EXPECT_EQ(actual_cost(p, -10, -10, -10), 0);
  p.cached_input = PerTokenPrice{0};
  EXPECT_EQ(actual_cost(p, 10, 0, 50), 0);  // cached clamped to prompt: all 10 cached at 0
}

TEST(ActualCost, LongPromptTier) {
  const auto p = table().lookup("gemini-2.5-pro").value();
  ASSERT_TRUE(p.long_prompt_tier.has_value());
  EXPECT_EQ(actual_cost(p, 200'000, 0, 0), 250'000'000);  // 200k × $1.25/M = $0.25
  EXPECT_EQ(actual_cost(p, 200'001, 0, 0), 500'002'500);  // whole request at $2.50/M
}

TEST(ActualCost, Saturates) {
  ModelPrice p;
  p.input = PerTokenPrice{std::numeric_limits<std::int64_t>::max()};
  p.output = p.input;
  p.cached_input = p.input;
  const auto max64 = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(actual_cost(p, max64, max64, max64 / 2), kMaxNanos);
  EXPECT_EQ(worst_case_cost(p, max64, max64), kMaxNanos);
}

TEST(WorstCaseCost, BoundsActualCost) {
  const auto p = table().lookup("gpt-4o").value();
  // No service tier asked: the answer may come at priority prices ($4.25 / $17 per M).
  EXPECT_EQ(worst_case_cost(p, 1000, 500), 12'750'000);
  EXPECT_EQ(worst_case_cost(worst_case_rates(p, 1000, "default"), 500), 7'500'000);
  for (std::int64_t prompt : {0, 1, 999, 1000}) {
    for (std::int64_t cached : {std::int64_t{0}, prompt}) {
      EXPECT_LE(actual_cost(p, prompt, 500, cached), worst_case_cost(p, 1000, 500));
    }
  }
  const auto g = table().lookup("gemini-1.5-pro").value();
  EXPECT_LE(actual_cost(g, 128'001, 10, 0), worst_case_cost(g, 128'001, 10));
  EXPECT_GT(worst_case_cost(g, 128'001, 0), worst_case_cost(g, 128'000, 0) * 3 / 2);
  // A cached price higher than input (never seen, but allowed) still bounds.
  ModelPrice odd;
  odd.input = PerTokenPrice{1'000};
  odd.cached_input = PerTokenPrice{5'000};
  EXPECT_LE(actual_cost(odd, 100, 0, 100), worst_case_cost(odd, 100, 0));
}

// ------------------------------------------------------------------ bounds

// The input-bound cases live in token_bounds_test.cpp.

}  // namespace
}  // namespace tollgate::budget

// ------------------------------------------------------------------ issue 12 providers

namespace tollgate::budget {

TEST(PricingCompat, OllamaIsFreeNotUnknown) {
  auto d = deployment("ollama_chat", "llama3.1");
  d.provider = config::ProviderKind::ollama_chat;
  const auto r = resolve_deployment_price(d, table());
  EXPECT_EQ(r.status, PriceStatus::priced_zero) << r.how;
  EXPECT_EQ(r.how, "free: ollama (self-hosted)");
  auto g = deployment("ollama", "llama2");
  g.provider = config::ProviderKind::ollama;
  EXPECT_EQ(resolve_deployment_price(g, table()).status, PriceStatus::priced_zero);
  // An operator's price still wins.
  g.input_cost_per_token = "0.000001";
  g.output_cost_per_token = "0.000002";
  EXPECT_EQ(resolve_deployment_price(g, table()).status, PriceStatus::priced);
  // The same model name elsewhere is unknown, not free.
  auto v = deployment("vllm", "llama2");
  EXPECT_EQ(resolve_deployment_price(v, table()).status, PriceStatus::unpriced);
}

TEST(PricingCompat, CohereAndMistralAliasFromTheTable) {
  const auto r = resolve_deployment_price(deployment("cohere", "command-r-08-2024"), table());
  ASSERT_EQ(r.status, PriceStatus::priced) << r.how;
  EXPECT_EQ(r.how, "table: command-r");
  EXPECT_EQ(resolve_deployment_price(deployment("cohere", "command-a-03-2025"), table()).how, "table: command-a");
  const auto m = resolve_deployment_price(deployment("mistralai", "mistral-small-latest"), table());
  const auto n = resolve_deployment_price(deployment("mistral", "mistral-small-latest"), table());
  ASSERT_EQ(m.status, PriceStatus::priced) << m.how;
  EXPECT_EQ(m.how, n.how);
}

}  // namespace tollgate::budget
