#pragma once
// Model prices: the bundled table (data/prices.yaml, compiled in) and per-deployment overrides from
// the config; cost formulas are in cost.hpp, token bounds in token_bounds.hpp (DESIGN.md "Money and
// units", "Budget admission"; issue 3 items 3 and 4). See docs/pricing.md.
//
// Thread safety: PriceTable is immutable after construction; share it as
// std::shared_ptr<const PriceTable>. All free functions are pure.

#include "budget/money.hpp"
#include "config/config.hpp"

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tollgate::budget {

/// Prices that replace the base prices for a WHOLE request once its prompt is long
/// (Gemini 1.5/2.5 Pro above 128k/200k prompt tokens, Claude Sonnet 4 above 200k). LiteLLM keys:
/// `input_cost_per_token_above_200k_tokens`, `output_cost_per_token_above_200k_tokens`,
/// `cache_read_input_token_cost_above_200k_tokens`, `cache_creation_input_token_cost_above_200k_tokens`.
struct PriceTier {
  /// The tier applies when prompt (input) tokens > this count.
  std::int64_t above_input_tokens = 0;
  PerTokenPrice input;                       ///< pico-dollars per input token in the tier
  PerTokenPrice output;                      ///< pico-dollars per output token in the tier
  std::optional<PerTokenPrice> cached_input; ///< pico-dollars per cached input token; nullopt = `input`
  std::optional<PerTokenPrice> cache_write;  ///< pico-dollars per cache-write token; nullopt = the base rule
};

/// Prices of an OpenAI `service_tier` other than the default one (`priority`, `flex`): they replace
/// the base input, output and cached-input prices when the response says it was served in that
/// tier. LiteLLM keys: `input_cost_per_token_priority`, `output_cost_per_token_priority`,
/// `cache_read_input_token_cost_priority` (and `_flex`). Source: https://platform.openai.com/docs/pricing
struct ServiceTierPrice {
  PerTokenPrice input;                        ///< pico-dollars per uncached input token
  PerTokenPrice output;                       ///< pico-dollars per output token
  std::optional<PerTokenPrice> cached_input;  ///< nullopt = this tier's `input`
};

/// The price of one model (or one deployment after overrides). Prices are pico-dollars per token
/// (per call for `web_search_call`). Every optional price that is absent falls back as documented
/// on the field, so a table entry only lists what differs; the field names of the YAML table and of
/// config overrides are LiteLLM's (`model_prices_and_context_window.json`).
struct ModelPrice {
  PerTokenPrice input;   ///< `input_cost_per_token`: per uncached text prompt token
  PerTokenPrice output;  ///< `output_cost_per_token`: per completion token (reasoning included unless `reasoning` is set)
  /// `cache_read_input_token_cost`: per prompt token served from the provider's prompt cache
  /// (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`); nullopt = charge `input`.
  std::optional<PerTokenPrice> cached_input;
  /// `cache_creation_input_token_cost`: per prompt token written to the cache with the default
  /// (5-minute) TTL (Anthropic: 1.25x input); nullopt = charge `input`.
  std::optional<PerTokenPrice> cache_write;
  /// `cache_creation_input_token_cost_above_1hr`: per prompt token written with the 1-hour TTL
  /// (Anthropic: 2x input); nullopt = `cache_write`, else `input`.
  std::optional<PerTokenPrice> cache_write_1h;
  /// `output_cost_per_reasoning_token`: per reasoning token; nullopt = `output`.
  std::optional<PerTokenPrice> reasoning;
  /// `input_cost_per_audio_token`: per audio prompt token; nullopt = `input`.
  std::optional<PerTokenPrice> audio_input;
  /// `output_cost_per_audio_token`: per audio completion token; nullopt = `output`.
  std::optional<PerTokenPrice> audio_output;
  /// `output_cost_per_image_token`: per image completion token; nullopt = `output`.
  std::optional<PerTokenPrice> image_output;
  /// Per web-search tool call (pico-dollars per call; LiteLLM `search_context_cost_per_query`,
  /// medium context size); nullopt = calls are not charged.
  std::optional<PerTokenPrice> web_search_call;
  std::optional<PriceTier> long_prompt_tier;     ///< nullopt = flat pricing
  std::optional<ServiceTierPrice> priority;      ///< `service_tier: priority`; nullopt = base prices
  std::optional<ServiceTierPrice> flex;          ///< `service_tier: flex`; nullopt = base prices
  std::optional<std::int64_t> max_input_tokens;  ///< context limit for input, tokens
  std::optional<std::int64_t> max_output_tokens; ///< max completion tokens the model can emit
  std::string source;      ///< public pricing page URL of the figures (table), or "config"
  std::string as_of;       ///< date (YYYY-MM-DD) the table figures were in effect; empty for config
  std::string matched_key; ///< the table key that matched ("gpt-4o"); empty for pure config prices

  /// True when every price (every field above, tiers included) is exactly zero.
  [[nodiscard]] bool is_zero() const noexcept;
};

/// The immutable model → price table. Keys are lower-case model names, optionally with a
/// provider prefix ("azure/gpt-4o", "groq/llama-3.1-8b-instant").
class PriceTable {
 public:
  /// An empty table (every lookup misses).
  PriceTable() = default;

  /// The table bundled into the binary: data/prices.yaml as of the build (embedded through
  /// src/budget/pricing.inc, checked byte-identical by a unit test). Parsed once, on first call;
  /// the bundled file is validated by tests, so this never fails at run time (it aborts with a
  /// message if the embedded copy were somehow invalid).
  [[nodiscard]] static const PriceTable& bundled();

  /// The exact text of the bundled YAML (for `tollgate pricing` diagnostics and tests).
  [[nodiscard]] static std::string_view bundled_yaml() noexcept;

  /// Parses a price table in the data/prices.yaml format:
  /// `{version: 1, models: {<key>: {input_cost_per_token, output_cost_per_token,
  /// [cache_read_input_token_cost], [max_input_tokens], [max_output_tokens],
  /// [tier: {above_input_tokens, input_cost_per_token, output_cost_per_token,
  /// [cache_read_input_token_cost]}], source, as_of}}}`. Prices are decimal dollars per token
  /// (parse_price_per_token; finer than 1e-12 rounds up).
  /// Errors ("models.gpt-4o.input_cost_per_token: ..."): invalid YAML, unknown version, unknown
  /// or missing fields, a malformed/negative price, a non-positive token limit, a key that is
  /// not lower-case or is duplicated.
  [[nodiscard]] static std::expected<PriceTable, std::string> parse(std::string_view yaml);

  /// Resolves a model name to its price; nullopt = unpriced (unknown), never "free".
  ///
  /// Resolution (case-insensitive, first hit wins), `m` = the model, `s` = `m` without a known
  /// provider prefix (openai/, azure/, azure_ai/, anthropic/, gemini/, mistral/, groq/):
  ///   1. exact key `m`;  2. exact key `s`;
  ///   3. longest key K with `m` = K + ('-' | '@') + rest;  4. the same for `s`.
  /// So "gpt-4o-2024-11-20" → "gpt-4o", "gpt-4o-mini-2024-07-18" → "gpt-4o-mini" (longest wins),
  /// "openai/gpt-4o" → "gpt-4o", "azure/gpt-4o-mini" → "azure/gpt-4o-mini", "gpt-4o1" → none.
  /// Unknown prefixes (vllm/, ollama/, ...) are not stripped: self-hosted models stay unpriced.
  /// The result's matched_key names the key that matched.
  [[nodiscard]] std::optional<ModelPrice> lookup(std::string_view model) const;

  /// Number of table entries.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  /// All entries by key (sorted), for listing.
  [[nodiscard]] const std::map<std::string, ModelPrice, std::less<>>& entries() const noexcept {
    return entries_;
  }

 private:
  std::map<std::string, ModelPrice, std::less<>> entries_;
};

/// Whether a deployment's traffic has a price. `priced_zero` (an explicit 0, e.g. a self-hosted
/// model configured with cost 0) and `unpriced` (nothing known) are never conflated: budgets
/// skip money admission for the former and refuse the latter (`unpriced_model_blocked`).
enum class PriceStatus { priced, priced_zero, unpriced };

/// "priced" / "priced_zero" / "unpriced".
[[nodiscard]] std::string_view to_string(PriceStatus status) noexcept;

/// A deployment's effective price and where it came from.
struct ResolvedPrice {
  PriceStatus status = PriceStatus::unpriced;
  ModelPrice price;  ///< meaningful unless status == unpriced (then all zero)
  /// Human-readable provenance: "config override", "config override + table: gpt-4o",
  /// "table: gpt-4o", "unpriced", or "unpriced: <reason>" (e.g. an invalid override string).
  std::string how;
};

/// The effective price of one deployment.
///
/// Overrides (config `litellm_params.input_cost_per_token` / `output_cost_per_token`, decimal
/// dollars per token):
///   * both given → the override (priced_zero if both are 0); the table's cached price is NOT
///     used (cached tokens are charged at the override input price) nor its tier;
///   * one given → the other comes from the table entry, if there is one, else unpriced;
///   * an override that does not parse → unpriced with the reason in `how` (never a silent 0).
/// Table lookup (PriceTable::lookup): `model_info.base_model` if set (exclusively); else
/// `provider_prefix + "/" + upstream_model` — which finds a provider-specific key
/// ("azure/gpt-4o", "groq/...") and, for known prefixes only, the bare key ("gpt-4o"); a host
/// with an unknown prefix (vllm, ollama, together_ai, ...) stays unpriced unless base_model or
/// an override says otherwise; else (no prefix) `upstream_model`.
/// `model_info.max_input_tokens` / `max_output_tokens` replace the table's limits when set.
/// A table entry whose prices are all zero resolves to priced_zero.
[[nodiscard]] ResolvedPrice resolve_deployment_price(const config::Deployment& deployment, const PriceTable& table);

}  // namespace tollgate::budget
