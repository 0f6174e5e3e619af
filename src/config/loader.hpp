#pragma once
/// Loading a LiteLLM proxy config file (docs.litellm.ai "proxy/configs" and
/// "proxy/config_settings") plus Tollgate's `tollgate_settings:` and `fallback_policy:` into an
/// immutable Config.
///
/// Policy (full reference: docs/config.md):
/// - Any string scalar may be `os.environ/NAME`; it is replaced by the variable's value,
///   looked up first in the file's own `environment_variables:` map, then in the
///   environment. A missing variable is an error naming the YAML path, line and variable.
/// - Every known key is a row of the schema (config/schema.hpp): supported, warned (loads with a
///   warning saying what Tollgate does instead), no effect (LiteLLM cosmetics, silent) or
///   refused (an error). Keys in no table are warnings (path + line), never silently dropped.
/// - Wrong types, negative counts/prices/durations, unknown providers, fallbacks naming
///   a model group that is not in `model_list`, and duplicate `model_info.id`s are errors.
/// - `fallback_policy:` (config/policy.hpp) is checked for unknown class / action / transport
///   event / degradation mode names, `model_groups` keys and degradation models that are not
///   model groups, negative or out-of-range values, and circular fallback chains (over
///   fallbacks, context_window_fallbacks, content_policy_fallbacks and degradation models),
///   each reported with its YAML path; any of these is an error.
/// - Durations in LiteLLM keys are seconds (int or decimal) converted to milliseconds;
///   `tollgate_settings` and `fallback_policy` durations are integer milliseconds in `*_ms`
///   keys; sizes are bytes.
/// - Prices/budgets stay decimal text (no floating point); scientific notation such as
///   `2.5e-06` is rewritten as plain decimal text ("0.0000025").
///
/// Thread safety: loading is a pure function of its inputs except for
/// LoadOptions::export_environment_variables (setenv), which must only be used while no
/// other thread reads the environment (i.e. at startup).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace tollgate::config {

/// Environment lookup: the value of variable `name`, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// The real process environment (std::getenv).
EnvLookup process_environment();

/// A deployment kept outside the file (the store's `/model/new` models): a JSON object shaped
/// as a `model_list` entry ({model_name, litellm_params, model_info}). It is appended to the
/// file's model_list and loaded by the same code as the file's entries, with every check of the
/// whole file (duplicate ids, fallback groups). Its problems are reported under `label` instead
/// of `model_list[N]`, without a line ("" → paths relative to the entry: `litellm_params.model`).
struct ExtraModel {
  std::string label;
  std::string json;
};

struct LoadOptions {
  /// Where `os.environ/NAME` and provider default variables (OPENAI_API_KEY, ...) are
  /// looked up after `environment_variables:`. Empty = process_environment().
  EnvLookup getenv;
  /// When the load succeeds, setenv() every `environment_variables:` entry (overwriting),
  /// as LiteLLM does. Not thread safe: startup only.
  bool export_environment_variables = true;
  /// Deployments appended to model_list, in order (Deployment::db_model = true).
  std::vector<ExtraModel> extra_models;
  /// Whether the loader may read files a setting names (`vertex_credentials` given as a path).
  /// false (a config pasted by an API caller, POST /tollgate/simulate): such a setting is an
  /// error naming it, and no file is opened.
  bool read_files = true;
};

/// Result of loading: either a Config, or the list of problems (each with YAML path and line).
struct LoadResult {
  std::shared_ptr<const Config> config;  ///< set iff errors is empty
  std::vector<Problem> errors;           ///< fatal problems; config is null when non-empty
  std::vector<Problem> warnings;         ///< ignored keys, empty model_list, ...
  bool ok() const { return errors.empty() && config != nullptr; }
};

/// Reads and loads the YAML file at `path` (Config::source_path = path). An unreadable
/// file or invalid YAML gives one error (YAML syntax errors carry their line).
LoadResult load_config_file(const std::string& path);
LoadResult load_config_file(const std::string& path, const LoadOptions& options);
/// As above with an injected environment; never exports environment_variables.
LoadResult load_config_file(const std::string& path, EnvLookup getenv);

/// Loads YAML text; `source_name` becomes Config::source_path (for messages only).
LoadResult load_config_string(std::string_view yaml, std::string source_name = "<string>");
LoadResult load_config_string(std::string_view yaml, std::string source_name,
                              const LoadOptions& options);
/// As above with an injected environment (tests); never exports environment_variables.
LoadResult load_config_string(std::string_view yaml, std::string source_name, EnvLookup getenv);

/// setenv() each Config::environment_variables entry (overwrite). Startup only.
void export_environment_variables(const Config& config);

/// Normalises a non-negative decimal number written as text to plain decimal text:
/// "0.0000025" stays as written, "2.5e-06" → "0.0000025", "1E3" → "1000", ".5" → "0.5",
/// "+3" → "3". No floating point is involved. Returns nullopt (and sets *error when
/// given) for anything else: negative numbers, inf/nan, empty text, |exponent| > 100.
std::optional<std::string> normalize_decimal(std::string_view text, std::string* error = nullptr);

}  // namespace tollgate::config
