#pragma once
/// `tollgate pricing check --config FILE` and `tollgate pricing import FILE [--out PATH]`
/// (docs/pricing.md). Exit codes: 0 success; 2 a bad config, price file or import file (one line
/// on stderr naming the YAML path / entry and field, nothing written); 1 the output could not be
/// written.

#include <string>

namespace tollgate::app {

/// `tollgate pricing check`: every deployment of the config with its resolved price (against the
/// bundled table plus `tollgate_settings.price_file`), or `unpriced` and why, on stdout.
int pricing_check_command(const std::string& config_path);

struct PricingImportOptions {
  std::string file;   ///< LiteLLM's model_prices_and_context_window.json
  std::string out;    ///< output path; empty = stdout. Written atomically (temporary file, then rename)
  std::string as_of;  ///< `as_of` of every entry (YYYY-MM-DD); empty = today (UTC)
};

/// `tollgate pricing import`: converts LiteLLM's price file to Tollgate's table format (YAML).
/// On success prints `imported N models, skipped M (no token price)` on stderr.
int pricing_import_command(const PricingImportOptions& options);

}  // namespace tollgate::app
