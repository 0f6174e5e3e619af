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
#include <vector>

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

/// What parse_litellm_json puts where LiteLLM's file says nothing.
struct LitellmJsonOptions {
  /// `source` of entries without a `source` string of their own.
  std::string source = "https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json";
  /// `as_of` of every entry (YYYY-MM-DD: the file's date); empty = "unknown".
  std::string as_of;
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

  /// Parses a price table in the data/prices.yaml format (docs/pricing.md "The bundled table"):
  /// `{version: 1, models: {<key>: {<fields>}}}`. Fields, with LiteLLM's names: required
  /// `input_cost_per_token`, `output_cost_per_token`, `source`, `as_of`; optional
  /// `cache_read_input_token_cost`, `cache_creation_input_token_cost`,
  /// `cache_creation_input_token_cost_above_1hr`, `output_cost_per_reasoning_token`,
  /// `input_cost_per_audio_token`, `output_cost_per_audio_token`, `output_cost_per_image_token`,
  /// `web_search_cost_per_call` (dollars per call), `input_cost_per_token_priority`,
  /// `output_cost_per_token_priority`, `cache_read_input_token_cost_priority` (and `_flex`),
  /// `max_input_tokens`, `max_output_tokens` (positive integers, tokens) and
  /// `tier: {above_input_tokens, input_cost_per_token, output_cost_per_token,
  /// [cache_read_input_token_cost], [cache_creation_input_token_cost]}`. A service tier given in
  /// part takes its missing input/output price from the base price. Prices are decimal dollars
  /// per token, quoted or plain YAML numbers (`1.5e-06` is exact: parse_price_per_token; finer
  /// than 1e-12 rounds up).
  /// Errors ("models.gpt-4o.input_cost_per_token (line 23): ..."): invalid YAML, unknown version,
  /// unknown or missing fields, a malformed/negative price, a non-positive token limit, a key that
  /// is not lower-case or is duplicated.
  [[nodiscard]] static std::expected<PriceTable, std::string> parse(std::string_view yaml);

  /// Parses LiteLLM's `model_prices_and_context_window.json`: one JSON object of model name →
  /// entry object (https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json).
  /// `sample_spec` is skipped. Keys are lower-cased (`provider/model` keys kept as they are; when
  /// two keys differ only in case, the one already written in lower case wins, else the first).
  /// Read from each entry: the token prices of ModelPrice under their LiteLLM names,
  /// `search_context_cost_per_query.search_context_size_medium` (→ web_search_call),
  /// `<price>_above_<N>k_tokens` (→ long_prompt_tier; several thresholds in one entry → the lowest
  /// one with the highest price of each field, so never under-charged), `max_input_tokens`,
  /// `max_output_tokens` (else `max_tokens`; 0 means "not given", integral floats such as
  /// 2000000.0 are accepted) and `source`. Everything else (`litellm_provider`, `mode`,
  /// `supports_*`, batch prices, per-image/second/character prices, ...) is ignored.
  /// An entry is SKIPPED (counted in `*skipped`, not an error) when it has neither
  /// `input_cost_per_token` nor `output_cost_per_token`, or when all its token prices are 0 but it
  /// carries another non-zero price (per image, pixel, second, query...): image generation,
  /// per-second audio, rerank, `tiered_pricing`-only entries. A missing input or output price of an
  /// imported entry is 0. Prices are exact: each JSON number's text goes through
  /// parse_price_per_token, never through a double.
  /// Errors (one line, naming the entry and field): not JSON, not an object, an entry that is not
  /// an object, a price that is not a number or is negative, a count that is not a non-negative
  /// integer, a `search_context_cost_per_query` that is not an object.
  [[nodiscard]] static std::expected<PriceTable, std::string> parse_litellm_json(std::string_view json,
                                                                               const LitellmJsonOptions& options = {},
                                                                               std::size_t* skipped = nullptr);

  /// `base` with every entry of `overlay` added, replacing an entry of `base` with the same key.
  [[nodiscard]] static PriceTable merged(const PriceTable& base, const PriceTable& overlay);

