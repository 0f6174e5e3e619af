#pragma once
// Internal to budget/: the price fields of ModelPrice addressed by their LiteLLM key names, shared
// by the table parser and writer (pricing.cpp), the LiteLLM JSON importer (price_import.cpp) and
// deployment overrides (resolve_deployment_price). Not an interface for other folders.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>

#include "budget/pricing.hpp"

namespace tollgate::budget::detail {

/// A flat price field of ModelPrice (the long-prompt tier is separate: TierField).
enum class PriceField {
  input,
  output,
  cached_input,
  cache_write,
  cache_write_1h,
  reasoning,
  audio_input,
  audio_output,
  image_output,
  web_search_call,
  priority_input,
  priority_output,
  priority_cached_input,
  flex_input,
  flex_output,
  flex_cached_input,
};
inline constexpr std::size_t kPriceFieldCount = 16;

/// A field and its key name (LiteLLM's; `web_search_cost_per_call` is Tollgate's).
struct PriceFieldName {
  PriceField field;
  std::string_view key;
};

/// Every flat field in the order the table writer emits them.
inline constexpr std::array<PriceFieldName, kPriceFieldCount> kPriceFields{{
    {PriceField::input, "input_cost_per_token"},
    {PriceField::output, "output_cost_per_token"},
    {PriceField::cached_input, "cache_read_input_token_cost"},
    {PriceField::cache_write, "cache_creation_input_token_cost"},
    {PriceField::cache_write_1h, "cache_creation_input_token_cost_above_1hr"},
    {PriceField::reasoning, "output_cost_per_reasoning_token"},
    {PriceField::audio_input, "input_cost_per_audio_token"},
    {PriceField::audio_output, "output_cost_per_audio_token"},
    {PriceField::image_output, "output_cost_per_image_token"},
    {PriceField::web_search_call, "web_search_cost_per_call"},
    {PriceField::priority_input, "input_cost_per_token_priority"},
    {PriceField::priority_output, "output_cost_per_token_priority"},
    {PriceField::priority_cached_input, "cache_read_input_token_cost_priority"},
    {PriceField::flex_input, "input_cost_per_token_flex"},
    {PriceField::flex_output, "output_cost_per_token_flex"},
    {PriceField::flex_cached_input, "cache_read_input_token_cost_flex"},
}};

/// The field named `key`; nullopt for any other key.
[[nodiscard]] constexpr std::optional<PriceField> price_field(std::string_view key) noexcept {
  for (const auto& f : kPriceFields) {
    if (f.key == key) return f.field;
  }
  return std::nullopt;
}

/// A field's current value in `price` (input/output always set; a service-tier field is set
/// when that tier exists).
[[nodiscard]] std::optional<PerTokenPrice> get(const ModelPrice& price, PriceField field) noexcept;

/// Long-prompt tier fields, in config::TierCostField order.
enum class TierField { input, output, cached_input, cache_write };
inline constexpr std::size_t kTierFieldCount = 4;

/// Prices gathered for one entry (or one deployment's overrides) before they are applied to a
/// ModelPrice with apply().
struct PriceDraft {
  std::array<std::optional<PerTokenPrice>, kPriceFieldCount> fields;
  /// Long-prompt tier prices by threshold (tokens); usually one threshold.
  std::map<std::int64_t, std::array<std::optional<PerTokenPrice>, kTierFieldCount>> tiers;

  void set(PriceField f, PerTokenPrice p) { fields[static_cast<std::size_t>(f)] = p; }
  [[nodiscard]] const std::optional<PerTokenPrice>& at(PriceField f) const {
    return fields[static_cast<std::size_t>(f)];
  }
  /// True when any price (flat or tier) is set.
  [[nodiscard]] bool any() const;
};

/// Applies `draft` to `price`: every set flat field replaces that price; then each service tier
/// with a set field is created from {price.input, price.output} when absent and gets the set
/// fields; then the tiers (several thresholds → the lowest threshold, each field the highest set
/// price) replace the prices of price's tier when it has the same threshold, else form a new tier
/// starting from {price.input, price.output}.
void apply(const PriceDraft& draft, ModelPrice& price);

}  // namespace tollgate::budget::detail
