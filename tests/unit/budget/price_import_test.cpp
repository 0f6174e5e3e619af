// LiteLLM's model_prices_and_context_window.json → PriceTable, price files and the effective
// table of a config (budget/pricing.hpp parse_litellm_json, budget/price_file.hpp).

#include "budget/price_file.hpp"
#include "budget/pricing.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tollgate::budget {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fixture() { return read(std::string(TOLLGATE_SOURCE_DIR) + "/tests/unit/budget/fixtures/litellm_small.json"); }

std::string import_error(std::string_view json) {
  auto t = PriceTable::parse_litellm_json(json);
  return t ? std::string("<ok>") : t.error();
}

std::int64_t picos(const std::optional<PerTokenPrice>& p) { return p ? p->picos : -1; }

/// A temporary file removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text, const std::string& ext = ".json") {
    path = (std::filesystem::temp_directory_path() / ("tollgate-price-test-" + std::to_string(::getpid()) + "-" +
                                                      std::to_string(counter()++) + ext))
               .string();
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

// ------------------------------------------------------------------ import

TEST(LitellmImport, FixtureImportsPricedEntriesAndCountsTheRest) {
  std::size_t skipped = 0;
  LitellmJsonOptions options;
  options.as_of = "2026-07-24";
  auto t = PriceTable::parse_litellm_json(fixture(), options, &skipped);
  ASSERT_TRUE(t.has_value()) << t.error();
  // dall-e per pixel (x2), whisper per second, rerank per query, tiered_pricing only.
  EXPECT_EQ(skipped, 5u);
  EXPECT_EQ(t->size(), 10u);
  for (const char* key : {"gpt-5", "claude-sonnet-4-5", "gemini/gemini-2.5-flash", "gpt-4o-audio-preview", "gpt-image-1",
                          "xai/grok-4-fast-reasoning", "together_ai/baai/bge-base-en-v1.5", "mistral/mistral-embed",
                          "text-moderation-latest", "databricks/databricks-claude-sonnet-4"}) {
    EXPECT_TRUE(t->entries().contains(key)) << key;
  }
  EXPECT_FALSE(t->entries().contains("sample_spec"));
  EXPECT_FALSE(t->entries().contains("1024-x-1024/dall-e-2"));
  EXPECT_FALSE(t->entries().contains("dashscope/qwen3-max"));
}

