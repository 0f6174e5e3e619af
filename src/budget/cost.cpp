#include "budget/cost.hpp"

#include <algorithm>
#include <limits>

namespace tollgate::budget {
namespace {

__extension__ typedef __int128 i128;

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

/// Every per-kind price of one pricing situation, fallbacks resolved.
struct Card {
  PerTokenPrice input, output, cached, cache_write, cache_write_1h, reasoning, audio_input, audio_output, image_output;
};

PerTokenPrice max_of(PerTokenPrice a, PerTokenPrice b) { return a.picos >= b.picos ? a : b; }

/// base × to / from, rounded up: a multiplier of the base card (Anthropic's 1.25x / 2x cache
/// writes) carried over to a card whose input price is `to` instead of `from`.
PerTokenPrice scaled(PerTokenPrice base, PerTokenPrice to, PerTokenPrice from) {
  if (from.picos <= 0) return max_of(base, to);
  const i128 v = (static_cast<i128>(base.picos) * to.picos + from.picos - 1) / from.picos;
  return PerTokenPrice{v > kInt64Max ? kInt64Max : static_cast<std::int64_t>(v)};
}

Card base_card(const ModelPrice& p) {
  Card c;
  c.input = p.input;
  c.output = p.output;
  c.cached = p.cached_input.value_or(p.input);
  c.cache_write = p.cache_write.value_or(p.input);
  c.cache_write_1h = p.cache_write_1h.value_or(c.cache_write);
  c.reasoning = p.reasoning.value_or(p.output);
  c.audio_input = p.audio_input.value_or(p.input);
  c.audio_output = p.audio_output.value_or(p.output);
  c.image_output = p.image_output.value_or(p.output);
  return c;
}

/// The base card with its text prices replaced by another set (a long-prompt tier or a service
/// tier): cache writes keep their multiplier of the input price unless given.
Card replaced(const Card& base, PerTokenPrice input, PerTokenPrice output, std::optional<PerTokenPrice> cached,
              std::optional<PerTokenPrice> cache_write) {
  Card c = base;
  c.input = input;
  c.output = output;
  c.cached = cached.value_or(input);
  c.cache_write = cache_write.value_or(scaled(base.cache_write, input, base.input));
  c.cache_write_1h = scaled(base.cache_write_1h, c.cache_write, base.cache_write);
  // Reasoning without a price of its own costs what output costs, on this card too; audio and
  // image prices are not tiered.
  c.reasoning = base.reasoning == base.output ? output : base.reasoning;
  return c;
}

bool in_long_tier(const ModelPrice& p, std::int64_t prompt_tokens) {
  return p.long_prompt_tier && prompt_tokens > p.long_prompt_tier->above_input_tokens;
}

Card long_card(const ModelPrice& p, const Card& base) {
  const auto& t = *p.long_prompt_tier;
  return replaced(base, t.input, t.output, t.cached_input, t.cache_write);
}

const ServiceTierPrice* service_tier_of(const ModelPrice& p, std::string_view tier) {
  if (tier == "priority" && p.priority) return &*p.priority;
  if (tier == "flex" && p.flex) return &*p.flex;
  return nullptr;
}

std::int64_t clamp_count(std::int64_t v, std::int64_t left) { return std::clamp<std::int64_t>(v, 0, left); }

i128 times(std::int64_t count, PerTokenPrice p) {
  return count <= 0 || p.picos <= 0 ? 0 : static_cast<i128>(count) * static_cast<i128>(p.picos);
}

std::int64_t sat64(i128 v) { return v > kInt64Max ? kInt64Max : static_cast<std::int64_t>(v); }

Nanos picos_to_nanos(i128 picos) {
  const i128 nanos = (picos + (kPicosPerNano - 1)) / kPicosPerNano;
  return nanos > kMaxNanos ? kMaxNanos : static_cast<Nanos>(nanos);
}

}  // namespace

std::string_view to_string(LineKind kind) noexcept {
  switch (kind) {
    case LineKind::input: return "input";
    case LineKind::cached_input: return "cached_input";
    case LineKind::cache_write: return "cache_write";
    case LineKind::cache_write_1h: return "cache_write_1h";
    case LineKind::audio_input: return "audio_input";
    case LineKind::output: return "output";
    case LineKind::reasoning: return "reasoning";
    case LineKind::audio_output: return "audio_output";
    case LineKind::image_output: return "image_output";
    case LineKind::web_search: return "web_search";
  }
  return "input";
}

Charge price_usage(const ModelPrice& price, const Usage& u) {
  Charge out;
  const std::int64_t prompt = std::max<std::int64_t>(u.prompt_tokens, 0);
  const Card base = base_card(price);
  Card card = base;
  if (const auto* st = service_tier_of(price, u.service_tier)) {
    card = replaced(base, st->input, st->output, st->cached_input, std::nullopt);
    out.service_tier = u.service_tier == "priority" ? "priority" : "flex";
  } else if (in_long_tier(price, prompt)) {
    card = long_card(price, base);
  }
  i128 total = 0;
  auto line = [&](LineKind kind, std::int64_t count, PerTokenPrice p) {
    if (count <= 0) return;
    const i128 picos = times(count, p);
    total += picos;  // each term < 2^126 and there are at most 10: no 128-bit overflow
    out.items.push_back(LineItem{kind, count, p, sat64(picos)});
  };
  // Each part takes what it reports, at most what is left of its side: no token counted twice.
  auto take = [](std::int64_t reported, std::int64_t& left) {
    const std::int64_t n = clamp_count(reported, left);
    left -= n;
    return n;
  };
  // Input: the parts first, then the uncached text.
  const Usage::PromptSplit in = u.prompt_split();
  line(LineKind::input, in.text, card.input);
  line(LineKind::cached_input, in.cached, card.cached);
  line(LineKind::cache_write, in.cache_write, card.cache_write);
  line(LineKind::cache_write_1h, in.cache_write_1h, card.cache_write_1h);
  line(LineKind::audio_input, in.audio, card.audio_input);
  // Output: the parts first, then the text.
  const std::int64_t completion = std::max<std::int64_t>(u.completion_tokens, 0);
  const std::int64_t reasoning_reported = std::max<std::int64_t>(u.reasoning_tokens, 0);
  std::int64_t out_left = u.reasoning_outside_completion
                              ? (completion > kInt64Max - reasoning_reported ? kInt64Max : completion + reasoning_reported)
                              : completion;
  const std::int64_t reasoning = take(reasoning_reported, out_left);
  const std::int64_t audio_out = take(u.audio_output_tokens, out_left);
  const std::int64_t image_out = take(u.image_output_tokens, out_left);
  line(LineKind::output, out_left, card.output);
  line(LineKind::reasoning, reasoning, card.reasoning);
  line(LineKind::audio_output, audio_out, card.audio_output);
  line(LineKind::image_output, image_out, card.image_output);
  if (price.web_search_call) line(LineKind::web_search, u.web_search_calls, *price.web_search_call);
  out.total = picos_to_nanos(total);
  return out;
}

Nanos actual_cost(const ModelPrice& price, std::int64_t prompt_tokens, std::int64_t completion_tokens,
                  std::int64_t cached_tokens) {
  Usage u;
  u.prompt_tokens = prompt_tokens;
  u.completion_tokens = completion_tokens;
  u.cached_tokens = cached_tokens;
  u.reported = true;
  return price_usage(price, u).total;
}

WorstCaseRates worst_case_rates(const ModelPrice& price, std::int64_t input_tokens_upper_bound,
                                std::string_view service_tier) {
  const std::int64_t in = std::max<std::int64_t>(input_tokens_upper_bound, 0);
  const Card base = base_card(price);
  // Every card that may apply: the base one; the long-prompt tier when the bound exceeds its
  // threshold (the real prompt may fall below it, so both); the requested service tier's (the
  // provider may answer in its default tier instead, so both).
  Card cards[3] = {base, base, base};
  int n = 1;
  if (in_long_tier(price, in)) cards[n++] = long_card(price, base);
  // The tier the provider may answer in: the one asked for; with none asked (or "auto"), the
  // priority tier too — OpenAI's project default and Anthropic's `auto` may serve a request at
  // priority prices without the request saying so. Only an explicit default tier rules it out.
  const bool base_only = service_tier == "default" || service_tier == "standard_only" || service_tier == "standard";
  const std::string_view may = base_only ? std::string_view{} : service_tier == "flex" ? service_tier : std::string_view("priority");
  if (const auto* st = service_tier_of(price, may))
    cards[n++] = replaced(base, st->input, st->output, st->cached_input, std::nullopt);
  PerTokenPrice in_price, out_price;
  for (int i = 0; i < n; ++i) {
    const Card& c = cards[i];
    for (auto p : {c.input, c.cached, c.cache_write, c.cache_write_1h, c.audio_input}) in_price = max_of(in_price, p);
    for (auto p : {c.output, c.reasoning, c.audio_output, c.image_output}) out_price = max_of(out_price, p);
  }
  return WorstCaseRates{sat64(times(in, in_price)), out_price};
}

Nanos worst_case_cost(const WorstCaseRates& rates, std::int64_t output_tokens) {
  return picos_to_nanos(static_cast<i128>(std::max<std::int64_t>(rates.input_picos, 0)) +
                        times(std::max<std::int64_t>(output_tokens, 0), rates.output));
}

std::int64_t affordable_output_tokens(const WorstCaseRates& rates, Nanos amount) {
  const i128 budget_picos = static_cast<i128>(std::max<Nanos>(amount, 0)) * kPicosPerNano;
  const i128 left = budget_picos - std::max<std::int64_t>(rates.input_picos, 0);
  if (left < 0) return 0;
  if (rates.output.picos <= 0) return kInt64Max;
  return sat64(left / rates.output.picos);
}

Nanos worst_case_cost(const ModelPrice& price, std::int64_t input_tokens_upper_bound,
                      std::int64_t output_tokens_upper_bound) {
  return worst_case_cost(worst_case_rates(price, input_tokens_upper_bound), output_tokens_upper_bound);
}

}  // namespace tollgate::budget
