#pragma once
/// Internal to src/config: the state of one config load and the typed readers every section
/// of the schema (config/schema.hpp) uses. Not part of the config API (config/loader.hpp is).
///
/// Every reader takes the YAML node, its YAML path (`model_list[2].litellm_params.rpm`) and the
/// 1-based line of its key; a bad value is an error with that path and line, and the reader
/// returns nullopt. Any string scalar may be `os.environ/NAME` (substituted first).

#include <array>
#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.hpp"
#include "config/loader.hpp"

namespace tollgate::config::detail {

inline constexpr std::string_view kEnvPrefix = "os.environ/";

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
/// Without leading/trailing spaces and tabs.
std::string_view trim(std::string_view s);
/// ASCII lower case.
std::string lower(std::string_view s);
/// `path.key` (just `key` at the top level).
std::string join(const std::string& path, std::string_view key);
/// `path[i]`.
std::string index(const std::string& path, std::size_t i);
/// The node's 1-based line, else `fallback`.
int line_of(const YAML::Node& n, int fallback);
/// "a map", "a list", "a scalar", "null" (for messages).
const char* type_name(const YAML::Node& n);
/// An absolute http(s) URL with a host, or why not.
std::expected<void, std::string> check_http_url(const std::string& url);
/// `key=value,key2=value2` as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES write
/// them (values percent-decoded); malformed entries are skipped.
std::vector<std::pair<std::string, std::string>> otel_pairs(std::string_view text);
/// LiteLLM's budget_duration text: digits then s, m, h, d, w or mo.
bool valid_budget_duration(std::string_view d);

/// "a, b or c" from an enum's names (enumerators 0..count-1, each with a to_string).
template <class E>
std::string names_of(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i > 0) out += i + 1 == count ? " or " : ", ";
    out += to_string(static_cast<E>(i));
  }
  return out;
}

/// Where a value was written: YAML path and 1-based line.
struct Site {
  std::string path;
  int line = 0;
};

/// A reference to a model group made by a fallback setting, validated once model_list is known.
struct GroupRef {
  std::string group;
  std::string path;
  int line;
  bool star_allowed;
};

/// The three fallback lists that form the fallback graph (default_fallbacks is left out: it
/// applies only to groups without their own rule and is not a chain).
inline constexpr std::array<std::string_view, 3> kFallbackLists{"fallbacks", "context_window_fallbacks",
                                                                 "content_policy_fallbacks"};

/// One load: the problems found, the environment, and what later checks need (group references,
/// where fallbacks were written, values that two keys combine).
class LoadContext {
 public:
  explicit LoadContext(EnvLookup env) : env_(std::move(env)) {}

  std::vector<Problem> errors;
  std::vector<Problem> warnings;

  void error(std::string path, int line, std::string message);
  void warn(std::string path, int line, std::string message);

  /// `environment_variables:` first (set_overlay), then the injected environment.
  std::optional<std::string> lookup_env(std::string_view name) const;
  /// The real environment only (what `environment_variables:` values may refer to).
  std::optional<std::string> lookup_real_env(std::string_view name) const;
  void set_overlay(std::map<std::string, std::string> overlay) { overlay_ = std::move(overlay); }

  /// Calls f(key, value, child_path, key_line) for each entry of a map; reports non-string
  /// and duplicate keys. YAML merge keys (`<<: *anchor`, `<<: [*a, *b]`), which yaml-cpp 0.7
  /// leaves unexpanded, are expanded here: explicit keys win, then earlier merged maps.
  /// Returns false (with an error) when `map` is neither a map nor null.
  template <class F>
  bool for_each_entry(const YAML::Node& map, const std::string& path, int line, F&& f) {
    std::vector<Entry> entries;
    if (!entries_of(map, path, line, entries)) return false;
    for (const Entry& e : entries) f(e.key, e.value, join(path, e.key), e.line);
    return true;
  }

