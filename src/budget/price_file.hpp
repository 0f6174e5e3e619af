#pragma once
// The price table a gateway runs with: the bundled table, plus the entries of
// `tollgate_settings.price_file` (our YAML format or LiteLLM's JSON, detected by content).
// See docs/pricing.md "A price file at start". Reading happens once, at start.

#include <cstddef>
#include <expected>
#include <memory>
#include <string>
#include <string_view>

#include "budget/pricing.hpp"
#include "config/config.hpp"

namespace tollgate::budget {

/// The two price-file formats.
enum class PriceFileFormat {
  tollgate_yaml,  ///< data/prices.yaml's format (PriceTable::parse)
  litellm_json,   ///< LiteLLM's model_prices_and_context_window.json (PriceTable::parse_litellm_json)
};

/// Detects the format of a price file's text: a text whose first non-blank character (after an
/// optional UTF-8 BOM) is `{` is JSON — LiteLLM's format, unless its top-level object has a
/// `models` member (our format written as JSON, which is YAML too); anything else is our YAML.
[[nodiscard]] PriceFileFormat detect_price_file_format(std::string_view text);

/// Parses a price file's text in the detected format. `options` (and `*skipped`, the number of
/// LiteLLM entries without a token price) only matter for LiteLLM's format.
/// Errors: those of PriceTable::parse or PriceTable::parse_litellm_json.
[[nodiscard]] std::expected<PriceTable, std::string> parse_price_file(std::string_view text,
                                                                      const LitellmJsonOptions& options = {},
                                                                      std::size_t* skipped = nullptr);

/// Reads and parses the price file at `path`. LiteLLM entries get `as_of` = the file's
/// modification date (UTC, YYYY-MM-DD) and LiteLLM's file URL as `source` unless they name one.
/// Errors: "cannot read <path>: <reason>", or the parse error.
[[nodiscard]] std::expected<PriceTable, std::string> load_price_file(const std::string& path,
                                                                     std::size_t* skipped = nullptr);

/// The effective price table of `cfg`: PriceTable::bundled() when
/// `tollgate_settings.price_file` is empty (no copy, no I/O), else the bundled table merged with
/// the file's entries (file entries replace bundled ones with the same key; PriceTable::merged).
/// Error, formatted like a config problem: "tollgate_settings.price_file (line 12): <path>: <why>".
/// Blocking file I/O: call once at start, not on the request path.
[[nodiscard]] std::expected<std::shared_ptr<const PriceTable>, std::string> load_effective_price_table(
    const config::Config& cfg);

}  // namespace tollgate::budget