TEST(LitellmImport, EveryTokenPriceIsReadExactly) {
  LitellmJsonOptions options;
  options.as_of = "2026-07-24";
  auto t = PriceTable::parse_litellm_json(fixture(), options);
  ASSERT_TRUE(t.has_value()) << t.error();
  const auto& gpt5 = t->entries().at("gpt-5");
  EXPECT_EQ(gpt5.input.picos, 1'250'000);
  EXPECT_EQ(gpt5.output.picos, 10'000'000);
  EXPECT_EQ(picos(gpt5.cached_input), 125'000);
  ASSERT_TRUE(gpt5.priority && gpt5.flex);
  EXPECT_EQ(gpt5.priority->input.picos, 2'500'000);
  EXPECT_EQ(gpt5.priority->output.picos, 20'000'000);
  EXPECT_EQ(picos(gpt5.priority->cached_input), 250'000);
  EXPECT_EQ(gpt5.flex->input.picos, 625'000);
  EXPECT_EQ(picos(gpt5.flex->cached_input), 62'500);
  EXPECT_EQ(gpt5.max_input_tokens, 272000);
  EXPECT_EQ(gpt5.max_output_tokens, 128000);
  EXPECT_EQ(gpt5.as_of, "2026-07-24");
  EXPECT_EQ(gpt5.source, LitellmJsonOptions{}.source);  // no source of its own
  EXPECT_EQ(gpt5.matched_key, "gpt-5");

  const auto& sonnet = t->entries().at("claude-sonnet-4-5");
  EXPECT_EQ(picos(sonnet.cache_write), 3'750'000);
  EXPECT_EQ(picos(sonnet.cache_write_1h), 6'000'000);
  EXPECT_EQ(picos(sonnet.web_search_call), 10'000'000'000);  // $0.01 per call
  ASSERT_TRUE(sonnet.long_prompt_tier.has_value());
  EXPECT_EQ(sonnet.long_prompt_tier->above_input_tokens, 200'000);
  EXPECT_EQ(sonnet.long_prompt_tier->input.picos, 6'000'000);
  EXPECT_EQ(sonnet.long_prompt_tier->output.picos, 22'500'000);
  EXPECT_EQ(picos(sonnet.long_prompt_tier->cached_input), 600'000);
  EXPECT_EQ(picos(sonnet.long_prompt_tier->cache_write), 7'500'000);
  EXPECT_EQ(sonnet.source, "https://platform.claude.com/docs/en/about-claude/pricing");

  const auto& flash = t->entries().at("gemini/gemini-2.5-flash");
  EXPECT_EQ(picos(flash.audio_input), 1'000'000);
  EXPECT_EQ(picos(flash.reasoning), 2'500'000);
  const auto& audio = t->entries().at("gpt-4o-audio-preview");
  EXPECT_EQ(picos(audio.audio_input), 40'000'000);
  EXPECT_EQ(picos(audio.audio_output), 80'000'000);
  const auto& image = t->entries().at("gpt-image-1");
  EXPECT_EQ(image.output.picos, 0);  // no output_cost_per_token: 0, image tokens priced apart
  EXPECT_EQ(picos(image.image_output), 40'000'000);

  const auto& grok = t->entries().at("xai/grok-4-fast-reasoning");
  EXPECT_EQ(grok.max_input_tokens, 2'000'000);  // written 2000000.0
  ASSERT_TRUE(grok.long_prompt_tier.has_value());
  EXPECT_EQ(grok.long_prompt_tier->above_input_tokens, 128'000);
  EXPECT_EQ(grok.long_prompt_tier->output.picos, 1'000'000);

  const auto& embed = t->entries().at("mistral/mistral-embed");
  EXPECT_EQ(embed.output.picos, 0);
  const auto& moderation = t->entries().at("text-moderation-latest");
  EXPECT_TRUE(moderation.is_zero());
  EXPECT_FALSE(moderation.max_output_tokens.has_value());  // 0 = not given
  // Finer than a pico rounds up, never down: 2.9999900000000002e-06 → 2,999,991 picos.
  EXPECT_EQ(t->entries().at("databricks/databricks-claude-sonnet-4").input.picos, 2'999'991);
}

TEST(LitellmImport, KeysAreLowerCasedAndTheLowerCaseSpellingWins) {
  auto t = PriceTable::parse_litellm_json(R"({
    "Together_AI/BAAI/X": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1e-06},
    "together_ai/baai/x": {"input_cost_per_token": 1e-06, "output_cost_per_token": 1e-06},
    "Foo/Bar": {"input_cost_per_token": 2e-06, "output_cost_per_token": 2e-06},
    "FOO/BAR": {"input_cost_per_token": 9e-06, "output_cost_per_token": 9e-06}})");
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t->size(), 2u);
  EXPECT_EQ(t->entries().at("together_ai/baai/x").input.picos, 1'000'000);
  EXPECT_EQ(t->entries().at("foo/bar").input.picos, 2'000'000);  // neither lower-case: the first
  EXPECT_EQ(t->lookup("FOO/bar")->matched_key, "foo/bar");
}

TEST(LitellmImport, SeveralTierThresholdsNeverUnderCharge) {
  auto t = PriceTable::parse_litellm_json(R"({"m": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06,
    "input_cost_per_token_above_128k_tokens": 2e-06, "output_cost_per_token_above_128k_tokens": 3e-06,
    "input_cost_per_token_above_200k_tokens": 4e-06}})");
  ASSERT_TRUE(t.has_value()) << t.error();
  const auto& tier = t->entries().at("m").long_prompt_tier;
  ASSERT_TRUE(tier.has_value());
  EXPECT_EQ(tier->above_input_tokens, 128'000);
  EXPECT_EQ(tier->input.picos, 4'000'000);
  EXPECT_EQ(tier->output.picos, 3'000'000);
}

TEST(LitellmImport, MalformedInputNamesTheEntryAndField) {
  EXPECT_NE(import_error("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(import_error("").find("not valid JSON"), std::string::npos);
  EXPECT_NE(import_error("{} trailing").find("not valid JSON"), std::string::npos);
  EXPECT_NE(import_error("[1, 2]").find("expected a JSON object"), std::string::npos);
  EXPECT_EQ(import_error(R"({"m": 5})"), "entry \"m\": expected an object, got a number");
  EXPECT_EQ(import_error(R"({"m": {"input_cost_per_token": "0.1", "output_cost_per_token": 0}})"),
            "entry \"m\": input_cost_per_token: expected a number, got a string");
  EXPECT_EQ(import_error(R"({"m": {"input_cost_per_token": null}})"),
            "entry \"m\": input_cost_per_token: expected a number, got null");
  EXPECT_NE(import_error(R"({"m": {"input_cost_per_token": -1e-06, "output_cost_per_token": 0}})")
                .find("entry \"m\": input_cost_per_token: "),
            std::string::npos);
  EXPECT_NE(import_error(R"({"m": {"input_cost_per_token": -1e-06}})").find("negative"), std::string::npos);
  EXPECT_NE(import_error(R"({"m": {"input_cost_per_token_above_200k_tokens": -1}})")
                .find("input_cost_per_token_above_200k_tokens"),
            std::string::npos);
  EXPECT_NE(import_error(R"({"m": {"input_cost_per_token": 0, "max_input_tokens": -5}})")
                .find("entry \"m\": max_input_tokens: expected a non-negative integer"),
            std::string::npos);
  EXPECT_EQ(import_error(R"({"m": {"input_cost_per_token": 0, "max_output_tokens": 1.5}})"),
            "entry \"m\": max_output_tokens: expected an integer, got 1.5");
  EXPECT_EQ(import_error(R"({"m": {"input_cost_per_token": 0, "max_tokens": "many"}})"),
            "entry \"m\": max_tokens: expected a non-negative integer, got a string");
  EXPECT_EQ(import_error(R"({"m": {"input_cost_per_token": 0, "search_context_cost_per_query": 0.01}})"),
            "entry \"m\": search_context_cost_per_query: expected an object, got a number");
  EXPECT_EQ(import_error(R"({"m": {"input_cost_per_token": 0,
                                   "search_context_cost_per_query": {"search_context_size_medium": "x"}}})"),
            "entry \"m\": search_context_cost_per_query.search_context_size_medium: expected a number, got a string");
  EXPECT_EQ(import_error(R"({"": {"input_cost_per_token": 0}})"), "entry \"\": empty model name");
  // A malformed entry fails the whole import, even after good ones.
  EXPECT_NE(import_error(R"({"ok": {"input_cost_per_token": 1e-06}, "bad": []})").find("entry \"bad\""),
            std::string::npos);
  // Deep nesting is refused, not a crash.
  EXPECT_NE(import_error(std::string(10'000, '[') + std::string(10'000, ']')).find("not valid JSON"),
            std::string::npos);
}

TEST(LitellmImport, ImportedTableWritesAndReadsBackAsOurYaml) {
  LitellmJsonOptions options;
  options.as_of = "2026-07-24";
  auto t = PriceTable::parse_litellm_json(fixture(), options);
  ASSERT_TRUE(t.has_value()) << t.error();
  const std::string yaml = t->to_yaml("imported for a test\nsecond line");
  EXPECT_TRUE(yaml.starts_with("# imported for a test\n# second line\nversion: 1\nmodels:\n")) << yaml;
  auto back = PriceTable::parse(yaml);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->to_yaml("imported for a test\nsecond line"), yaml);
  EXPECT_EQ(back->size(), t->size());
  EXPECT_EQ(back->entries().at("claude-sonnet-4-5").long_prompt_tier->cache_write->picos, 7'500'000);
}

// ------------------------------------------------------------------ price files

TEST(PriceFile, FormatIsDetectedByContent) {
  EXPECT_EQ(detect_price_file_format("version: 1\nmodels: {}\n"), PriceFileFormat::tollgate_yaml);
  EXPECT_EQ(detect_price_file_format("# comment\n{}"), PriceFileFormat::tollgate_yaml);
  EXPECT_EQ(detect_price_file_format(" \n\t{\"gpt-5\": {}}"), PriceFileFormat::litellm_json);
  EXPECT_EQ(detect_price_file_format("\xEF\xBB\xBF{\"a\": {}}"), PriceFileFormat::litellm_json);
  EXPECT_EQ(detect_price_file_format(R"({"version": 1, "models": {}})"), PriceFileFormat::tollgate_yaml);
  EXPECT_EQ(detect_price_file_format("{broken"), PriceFileFormat::litellm_json);

  auto ours = parse_price_file(R"({"version": 1, "models": {"m": {"input_cost_per_token": "1e-6",
      "output_cost_per_token": "2e-6", "source": "s", "as_of": "2026-01-01"}}})");
  ASSERT_TRUE(ours.has_value()) << ours.error();
  EXPECT_EQ(ours->lookup("m")->output.picos, 2'000'000);
  std::size_t skipped = 9;
  auto theirs = parse_price_file(fixture(), {}, &skipped);
  ASSERT_TRUE(theirs.has_value()) << theirs.error();
  EXPECT_EQ(skipped, 5u);
  EXPECT_EQ(theirs->lookup("gpt-5")->as_of, "unknown");
}

TEST(PriceFile, EffectiveTableIsBundledPlusFile) {
  config::Config cfg;
  auto bundled = load_effective_price_table(cfg);
  ASSERT_TRUE(bundled.has_value());
  EXPECT_EQ(bundled->get(), &PriceTable::bundled());  // no copy, no I/O

  TempFile file(R"({"gpt-5": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06},
                    "my-org/custom": {"input_cost_per_token": 3e-06, "output_cost_per_token": 4e-06},
                    "whisper-1": {"input_cost_per_second": 0.0001}})");
  cfg.tollgate_settings.price_file = file.path;
  cfg.tollgate_settings.price_file_line = 7;
  auto merged = load_effective_price_table(cfg);
  ASSERT_TRUE(merged.has_value()) << merged.error();
  const PriceTable& t = **merged;
  EXPECT_EQ(t.size(), PriceTable::bundled().size() + 1);
  EXPECT_EQ(t.lookup("gpt-5")->input.picos, 1'000'000);          // replaced, as a whole entry
  EXPECT_FALSE(t.lookup("gpt-5")->cached_input.has_value());
  EXPECT_EQ(t.lookup("gpt-5")->as_of.size(), 10u);               // the file's date
  EXPECT_EQ(t.lookup("my-org/custom")->output.picos, 4'000'000); // added
  EXPECT_EQ(t.lookup("claude-haiku-4-5")->input.picos, 1'000'000);  // bundled, untouched

  config::Deployment d;
  d.model_name = "g";
  d.provider_prefix = "openai";
  d.upstream_model = "gpt-5-2025-08-07";
  cfg.model_list.push_back(d);
  const auto prices = resolve_deployment_prices(cfg);
  ASSERT_EQ(prices.size(), 1u);
  EXPECT_EQ(prices[0].price.input.picos, 1'000'000);
  EXPECT_EQ(prices[0].how, "table: gpt-5");
}

