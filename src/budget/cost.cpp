#include "budget/cost.hpp"

#include <algorithm>

namespace tollgate::budget {
namespace {

__extension__ typedef __int128 i128;

// Σ tokens × picos, rounded up once to nano-dollars, saturating.
Nanos picos_to_nanos(i128 picos) {
  const i128 nanos = (picos + (kPicosPerNano - 1)) / kPicosPerNano;
  return nanos > kMaxNanos ? kMaxNanos : static_cast<Nanos>(nanos);
}

i128 times(std::int64_t tokens, PerTokenPrice p) {
  return tokens <= 0 || p.picos <= 0 ? 0 : static_cast<i128>(tokens) * static_cast<i128>(p.picos);
}

struct Rates {
  PerTokenPrice input, output, cached;
};

Rates rates_for(const ModelPrice& price, std::int64_t prompt_tokens) {
  if (price.long_prompt_tier && prompt_tokens > price.long_prompt_tier->above_input_tokens) {
    const auto& t = *price.long_prompt_tier;
    return {t.input, t.output, t.cached_input.value_or(t.input)};
  }
  return {price.input, price.output, price.cached_input.value_or(price.input)};
}
}  // namespace

Nanos actual_cost(const ModelPrice& price, std::int64_t prompt_tokens, std::int64_t completion_tokens,
                  std::int64_t cached_tokens) {
  prompt_tokens = std::max<std::int64_t>(prompt_tokens, 0);
  completion_tokens = std::max<std::int64_t>(completion_tokens, 0);
  cached_tokens = std::clamp<std::int64_t>(cached_tokens, 0, prompt_tokens);
  const Rates r = rates_for(price, prompt_tokens);
  // Each product < 2^126 and the sum of three < 2^127: no 128-bit overflow.
  return picos_to_nanos(times(prompt_tokens - cached_tokens, r.input) + times(cached_tokens, r.cached) +
                        times(completion_tokens, r.output));
}

Nanos worst_case_cost(const ModelPrice& price, std::int64_t input_tokens_upper_bound,
                      std::int64_t output_tokens_upper_bound) {
  const std::int64_t in = std::max<std::int64_t>(input_tokens_upper_bound, 0);
  const std::int64_t out = std::max<std::int64_t>(output_tokens_upper_bound, 0);
  // With a tier, a request with fewer prompt tokens than the bound may fall below the
  // threshold; the tier prices are the higher ones, so pricing by the bound stays an upper bound.
  const Rates r = rates_for(price, in);
  const PerTokenPrice in_price{std::max(r.input.picos, r.cached.picos)};
  return picos_to_nanos(times(in, in_price) + times(out, r.output));
}

}  // namespace tollgate::budget
