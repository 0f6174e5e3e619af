#include "budget/price_fields.hpp"

#include <algorithm>

namespace tollgate::budget::detail {

std::optional<PerTokenPrice> get(const ModelPrice& p, PriceField field) noexcept {
  switch (field) {
    case PriceField::input: return p.input;
    case PriceField::output: return p.output;
    case PriceField::cached_input: return p.cached_input;
    case PriceField::cache_write: return p.cache_write;
    case PriceField::cache_write_1h: return p.cache_write_1h;
    case PriceField::reasoning: return p.reasoning;
    case PriceField::audio_input: return p.audio_input;
    case PriceField::audio_output: return p.audio_output;
    case PriceField::image_output: return p.image_output;
    case PriceField::web_search_call: return p.web_search_call;
    case PriceField::priority_input: return p.priority ? std::optional(p.priority->input) : std::nullopt;
    case PriceField::priority_output: return p.priority ? std::optional(p.priority->output) : std::nullopt;
    case PriceField::priority_cached_input: return p.priority ? p.priority->cached_input : std::nullopt;
    case PriceField::flex_input: return p.flex ? std::optional(p.flex->input) : std::nullopt;
    case PriceField::flex_output: return p.flex ? std::optional(p.flex->output) : std::nullopt;
    case PriceField::flex_cached_input: return p.flex ? p.flex->cached_input : std::nullopt;
  }
  return std::nullopt;
}

bool PriceDraft::any() const {
  return !tiers.empty() || std::any_of(fields.begin(), fields.end(), [](const auto& f) { return f.has_value(); });
}

namespace {

void apply_service_tier(const PriceDraft& d, PriceField in, PriceField out, PriceField cached, const ModelPrice& base,
                        std::optional<ServiceTierPrice>& tier) {
  if (!d.at(in) && !d.at(out) && !d.at(cached)) return;
  if (!tier) tier = ServiceTierPrice{base.input, base.output, std::nullopt};
  if (d.at(in)) tier->input = *d.at(in);
  if (d.at(out)) tier->output = *d.at(out);
  if (d.at(cached)) tier->cached_input = d.at(cached);
}

}  // namespace

void apply(const PriceDraft& d, ModelPrice& p) {
  auto take = [&](PriceField f, std::optional<PerTokenPrice>& slot) {
    if (d.at(f)) slot = d.at(f);
  };
  if (d.at(PriceField::input)) p.input = *d.at(PriceField::input);
  if (d.at(PriceField::output)) p.output = *d.at(PriceField::output);
  take(PriceField::cached_input, p.cached_input);
  take(PriceField::cache_write, p.cache_write);
  take(PriceField::cache_write_1h, p.cache_write_1h);
  take(PriceField::reasoning, p.reasoning);
  take(PriceField::audio_input, p.audio_input);
  take(PriceField::audio_output, p.audio_output);
  take(PriceField::image_output, p.image_output);
  take(PriceField::web_search_call, p.web_search_call);
  apply_service_tier(d, PriceField::priority_input, PriceField::priority_output, PriceField::priority_cached_input, p,
                     p.priority);
  apply_service_tier(d, PriceField::flex_input, PriceField::flex_output, PriceField::flex_cached_input, p, p.flex);

  if (d.tiers.empty()) return;
  // Several thresholds cannot be represented by one tier: take the lowest threshold and the highest
  // price of each field, which never charges less than the provider.
  const std::int64_t above = d.tiers.begin()->first;
  std::array<std::optional<PerTokenPrice>, kTierFieldCount> prices;
  for (const auto& [threshold, fields] : d.tiers) {
    for (std::size_t i = 0; i < kTierFieldCount; ++i) {
      if (fields[i] && (!prices[i] || fields[i]->picos > prices[i]->picos)) prices[i] = fields[i];
    }
  }
  if (!p.long_prompt_tier || p.long_prompt_tier->above_input_tokens != above) {
    p.long_prompt_tier = PriceTier{above, p.input, p.output, std::nullopt, std::nullopt};
  }
  PriceTier& t = *p.long_prompt_tier;
  if (prices[static_cast<std::size_t>(TierField::input)]) t.input = *prices[static_cast<std::size_t>(TierField::input)];
  if (prices[static_cast<std::size_t>(TierField::output)]) t.output = *prices[static_cast<std::size_t>(TierField::output)];
  if (prices[static_cast<std::size_t>(TierField::cached_input)]) {
    t.cached_input = prices[static_cast<std::size_t>(TierField::cached_input)];
  }
  if (prices[static_cast<std::size_t>(TierField::cache_write)]) {
    t.cache_write = prices[static_cast<std::size_t>(TierField::cache_write)];
  }
}

}  // namespace tollgate::budget::detail
