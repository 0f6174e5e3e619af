#pragma once
// What an attempt costs: the actual cost from reported usage and the worst case from token upper
// bounds (DESIGN.md "Money and units", "Budget admission"). Pure functions; thread-safe.

#include <cstdint>

#include "budget/money.hpp"
#include "budget/pricing.hpp"

namespace tollgate::budget {

/// The actual cost of one attempt from the upstream's reported usage, in nano-dollars.
///
/// Token convention (providers/usage.hpp, OpenAI's): `prompt_tokens` includes `cached_tokens`.
/// Uncached prompt tokens cost `input`, cached ones `cached_input` (or `input` when the model has
/// no cached price), completion tokens `output`; when prompt_tokens > the long-prompt tier
/// threshold the tier's prices apply to the whole request. The sum is taken in pico-dollars and
/// rounded UP once to a nano-dollar; saturates at kMaxNanos. Negative counts count as 0;
/// cached_tokens is clamped to [0, prompt_tokens].
/// Anthropic cache-creation tokens are charged at `input` (the provider charges 1.25x): see
/// docs/pricing.md.
[[nodiscard]] Nanos actual_cost(const ModelPrice& price, std::int64_t prompt_tokens, std::int64_t completion_tokens,
                                std::int64_t cached_tokens);

/// The most an attempt can cost given token upper bounds, in nano-dollars (rounded up,
/// saturating): every input token at the higher of the input and cached prices, every output
/// token at `output`, using the long-prompt tier's prices when the input bound exceeds its
/// threshold. Always >= actual_cost for usage within the bounds.
[[nodiscard]] Nanos worst_case_cost(const ModelPrice& price, std::int64_t input_tokens_upper_bound,
                                    std::int64_t output_tokens_upper_bound);

}  // namespace tollgate::budget