  /// A string scalar with os.environ/ substituted; nullopt for null or on error.
  std::optional<std::string> str(const YAML::Node& v, const std::string& path, int line);
  /// `text` with os.environ/NAME replaced (an unset variable: error, or inside a deployment's
  /// litellm_params (set_lenient_env) recorded in unset_env and nullopt).
  std::optional<std::string> substitute(const std::string& text, const std::string& path, int line);
  /// An integer ≥ min; a plain scalar as PyYAML reads it (20_000, 0x10, 010, 1:30).
  std::optional<std::int64_t> integer(const YAML::Node& v, const std::string& path, int line, std::int64_t min = 0);
  /// integer() that fits an int.
  std::optional<int> small_int(const YAML::Node& v, const std::string& path, int line, int min = 0);
  /// true/false, yes/no, on/off (any case).
  std::optional<bool> boolean(const YAML::Node& v, const std::string& path, int line);
  /// Non-negative decimal text (prices, budgets), normalised (normalize_decimal).
  std::optional<std::string> decimal(const YAML::Node& v, const std::string& path, int line);
  /// LiteLLM seconds (int or decimal) → milliseconds, rounded half up; 0 only if allow_zero.
  std::optional<milliseconds> seconds(const YAML::Node& v, const std::string& path, int line, bool allow_zero);
  /// Integer milliseconds (tollgate_settings and fallback_policy `*_ms`), at least `min`.
  std::optional<milliseconds> millis(const YAML::Node& v, const std::string& path, int line, std::int64_t min = 1);
  /// A ratio 0 < r <= 1, written as a decimal number (0.5, 1, 5e-1).
  std::optional<double> ratio(const YAML::Node& v, const std::string& path, int line);
  /// A list of strings (each os.environ/-substituted); nullopt for null or on error.
  std::optional<std::vector<std::string>> string_list(const YAML::Node& v, const std::string& path, int line);
  /// `[{"a": ["b", "c"]}, ...]` or `{"a": [...], "d": [...]}`. `sites` receives, for each
  /// returned rule, where each of its targets was written (for the fallback-cycle check); every
  /// group named is recorded in refs.
  std::vector<FallbackRule> fallbacks(const YAML::Node& v, const std::string& path, int line,
                                      std::vector<std::vector<Site>>& sites);
  /// A list of model groups (default_fallbacks), each recorded in refs.
  std::optional<std::vector<std::string>> group_list(const YAML::Node& v, const std::string& path, int line);
  /// Resolves os.environ/ in every scalar beneath `v` (so a missing variable is still an error).
  void walk_scalars(const YAML::Node& v, const std::string& path, int line);

  /// Inside a deployment's litellm_params an unset os.environ/ variable is recorded, not an error.
  void set_lenient_env(bool on) { lenient_env_ = on; }
  /// Whether settings naming a file may be read while loading (LoadOptions::read_files).
  bool read_files() const { return read_files_; }
  void set_read_files(bool on) { read_files_ = on; }
  struct UnsetEnv {
    std::string name, path;
    int line = 0;
  };
  /// The variables the current deployment references that are not set.
  std::vector<UnsetEnv> unset_env;

  // ---- what the checks after the sections need ----
  std::vector<GroupRef> refs;
  /// Groups whose deployment failed to load (fallbacks naming them are not reported twice).
  std::set<std::string> broken_groups;
  /// Per fallback list (kFallbackLists), per rule, per target: where it was written.
  std::map<std::string, std::vector<std::vector<Site>>> fallback_sites;
  /// Per policy layer (GroupPolicyConfig::path): where its degradation.model was written.
  std::map<std::string, Site> degradation_model_sites;
  /// Per deployment (model_list order): its YAML path and the line of its model_info.id (0: none).
  std::vector<std::string> deployment_paths;
  std::vector<int> id_lines;

  // ---- values that several keys or sections combine ----
  bool otel_callback = false;     ///< litellm_settings.callbacks names "otel"
  bool otel_enabled_set = false;  ///< tollgate_settings.otel.enabled was written
  std::vector<std::string> alerting_channels;  ///< general_settings.alerting
  int alerting_line = 0;
  struct RouterFallbacks {
    std::string key;
    std::vector<FallbackRule> rules;
    std::vector<std::vector<Site>> sites;
  };
  std::vector<RouterFallbacks> router_fallbacks;  ///< router_settings.{fallbacks, ...}
  std::optional<std::vector<std::string>> router_default_fallbacks;
  /// litellm_settings.cache_params: its redis keys, combined in finish_litellm_sections.
  RedisEndpoint cache_redis_url;
  std::optional<int> cache_redis_port;
  std::optional<std::string> cache_redis_password;
  int cache_params_line = 0;
  RedisEndpoint redis_url;   ///< router_settings.redis_url, parsed
  std::optional<int> redis_port;     ///< router_settings.redis_port
  std::string redis_password;        ///< router_settings.redis_password
  bool router_num_retries = false;   ///< router_settings.num_retries was written
  bool router_timeout = false;       ///< router_settings.timeout was written
  bool router_allowed_fails = false; ///< router_settings.allowed_fails was written
  bool has_model_list = false;       ///< the file has a model_list key

 private:
  struct Entry {
    std::string key;
    YAML::Node value;
    int line;
  };
  bool entries_of(const YAML::Node& map, const std::string& path, int line, std::vector<Entry>& out);

  EnvLookup env_;
  std::map<std::string, std::string> overlay_;
  bool lenient_env_ = false;
  bool read_files_ = true;
};

}  // namespace tollgate::config::detail
