#pragma once
/// The config file's schema as data: every key Tollgate reads or knows of, in every section
/// (LiteLLM's `model_list`, `litellm_settings`, `router_settings`, `general_settings` and
/// Tollgate's `tollgate_settings`, `fallback_policy`), with its type, unit, default, LiteLLM's
/// meaning and what Tollgate does with it. Loading (config/loader.hpp), `tollgate config check`,
/// the unknown-key warnings and the reference tables of docs/config.md all come from this one
/// table (tests/unit/config/schema_test.cpp fails when the docs and the table disagree).
///
/// LiteLLM's keys: docs.litellm.ai "proxy/config_settings" and "proxy/configs".

#include <string>
#include <string_view>
#include <vector>

namespace tollgate::config {

/// What Tollgate does with a key it knows.
enum class SettingStatus {
  supported,  ///< read and applied
  warned,     ///< accepted (the file loads), with a warning saying what Tollgate does instead
  no_effect,  ///< accepted without a warning: LiteLLM logging/SDK cosmetics with nothing to apply
  refused,    ///< an error: ignoring it would silently change what is served
};
std::string_view to_string(SettingStatus s);

/// One key of the schema.
struct SettingInfo {
  /// Where it is written: `litellm_settings.num_retries`, `model_list[].litellm_params.rpm`,
  /// `fallback_policy.<layer>.budgets.max_retries`. The last segment is the key itself; a
  /// segment in angle brackets (`<price key>`) stands for a family of keys.
  std::string_view path;
  std::string_view type;           ///< "integer ≥ 0", "seconds", "bool", "decimal $", "list of strings", …
  std::string_view default_value;  ///< "" = none
  std::string_view litellm;        ///< LiteLLM's meaning; "" = a Tollgate key LiteLLM does not have
  SettingStatus status = SettingStatus::supported;
  std::string_view note;           ///< what Tollgate does (for `warned`/`refused`: the message given)
};

/// Every key, in document order (section by section).
std::vector<SettingInfo> all_settings();

/// The reference tables of docs/config.md (between `<!-- schema:begin -->` and
/// `<!-- schema:end -->`): one markdown table per section, generated from all_settings().
std::string reference_markdown();

}  // namespace tollgate::config
