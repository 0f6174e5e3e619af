#include "budget/cost.hpp"

#include <gtest/gtest.h>

using namespace tollgate::budget;

namespace {

PerTokenPrice per_million(std::int64_t micro_dollars_per_million) {
  // $X per million tokens = X picos... per token: $1/M = 1e-6 $/token = 1'000'000 picos.
  return PerTokenPrice{micro_dollars_per_million};
}

/// Claude Sonnet 4.5-like: $3/M in, $15/M out, read 0.1x, write 1.25x (5 min) and 2x (1 h).
ModelPrice claude() {
  ModelPrice p;
  p.input = per_million(3'000'000);
  p.output = per_million(15'000'000);
  p.cached_input = per_million(300'000);
  p.cache_write = per_million(3'750'000);
  p.cache_write_1h = per_million(6'000'000);
  return p;
}

Usage usage(std::int64_t prompt, std::int64_t completion) {
  Usage u;
  u.prompt_tokens = prompt;
  u.completion_tokens = completion;
  u.reported = true;
  return u;
}

std::int64_t count_of(const Charge& c, LineKind k) {
  for (const auto& i : c.items)
    if (i.kind == k) return i.count;
  return 0;
}

}  // namespace

TEST(PriceUsage, CacheWritesOfBothTtlsAtTheirPrices) {
  auto u = usage(10'000, 100);
  u.cached_tokens = 2'000;
  u.cache_write_tokens = 3'000;
  u.cache_write_1h_tokens = 1'000;
  const auto c = price_usage(claude(), u);
  // 4,000 × 3 + 2,000 × 0.3 + 3,000 × 3.75 + 1,000 × 6 + 100 × 15 (µ$) = 12,000 + 600 + 11,250 + 6,000 + 1,500
  EXPECT_EQ(c.total, 31'350'000);
  EXPECT_EQ(count_of(c, LineKind::input), 4'000);
  EXPECT_EQ(count_of(c, LineKind::cache_write), 3'000);
  EXPECT_EQ(count_of(c, LineKind::cache_write_1h), 1'000);
  EXPECT_EQ(c.items.size(), 5u);
}

TEST(PriceUsage, OneHourWritesFallBackToTheFiveMinutePriceThenInput) {
  ModelPrice p = claude();
  p.cache_write_1h.reset();
  auto u = usage(1'000, 0);
  u.cache_write_1h_tokens = 1'000;
  EXPECT_EQ(price_usage(p, u).total, 3'750'000);
  p.cache_write.reset();
  EXPECT_EQ(price_usage(p, u).total, 3'000'000);
}

TEST(PriceUsage, PartsLargerThanThePromptAreClampedNotCountedTwice) {
  auto u = usage(100, 0);
  u.cached_tokens = 80;
  u.cache_write_tokens = 80;  // only 20 left
  const auto c = price_usage(claude(), u);
  EXPECT_EQ(count_of(c, LineKind::cached_input), 80);
  EXPECT_EQ(count_of(c, LineKind::cache_write), 20);
  EXPECT_EQ(count_of(c, LineKind::input), 0);
}

// The split the cost prices is the one fit_prompt_parts leaves in the usage: fitting a usage
// changes neither its parts' sum beyond the prompt nor its bill.
TEST(PriceUsage, FittingThePromptsPartsKeepsTheBillAndMakesThemAddUp) {
  auto u = usage(100, 3);
  u.cached_tokens = 70;
  u.cache_write_tokens = 20;
  u.cache_write_1h_tokens = 30;  // only 10 left
  u.audio_input_tokens = 5;      // nothing left
  const auto split = u.prompt_split();
  EXPECT_EQ(split.cached, 70);
  EXPECT_EQ(split.cache_write, 20);
  EXPECT_EQ(split.cache_write_1h, 10);
  EXPECT_EQ(split.audio, 0);
  EXPECT_EQ(split.text, 0);
  const auto before = price_usage(claude(), u);
  u.fit_prompt_parts();
  EXPECT_EQ(u.cached_tokens + u.cache_write_tokens + u.cache_write_1h_tokens + u.audio_input_tokens, 100);
  EXPECT_EQ(u.cache_write_1h_tokens, 10);
  EXPECT_EQ(u.audio_input_tokens, 0);
  EXPECT_EQ(price_usage(claude(), u).total, before.total);
  // Negative counts (never read from an upstream, but a Usage is plain data) read as 0.
  auto odd = usage(-5, 0);
  odd.cached_tokens = -3;
  EXPECT_EQ(odd.prompt_split().text, 0);
  EXPECT_EQ(odd.prompt_split().cached, 0);
  auto within = usage(50, 0);
  within.cached_tokens = 10;
  within.audio_input_tokens = 15;
  EXPECT_EQ(within.prompt_split().text, 25);
}

TEST(PriceUsage, ReasoningReportedOutsideCompletionIsBilledToo) {
  ModelPrice p;
  p.input = per_million(3'000'000);
  p.output = per_million(15'000'000);
  auto u = usage(0, 143);
  u.reasoning_tokens = 760;
  u.reasoning_outside_completion = true;  // xAI: 143 completion + 760 reasoning
  EXPECT_EQ(price_usage(p, u).total, (143LL + 760) * 15'000'000 / 1'000);
  u.reasoning_outside_completion = false;  // OpenAI: reasoning is part of completion_tokens
  u.completion_tokens = 903;
  EXPECT_EQ(price_usage(p, u).total, 903LL * 15'000'000 / 1'000);
  p.reasoning = per_million(20'000'000);
  EXPECT_EQ(price_usage(p, u).total, (143LL * 15'000'000 + 760LL * 20'000'000) / 1'000);
}

TEST(PriceUsage, AudioImageAndWebSearch) {
  ModelPrice p;
  p.input = per_million(2'500'000);
  p.output = per_million(10'000'000);
  p.audio_input = per_million(40'000'000);
  p.audio_output = per_million(80'000'000);
  p.web_search_call = PerTokenPrice{10'000'000'000};  // $0.01 per call
  auto u = usage(1'000, 500);
  u.audio_input_tokens = 600;
  u.audio_output_tokens = 300;
  u.web_search_calls = 2;
  const auto c = price_usage(p, u);
  EXPECT_EQ(c.total, (400LL * 2'500'000 + 600LL * 40'000'000 + 200LL * 10'000'000 + 300LL * 80'000'000) / 1'000 + 20'000'000);
  EXPECT_EQ(count_of(c, LineKind::web_search), 2);
}

TEST(PriceUsage, ServiceTierPricesApplyWhenTheResponseNamesTheTier) {
  ModelPrice p;
  p.input = per_million(1'250'000);
  p.output = per_million(10'000'000);
  p.priority = ServiceTierPrice{per_million(2'500'000), per_million(20'000'000), std::nullopt};
  auto u = usage(1'000, 1'000);
  EXPECT_EQ(price_usage(p, u).total, 11'250'000);
  u.service_tier = "priority";
  const auto c = price_usage(p, u);
  EXPECT_EQ(c.total, 22'500'000);
  EXPECT_EQ(c.service_tier, "priority");
  u.service_tier = "flex";  // no flex prices: base
  EXPECT_EQ(price_usage(p, u).total, 11'250'000);
}

TEST(PriceUsage, LongPromptTierCarriesTheCacheWriteMultiplier) {
  ModelPrice p = claude();
  p.long_prompt_tier = PriceTier{200'000, per_million(6'000'000), per_million(22'500'000), std::nullopt, std::nullopt};
  auto u = usage(200'001, 0);
  u.cache_write_tokens = 100'000;
  // 100,001 × $6/M + 100,000 × $7.50/M (1.25 × the tier's input)
  EXPECT_EQ(price_usage(p, u).total, (100'001LL * 6'000'000 + 100'000LL * 7'500'000 + 999) / 1'000);
}

TEST(WorstCase, CoversEveryKindAndTier) {
  ModelPrice p = claude();
  p.priority = ServiceTierPrice{per_million(6'000'000), per_million(30'000'000), std::nullopt};
  const auto r = worst_case_rates(p, 1'000, "default");
  EXPECT_EQ(r.input_picos, 1'000LL * 6'000'000);  // the 1-hour write price
  EXPECT_EQ(r.output.picos, 15'000'000);
  // No tier asked (or "auto"): the provider may answer at priority prices.
  EXPECT_EQ(worst_case_rates(p, 1'000).output.picos, 30'000'000);
  EXPECT_EQ(worst_case_rates(p, 1'000, "auto").output.picos, 30'000'000);
  const auto rp = worst_case_rates(p, 1'000, "priority");
  EXPECT_EQ(rp.output.picos, 30'000'000);
  EXPECT_EQ(rp.input_picos, 1'000LL * 12'000'000);  // 2x the priority input
  // Any usage within the bounds costs at most the worst case.
  for (std::int64_t cached : {0, 500, 1'000})
    for (std::int64_t w1h : {0, 300, 1'000}) {
      auto u = usage(1'000, 200);
      u.cached_tokens = cached;
      u.cache_write_1h_tokens = w1h;
      u.service_tier = w1h % 2 ? "priority" : "";
      EXPECT_LE(price_usage(p, u).total, worst_case_cost(rp, 200));
    }
}

TEST(WorstCase, AffordableOutputTokensInvertsTheCost) {
  ModelPrice p;
  p.input = per_million(2'500'000);
  p.output = per_million(10'000'000);
  const auto r = worst_case_rates(p, 1'000);  // $0.0025 of input
  EXPECT_EQ(affordable_output_tokens(r, 2'000'000), 0);  // less than the input alone
  const Nanos budget = 30'000'000;                       // $0.03
  const auto out = affordable_output_tokens(r, budget);
  EXPECT_EQ(out, 2'750);
  EXPECT_LE(worst_case_cost(r, out), budget);
  EXPECT_GT(worst_case_cost(r, out + 1), budget);
  ModelPrice free_out = p;
  free_out.output = PerTokenPrice{0};
  EXPECT_EQ(affordable_output_tokens(worst_case_rates(free_out, 10), 100'000), INT64_MAX);
}
