#pragma once
// What an attempt costs: the actual cost from reported usage, priced line by line, and the worst
// case from token upper bounds (DESIGN.md "Money and units", "Budget admission"; docs/pricing.md).
// Pure functions; thread-safe.

#include <cstdint>
#include <string_view>
#include <vector>

#include "budget/money.hpp"
#include "budget/pricing.hpp"
#include "budget/usage.hpp"

namespace tollgate::budget {

/// One kind of billed token (or call).
enum class LineKind {
  input,           ///< uncached text prompt tokens
  cached_input,    ///< prompt tokens read from the cache
  cache_write,     ///< prompt tokens written to the cache, 5-minute TTL
  cache_write_1h,  ///< prompt tokens written to the cache, 1-hour TTL
  audio_input,     ///< audio prompt tokens
  output,          ///< text completion tokens
  reasoning,       ///< reasoning tokens
  audio_output,    ///< audio completion tokens
  image_output,    ///< image completion tokens
  web_search,      ///< web-search tool calls (a count of calls, not tokens)
};

/// "input", "cached_input", "cache_write", "cache_write_1h", "audio_input", "output",
/// "reasoning", "audio_output", "image_output", "web_search" (stable: spend-log line items).
[[nodiscard]] std::string_view to_string(LineKind kind) noexcept;

/// One priced line of an attempt's bill.
struct LineItem {
  LineKind kind = LineKind::input;
  std::int64_t count = 0;   ///< tokens (calls for web_search)
  PerTokenPrice price;      ///< pico-dollars per token (per call)
  std::int64_t picos = 0;   ///< count × price, pico-dollars (saturating at INT64_MAX)
};

/// An attempt's bill: its line items (only kinds with a non-zero count) and the total, summed in
/// pico-dollars and rounded UP once to nano-dollars (saturating at kMaxNanos).
struct Charge {
  Nanos total = 0;
  std::vector<LineItem> items;
  std::string_view service_tier;  ///< the tier whose prices applied: "priority", "flex" (string literals), empty = base prices
};

/// Prices `usage` (budget/usage.hpp) at `price` (docs/pricing.md "What each token kind costs"):
/// - the card: the long-prompt tier when prompt_tokens > its threshold; the `priority` / `flex`
///   prices when usage.service_tier names that tier and the model has them (they replace input,
///   output and cached input; a long-prompt tier's own prices are then not used);
/// - input: cached_tokens at cached_input, cache_write_tokens at cache_write, cache_write_1h_tokens
///   at cache_write_1h, audio_input_tokens at audio_input, the rest of prompt_tokens at input
///   (each absent price falls back as ModelPrice documents); parts larger than what is left of
///   prompt_tokens are clamped, so no token is counted twice;
/// - output: Usage::billed_output_tokens(), of which reasoning_tokens (when a reasoning price is
///   set or they were reported outside completion_tokens), audio_output_tokens and
///   image_output_tokens at their prices, the rest at output;
/// - web_search_calls at web_search_call (0 when the model has no such price).
/// Negative counts count as 0.
[[nodiscard]] Charge price_usage(const ModelPrice& price, const Usage& usage);

/// price_usage(price, {prompt_tokens, completion_tokens, cached_tokens}).total: the bill of plain
/// text usage, in nano-dollars.
[[nodiscard]] Nanos actual_cost(const ModelPrice& price, std::int64_t prompt_tokens, std::int64_t completion_tokens,
                                std::int64_t cached_tokens);

/// The rates at which an attempt's worst case is priced: every input token at the dearest input
/// kind that may apply (input, cached, cache writes of both TTLs, audio), every output token at
/// the dearest output kind (output, reasoning, audio, image), from the long-prompt tier when the
/// input bound exceeds its threshold, and from the service tier the provider may answer in: the
/// requested one ("priority", "flex"); with none requested or "auto", the priority prices too
/// (OpenAI's project default and Anthropic's `auto` may serve at priority without the request
/// saying so); "default", "standard" or "standard_only": base prices only.
struct WorstCaseRates {
  std::int64_t input_picos = 0;  ///< input bound × the dearest input price, pico-dollars (saturating)
  PerTokenPrice output;          ///< the dearest output-kind price, pico-dollars per token
};

/// The worst-case rates of an attempt with at most `input_tokens_upper_bound` input tokens.
[[nodiscard]] WorstCaseRates worst_case_rates(const ModelPrice& price, std::int64_t input_tokens_upper_bound,
                                              std::string_view service_tier = {});

/// ceil((input_picos + output_tokens × output) / 1000) nano-dollars, saturating at kMaxNanos.
[[nodiscard]] Nanos worst_case_cost(const WorstCaseRates& rates, std::int64_t output_tokens);

/// The largest output token count whose worst case fits in `amount` nano-dollars: 0 when even
/// the input does not fit, INT64_MAX when output is free.
[[nodiscard]] std::int64_t affordable_output_tokens(const WorstCaseRates& rates, Nanos amount);

/// worst_case_cost(worst_case_rates(price, input_tokens_upper_bound), output_tokens_upper_bound):
/// the most an attempt within those bounds can cost, in nano-dollars. Always >= the
/// price_usage() total of any usage within the bounds.
[[nodiscard]] Nanos worst_case_cost(const ModelPrice& price, std::int64_t input_tokens_upper_bound,
                                    std::int64_t output_tokens_upper_bound);

}  // namespace tollgate::budget