  /// The table in the data/prices.yaml format: every key and string double-quoted, every price a
  /// quoted exact decimal (format_price_per_token), fields in ModelPrice order; `header` lines are
  /// written first as `# ` comments. parse(to_yaml()) gives back an equal table.
  [[nodiscard]] std::string to_yaml(std::string_view header = {}) const;

  /// Resolves a model name to its price; nullopt = unpriced (unknown), never "free".
  ///
  /// Resolution (case-insensitive, first hit wins), `m` = the model, `s` = `m` without a known
  /// provider prefix (openai/, azure/, azure_ai/, anthropic/, gemini/, mistral/, groq/, xai/,
  /// deepseek/, bedrock/):
  ///   1. exact key `m`;  2. exact key `s`;
  ///   3. longest key K with `m` = K + ('-' | '@') + rest;  4. the same for `s`;
  ///   5./6. for `bedrock/` models, rules 2 and 4 for `s` without a cross-region inference
  ///   profile's geography (`us.`, `eu.`, `apac.`, `us-gov.`, `global.`, `jp.`, `au.`, `ca.`).
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
/// Overrides: the deployment's cost keys (config::kDeploymentCostKeys and
/// long_prompt_tier_cost: LiteLLM's names, decimal dollars per token; litellm_params wins over
/// model_info in the loader):
///   * input_cost_per_token AND output_cost_per_token given → a full override (priced_zero if
///     every price is 0): NO table price is used (cached tokens are charged at the override input
///     price unless cache_read_input_token_cost is also given; no tier, no service tiers, no audio
///     prices unless given); the table still supplies the token limits. how = "config override".
///   * exactly one of them given → the other comes from the table entry (none → unpriced); the
///     table prices defined relative to the base ones are dropped: cached input, cache writes
///     (5-minute and 1-hour), the long-prompt tier and the priority/flex prices. Audio, reasoning,
///     image-output and web-search prices stay.
///   * only other keys given → the table entry (none → unpriced) with those prices replaced.
///   * every other key replaces that one price: cache_read_input_token_cost → cached_input,
///     cache_creation_input_token_cost → cache_write, ..._above_1hr → cache_write_1h,
///     output_cost_per_reasoning_token → reasoning, input/output_cost_per_audio_token,
///     output_cost_per_image_token, web_search_cost_per_call (per call); a priority/flex key
///     replaces that price of the service tier, whose missing prices come from the table's tier or
///     else from the (overridden) base price; tier keys (`*_above_<N>k_tokens`) replace the prices
///     of the table's tier when it has the same threshold, else form a new tier whose missing
///     input/output prices are the base ones.
///   * an override that does not parse → unpriced with the reason in `how` (never a silent 0).
///   Any of these with a table entry: how = "config override + table: <key>".
/// Table lookup (PriceTable::lookup): `model_info.base_model` if set (exclusively); else
/// `provider_prefix + "/" + upstream_model` — which finds a provider-specific key
/// ("azure/gpt-4o", "groq/...") and, for known prefixes only, the bare key ("gpt-4o"); a host
/// with an unknown prefix (vllm, ollama, together_ai, ...) stays unpriced unless base_model or
/// an override says otherwise; else (no prefix) `upstream_model`.
/// `model_info.max_input_tokens` / `max_output_tokens` replace the table's limits when set.
/// A table entry whose prices are all zero resolves to priced_zero.
[[nodiscard]] ResolvedPrice resolve_deployment_price(const config::Deployment& deployment, const PriceTable& table);

/// resolve_deployment_price for every deployment of `cfg.model_list`, in order, against the
/// config's effective table (load_effective_price_table in budget/price_file.hpp: the bundled table
/// plus `tollgate_settings.price_file`). The gateway calls this once at start (Services::make).
/// Throws std::runtime_error with load_effective_price_table's message when the price file is
/// invalid (a startup failure; `tollgate serve` and `config check` report it first, exit 2).
/// Defined in price_file.cpp.
[[nodiscard]] std::vector<ResolvedPrice> resolve_deployment_prices(const config::Config& cfg);

}  // namespace tollgate::budget
