#pragma once
/// Internal to src/config: each section of the config file, loaded through its table of fields
/// (config/section.hpp), and the schema entries of those tables (for all_settings()).

#include <string>
#include <vector>

#include "config/load_context.hpp"
#include "config/schema.hpp"

namespace tollgate::config::detail {

/// `litellm_settings:` (settings_litellm.cpp).
void load_litellm_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg);
/// `router_settings:`; the Redis keys are combined at the end (redis_url wins).
void load_router_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg);
/// `general_settings:`.
void load_general_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg);
/// After every section: router_settings fallbacks over litellm_settings ones, DATABASE_URL,
/// general_settings.alerting channels, and the effective retries / timeout / allowed_fails.
void finish_litellm_sections(LoadContext& c, Config& cfg);
void append_litellm_settings(std::vector<SettingInfo>& out);
void append_router_settings(std::vector<SettingInfo>& out);
void append_general_settings(std::vector<SettingInfo>& out);

/// One `model_list` entry (settings_deployment.cpp): a deployment that cannot be called is kept
/// (Deployment::provider unsupported / unusable) with a warning.
void load_deployment(LoadContext& c, const YAML::Node& entry, const std::string& path, int line, Config& cfg);
void append_deployment_settings(std::vector<SettingInfo>& out);

/// `tollgate_settings:` with `otel:` and `alerts:` (settings_tollgate.cpp).
void load_tollgate_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg);
/// The OpenTelemetry environment variables under what the file left unset.
void finish_tollgate_settings(LoadContext& c, Config& cfg);
void append_tollgate_settings(std::vector<SettingInfo>& out);

/// `fallback_policy:` (settings_policy.cpp).
void load_fallback_policy(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg);
void append_policy_settings(std::vector<SettingInfo>& out);

/// The top-level keys (loader.cpp).
void append_top_level_settings(std::vector<SettingInfo>& out);

/// The checks once every section is loaded (load_checks.cpp): unique and generated
/// model_info ids, every group a setting names exists (or a wildcard serves it), fallback cycles.
void assign_ids(LoadContext& c, Config& cfg);
void check_group_refs(LoadContext& c, const Config& cfg);
void check_fallback_cycles(LoadContext& c, const Config& cfg);

}  // namespace tollgate::config::detail