TEST(PriceFile, InvalidFileIsAConfigErrorWithPathAndLine) {
  config::Config cfg;
  cfg.tollgate_settings.price_file = "/nonexistent/tollgate/prices.yaml";
  cfg.tollgate_settings.price_file_line = 12;
  auto missing = load_effective_price_table(cfg);
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(missing.error().starts_with("tollgate_settings.price_file (line 12): /nonexistent/tollgate/prices.yaml: "
                                          "cannot read"))
      << missing.error();
  EXPECT_THROW((void)resolve_deployment_prices(cfg), std::runtime_error);

  TempFile bad_json(R"({"gpt-5": {"input_cost_per_token": -1}})");
  cfg.tollgate_settings.price_file = bad_json.path;
  auto e1 = load_effective_price_table(cfg);
  ASSERT_FALSE(e1.has_value());
  EXPECT_NE(e1.error().find("entry \"gpt-5\": input_cost_per_token"), std::string::npos) << e1.error();

  TempFile bad_yaml("version: 1\nmodels:\n  m:\n    input_cost_per_token: \"1e-6\"\n    colour: red\n", ".yaml");
  cfg.tollgate_settings.price_file = bad_yaml.path;
  auto e2 = load_effective_price_table(cfg);
  ASSERT_FALSE(e2.has_value());
  EXPECT_NE(e2.error().find("models.m.colour (line 5): unknown field"), std::string::npos) << e2.error();
}

}  // namespace
}  // namespace tollgate::budget
