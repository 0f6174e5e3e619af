#include "budget/pricing.hpp"
#include "budget/cost.hpp"
#include "budget/token_bounds.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tollgate::budget {
namespace {

const PriceTable& table() { return PriceTable::bundled(); }

std::string key_of(std::string_view model) {
  auto p = table().lookup(model);
  return p ? p->matched_key : "<unpriced>";
}

boost::json::object json(std::string_view text) { return boost::json::parse(text).as_object(); }

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
        "open-mistral-nemo", "groq/llama-3.1-8b-instant", "groq/llama-3.3-70b-versatile", "groq/mixtral-8x7b"}) {
    EXPECT_EQ(key_of(m), m);
  }
}

TEST(PricingBundled, EveryEntryHasSourceDateAndSanePrices) {
  for (const auto& [key, p] : table().entries()) {
    EXPECT_TRUE(p.source.starts_with("https://")) << key;
    EXPECT_EQ(p.as_of.size(), 10u) << key;
    EXPECT_GT(p.input.picos, 0) << key;
    EXPECT_TRUE(p.max_input_tokens.has_value()) << key;
    if (!key.contains("embedding")) {
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
  EXPECT_EQ(worst_case_cost(p, 1000, 500), 7'500'000);
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

TEST(OutputBound, RequestLimitTimesN) {
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":100})"), 16384), 100);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_completion_tokens":50,"max_tokens":100})"), 16384), 50);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":100,"n":3})"), 16384), 300);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":100.0})"), std::nullopt), 100);
}

TEST(OutputBound, FallsBackToModelMaxThenDefault) {
  EXPECT_EQ(output_token_upper_bound(json(R"({})"), 16384), 16384);
  EXPECT_EQ(output_token_upper_bound(json(R"({"n":2})"), 16384), 32768);
  EXPECT_EQ(output_token_upper_bound(json(R"({})"), std::nullopt), kDefaultOutputTokenBound);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":1000000})"), 4096), 4096);  // capped by the model
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":1000000})"), std::nullopt), 1'000'000);
}

TEST(OutputBound, InvalidValuesIgnoredAndSaturates) {
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":-5})"), 8192), 8192);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":"100"})"), 8192), 8192);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":100,"n":0})"), 8192), 100);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":100.5})"), 8192), 8192);
  EXPECT_EQ(output_token_upper_bound(json(R"({"max_tokens":9223372036854775807,"n":4})"), std::nullopt),
            std::numeric_limits<std::int64_t>::max());
}

}  // namespace
}  // namespace tollgate::budget
