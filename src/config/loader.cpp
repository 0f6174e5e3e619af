#include "config/loader.hpp"
#include "config/wildcard.hpp"
#include "config/yaml11.hpp"

#include "core/database_url.hpp"

#include <boost/url/parse.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace tollgate::config {

namespace {

constexpr std::string_view kEnvPrefix = "os.environ/";
constexpr std::string_view kIgnored = "not supported by tollgate, ignored";
constexpr std::string_view kUnknown = "unknown key, ignored";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// Provider prefixes Tollgate can serve. Hosted OpenAI-compatible services get their
/// public base URL (as LiteLLM hard-codes them) so an empty api_base always means OpenAI.
struct ProviderInfo {
  std::string_view prefix;
  ProviderKind kind;
  std::string_view default_api_base;  ///< "" = provider layer default (OpenAI, Anthropic)
  std::array<std::string_view, 2> key_env;   ///< api_key when litellm_params has none
  std::array<std::string_view, 2> base_env;  ///< api_base when litellm_params has none
  bool requires_api_base;
};

constexpr std::array kProviders{
    ProviderInfo{"openai", ProviderKind::openai, "", {"OPENAI_API_KEY", ""}, {"OPENAI_BASE_URL", "OPENAI_API_BASE"}, false},
    ProviderInfo{"azure", ProviderKind::azure, "", {"AZURE_API_KEY", "AZURE_OPENAI_API_KEY"}, {"AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT"}, true},
    ProviderInfo{"anthropic", ProviderKind::anthropic, "", {"ANTHROPIC_API_KEY", ""}, {"ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"}, false},
    ProviderInfo{"openai_compatible", ProviderKind::openai, "", {"", ""}, {"", ""}, true},
    ProviderInfo{"custom_openai", ProviderKind::openai, "", {"", ""}, {"", ""}, true},
    ProviderInfo{"hosted_vllm", ProviderKind::openai, "", {"HOSTED_VLLM_API_KEY", ""}, {"HOSTED_VLLM_API_BASE", ""}, true},
    ProviderInfo{"vllm", ProviderKind::openai, "", {"", ""}, {"", ""}, true},
    ProviderInfo{"lm_studio", ProviderKind::openai, "", {"LM_STUDIO_API_KEY", ""}, {"LM_STUDIO_API_BASE", ""}, true},
    ProviderInfo{"groq", ProviderKind::openai, "https://api.groq.com/openai/v1", {"GROQ_API_KEY", ""}, {"", ""}, false},
    ProviderInfo{"together_ai", ProviderKind::openai, "https://api.together.xyz/v1", {"TOGETHERAI_API_KEY", "TOGETHER_API_KEY"}, {"", ""}, false},
    ProviderInfo{"deepseek", ProviderKind::openai, "https://api.deepseek.com/v1", {"DEEPSEEK_API_KEY", ""}, {"DEEPSEEK_API_BASE", ""}, false},
    ProviderInfo{"mistral", ProviderKind::openai, "https://api.mistral.ai/v1", {"MISTRAL_API_KEY", ""}, {"MISTRAL_API_BASE", ""}, false},
    ProviderInfo{"fireworks_ai", ProviderKind::openai, "https://api.fireworks.ai/inference/v1", {"FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"}, {"", ""}, false},
    ProviderInfo{"perplexity", ProviderKind::openai, "https://api.perplexity.ai", {"PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"}, {"", ""}, false},
    ProviderInfo{"xai", ProviderKind::openai, "https://api.x.ai/v1", {"XAI_API_KEY", ""}, {"XAI_API_BASE", ""}, false},
    ProviderInfo{"openrouter", ProviderKind::openai, "https://openrouter.ai/api/v1", {"OPENROUTER_API_KEY", ""}, {"OPENROUTER_API_BASE", ""}, false},
    ProviderInfo{"deepinfra", ProviderKind::openai, "https://api.deepinfra.com/v1/openai", {"DEEPINFRA_API_KEY", ""}, {"", ""}, false},
    ProviderInfo{"cerebras", ProviderKind::openai, "https://api.cerebras.ai/v1", {"CEREBRAS_API_KEY", ""}, {"", ""}, false},
};

const ProviderInfo* find_provider(std::string_view prefix) {
  for (const ProviderInfo& p : kProviders)
    if (p.prefix == prefix) return &p;
  return nullptr;
}

std::string supported_prefixes() {
  std::string out;
  for (const ProviderInfo& p : kProviders) {
    if (!out.empty()) out += ", ";
    out += p.prefix;
  }
  return out;
}

/// Keys LiteLLM documents that Tollgate accepts without a warning because they only
/// affect logging/SDK cosmetics or are implied by Tollgate's own behaviour.
bool is_silent_litellm_setting(std::string_view k) {
  static const std::set<std::string_view> keys{
      "drop_params", "modify_params", "set_verbose", "json_logs", "telemetry",
      "success_callback", "failure_callback", "callbacks", "service_callback", "service_callbacks",
      "cache", "cache_params", "turn_off_message_logging", "redact_user_api_key_info",
      "redact_messages_in_exceptions", "langfuse_default_tags", "enable_preview_features",
      "force_ipv4", "suppress_debug_info", "disable_end_user_cost_tracking_prometheus_only",
      "return_response_headers"};
  return keys.contains(k);
}

bool is_silent_router_setting(std::string_view k) {
  static const std::set<std::string_view> keys{"enable_pre_call_checks", "routing_strategy_args",
                                               "set_verbose", "debug_level"};
  return keys.contains(k);
}

bool is_silent_model_info(std::string_view k) {
  static const std::set<std::string_view> keys{"mode", "description", "metadata", "db_model",
                                               "created_at", "created_by", "updated_at",
                                               "updated_by", "tier", "litellm_provider", "key"};
  return keys.contains(k) || starts_with(k, "supports_");
}

bool is_known_top_level_unsupported(std::string_view k) {
  static const std::set<std::string_view> keys{
      "credential_list", "guardrails", "mcp_servers", "callback_settings", "assistant_settings",
      "files_settings", "finetune_settings", "search_tools", "vector_store_registry",
      "model_group_settings", "pass_through_endpoints", "prompts"};
  return keys.contains(k);
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

int line_of(const YAML::Node& n, int fallback) {
  if (!n.IsDefined()) return fallback;
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? m.line + 1 : fallback;
}

const char* type_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "null";
    default: return "nothing";
  }
}

/// A reference to a model group made by a fallback setting, validated once model_list is known.
struct GroupRef {
  std::string group;
  std::string path;
  int line;
  bool star_allowed;
};

/// Where a value was written: YAML path and 1-based line.
struct Site {
  std::string path;
  int line = 0;
};

/// The three fallback lists that form the fallback graph (default_fallbacks is left out: it
/// applies only to groups without their own rule and is not a chain).
constexpr std::array<std::string_view, 3> kFallbackLists{"fallbacks", "context_window_fallbacks",
                                                          "content_policy_fallbacks"};

/// "a, b or c" from an enum's names (enumerators 0..count-1).
template <class E>
std::string names_of(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i > 0) out += i + 1 == count ? " or " : ", ";
    out += to_string(static_cast<E>(i));
  }
  return out;
}
constexpr int kPolicyActionCount = 7;
constexpr int kTransportEventCount = 7;
constexpr int kDegradationModeCount = 6;

/// Cost keys read from one section (`litellm_params` or `model_info`) of a deployment, before
/// the two are merged (litellm_params wins, key by key).
struct CostSection {
  std::map<std::string_view, std::string> flat;  ///< kDeploymentCostKeys key → normalised decimal
  struct TierValue {
    std::string decimal;
    std::int64_t above_input_tokens = 0;
    Site site;
  };
  std::map<TierCostField, TierValue> tier;
};

const CostKey* find_cost_key(std::string_view k) {
  for (const CostKey& c : kDeploymentCostKeys)
    if (c.key == k) return &c;
  return nullptr;
}

/// One load: collects problems and walks the document.
class Loader {
 public:
  explicit Loader(EnvLookup env) : env_(std::move(env)) {}

  std::vector<Problem> errors;
  std::vector<Problem> warnings;

  void error(std::string path, int line, std::string message) {
    errors.push_back(Problem{std::move(path), line, std::move(message)});
  }
  void warn(std::string path, int line, std::string message) {
    warnings.push_back(Problem{std::move(path), line, std::move(message)});
  }

  std::optional<std::string> lookup_env(std::string_view name) const {
    if (auto it = overlay_.find(std::string(name)); it != overlay_.end()) return it->second;
    return env_ ? env_(name) : std::nullopt;
  }

  /// Calls f(key, value, child_path, key_line) for each entry of a map; reports non-string
  /// and duplicate keys. YAML merge keys (`<<: *anchor`, `<<: [*a, *b]`), which yaml-cpp 0.7
  /// leaves unexpanded, are expanded here: explicit keys win, then earlier merged maps.
  /// Returns false (with an error) when `map` is not a map.
  template <class F>
  bool for_each_entry(const YAML::Node& map, const std::string& path, int line, F&& f) {
    if (map.IsNull()) return true;
    if (!map.IsMap()) {
      error(path, line_of(map, line), std::string("expected a map, got ") + type_name(map));
      return false;
    }
    struct Entry {
      std::string key;
      YAML::Node value;
      int line;
    };
    std::vector<Entry> entries;
    std::vector<std::pair<YAML::Node, int>> merges;
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      // Copies: yaml-cpp's iterator hands out a temporary pair (references would dangle).
      const YAML::Node k = it->first;
      const YAML::Node value = it->second;
      const int kline = line_of(k, line);
      if (!k.IsScalar()) {
        error(path, kline, "map keys must be strings");
        continue;
      }
      const std::string key = k.Scalar();
      if (key == "<<" && k.Tag() != "!") {
        if (value.IsMap()) {
          merges.emplace_back(value, kline);
        } else if (value.IsSequence()) {
          for (std::size_t i = 0; i < value.size(); ++i) merges.emplace_back(value[i], kline);
        } else {
          error(join(path, key), kline, "a merge key (<<) needs a map or a list of maps");
        }
        continue;
      }
      if (!seen.insert(key).second) {
        error(join(path, key), kline, "duplicate key");
        continue;
      }
      entries.push_back(Entry{key, value, kline});
    }
    for (const auto& [merged, mline] : merges) {
      if (!merged.IsMap()) {
        error(join(path, "<<"), mline, "a merge key (<<) needs a map or a list of maps");
        continue;
      }
      for (auto it = merged.begin(); it != merged.end(); ++it) {
        const YAML::Node k = it->first;
        const YAML::Node value = it->second;
        if (k.IsScalar() && k.Scalar() != "<<" && seen.insert(k.Scalar()).second)
          entries.push_back(Entry{k.Scalar(), value, line_of(k, mline)});
      }
    }
    for (const Entry& e : entries) f(e.key, e.value, join(path, e.key), e.line);
    return true;
  }

  /// A string scalar with os.environ/ substituted; nullopt for null or on error.
  std::optional<std::string> str(const YAML::Node& v, const std::string& path, int line) {
    line = line_of(v, line);
    if (v.IsNull()) return std::nullopt;
    if (!v.IsScalar()) {
      error(path, line, std::string("expected a string, got ") + type_name(v));
      return std::nullopt;
    }
    return substitute(v.Scalar(), path, line);
  }

  std::optional<std::string> substitute(const std::string& text, const std::string& path, int line) {
    if (!starts_with(text, kEnvPrefix)) return text;
    const std::string name(trim(std::string_view(text).substr(kEnvPrefix.size())));
    if (name.empty()) {
      error(path, line, "os.environ/ needs a variable name");
      return std::nullopt;
    }
    if (auto value = lookup_env(name)) return value;
    if (lenient_env_) {
      // The deployment is kept but marked unusable (load_deployment): never filled in from a
      // provider default, which could send another account's key or this key elsewhere.
      unset_env_.push_back(UnsetEnv{name, path, line});
      return std::nullopt;
    }
    error(path, line, "environment variable " + name + " is not set (referenced as " + text + ")");
    return std::nullopt;
  }

  std::optional<std::int64_t> integer(const YAML::Node& v, const std::string& path, int line,
                                      std::int64_t min = 0) {
    line = line_of(v, line);
    auto text = str(v, path, line);
    if (!text) return std::nullopt;
    std::string_view t = trim(*text);
    std::int64_t out = 0;
    const bool plain = v.Tag() == "?" && !starts_with(v.Scalar(), kEnvPrefix);
    if (auto n = plain ? yaml11_int(t) : std::nullopt) {
      out = *n;  // a plain scalar: as PyYAML reads it (20_000, 0x10, 010, 1:30)
    } else {
      if (!t.empty() && t.front() == '+') t.remove_prefix(1);
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
      if (t.empty() || ec != std::errc{} || end != t.data() + t.size()) {
        error(path, line, "expected an integer, got \"" + *text + "\"");
        return std::nullopt;
      }
    }
    if (out < min) {
      error(path, line, "must be at least " + std::to_string(min) + ", got " + std::to_string(out));
      return std::nullopt;
    }
    return out;
  }

  std::optional<int> small_int(const YAML::Node& v, const std::string& path, int line, int min = 0) {
    auto n = integer(v, path, line, min);
    if (!n) return std::nullopt;
    if (*n > std::numeric_limits<int>::max()) {
      error(path, line_of(v, line), "value too large");
      return std::nullopt;
    }
    return static_cast<int>(*n);
  }

  std::optional<bool> boolean(const YAML::Node& v, const std::string& path, int line) {
    line = line_of(v, line);
    auto text = str(v, path, line);
    if (!text) return std::nullopt;
    const std::string t = lower(trim(*text));
    if (t == "true" || t == "yes" || t == "on") return true;
    if (t == "false" || t == "no" || t == "off") return false;
    error(path, line, "expected true or false, got \"" + *text + "\"");
    return std::nullopt;
  }

  /// Non-negative decimal text (prices, budgets), normalised.
  std::optional<std::string> decimal(const YAML::Node& v, const std::string& path, int line) {
    line = line_of(v, line);
    auto text = str(v, path, line);
    if (!text) return std::nullopt;
    if (v.Tag() == "?" && !starts_with(v.Scalar(), kEnvPrefix))
      *text = yaml11_number_text(trim(*text));  // 1_000.5, as PyYAML reads it
    std::string why;
    auto out = normalize_decimal(*text, &why);
    if (!out) error(path, line, why);
    return out;
  }

  /// LiteLLM seconds (int or decimal) → milliseconds, rounded half up.
  std::optional<milliseconds> seconds(const YAML::Node& v, const std::string& path, int line,
                                      bool allow_zero) {
    line = line_of(v, line);
    auto text = decimal(v, path, line);
    if (!text) return std::nullopt;
    const auto dot = text->find('.');
    const std::string_view whole = std::string_view(*text).substr(0, dot);
    const std::string_view frac =
        dot == std::string::npos ? std::string_view{} : std::string_view(*text).substr(dot + 1);
    if (whole.size() > 12) {
      error(path, line, "duration too large (seconds expected)");
      return std::nullopt;
    }
    std::int64_t ms = 0;
    std::from_chars(whole.data(), whole.data() + whole.size(), ms);
    ms *= 1000;
    for (std::size_t i = 0; i < 3; ++i) {
      const int digit = i < frac.size() ? frac[i] - '0' : 0;
      ms += digit * (i == 0 ? 100 : i == 1 ? 10 : 1);
    }
    if (frac.size() > 3 && frac[3] >= '5') ++ms;
    if (ms == 0 && !allow_zero) {
      error(path, line, "must be greater than 0 seconds");
      return std::nullopt;
    }
    return milliseconds{ms};
  }

  /// Integer milliseconds (tollgate_settings and fallback_policy `*_ms`), at least `min`.
  std::optional<milliseconds> millis(const YAML::Node& v, const std::string& path, int line,
                                     std::int64_t min = 1) {
    auto n = integer(v, path, line, min);
    if (!n) return std::nullopt;
    return milliseconds{*n};
  }

  /// A ratio 0 < r <= 1, written as a decimal number (0.5, 1, 5e-1).
  std::optional<double> ratio(const YAML::Node& v, const std::string& path, int line) {
    line = line_of(v, line);
    auto text = decimal(v, path, line);
    if (!text) return std::nullopt;
    double r = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), r);
    if (ec != std::errc{} || end != text->data() + text->size() || !(r > 0) || r > 1) {
      error(path, line, "must be greater than 0 and at most 1, got " + *text);
      return std::nullopt;
    }
    return r;
  }

  std::optional<std::vector<std::string>> string_list(const YAML::Node& v, const std::string& path,
                                                      int line) {
    line = line_of(v, line);
    if (v.IsNull()) return std::nullopt;
    if (!v.IsSequence()) {
      error(path, line, std::string("expected a list of strings, got ") + type_name(v));
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto s = str(v[i], index(path, i), line);
      if (!s) {
        if (v[i].IsNull()) error(index(path, i), line_of(v[i], line), "expected a string, got null");
        ok = false;
        continue;
      }
      out.push_back(std::move(*s));
    }
    if (!ok) return std::nullopt;
    return out;
  }

  /// `[{"a": ["b", "c"]}, ...]` or `{"a": [...], "d": [...]}`. `sites` receives, for each
  /// returned rule, where each of its targets was written (for the fallback-cycle check).
  std::vector<FallbackRule> fallbacks(const YAML::Node& v, const std::string& path, int line,
                                      std::vector<std::vector<Site>>& sites) {
    line = line_of(v, line);
    sites.clear();
    std::vector<FallbackRule> rules;
    auto one_map = [&](const YAML::Node& m, const std::string& mpath, int mline) {
      for_each_entry(m, mpath, mline, [&](const std::string& from, const YAML::Node& to,
                                          const std::string& rpath, int rline) {
        auto targets = string_list(to, rpath, rline);
        if (!targets) {
          if (to.IsNull()) error(rpath, rline, "expected a list of fallback model groups, got null");
          return;
        }
        refs_.push_back(GroupRef{from, rpath, rline, true});
        std::vector<Site> rule_sites;
        for (std::size_t i = 0; i < targets->size(); ++i) {
          refs_.push_back(GroupRef{(*targets)[i], index(rpath, i), line_of(to[i], rline), false});
          rule_sites.push_back(Site{index(rpath, i), line_of(to[i], rline)});
        }
        rules.push_back(FallbackRule{from, std::move(*targets)});
        sites.push_back(std::move(rule_sites));
      });
    };
    if (v.IsNull()) return rules;
    if (v.IsSequence()) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        const YAML::Node& item = v[i];
        if (!item.IsMap()) {
          error(index(path, i), line_of(item, line),
                std::string("expected a map {model_group: [fallback groups]}, got ") + type_name(item));
          continue;
        }
        one_map(item, index(path, i), line);
      }
    } else if (v.IsMap()) {
      one_map(v, path, line);
    } else {
      error(path, line,
            std::string("expected a list of {model_group: [fallback groups]} maps, got ") + type_name(v));
    }
    return rules;
  }

  void unknown(const std::string& path, int line, std::string_view message) {
    warn(path, line, std::string(message));
  }

  // ---- sections -------------------------------------------------------------------------

  void load_environment_variables(const YAML::Node& v, const std::string& path, int line,
                                  Config& cfg) {
    for_each_entry(v, path, line, [&](const std::string& key, const YAML::Node& value,
                                      const std::string& p, int l) {
      if (value.IsNull()) {
        cfg.environment_variables[key] = "";
        return;
      }
      if (!value.IsScalar()) {
        error(p, line_of(value, l), std::string("expected a scalar, got ") + type_name(value));
        return;
      }
      // os.environ/ inside environment_variables refers to the real environment.
      const std::string& text = value.Scalar();
      std::optional<std::string> resolved = text;
      if (starts_with(text, kEnvPrefix)) {
        const std::string name(trim(std::string_view(text).substr(kEnvPrefix.size())));
        resolved = env_ ? env_(name) : std::nullopt;
        if (!resolved) {
          error(p, line_of(value, l), "environment variable " + name + " is not set (referenced as " + text + ")");
          return;
        }
      }
      cfg.environment_variables[key] = *resolved;
    });
    overlay_ = cfg.environment_variables;
  }

  /// Reads `k` into `out` when it is a deployment cost key (kDeploymentCostKeys, a
  /// `<field>_above_<N>k_tokens` tier key, or LiteLLM's `search_context_cost_per_query` map);
  /// returns false for any other key. Bad values are errors with their path and line.
  bool load_cost_key(const std::string& k, const YAML::Node& val, const std::string& p, int l, CostSection& out) {
    if (const CostKey* c = find_cost_key(k)) {
      if (auto d = decimal(val, p, l)) out.flat[c->key] = *d;
      return true;
    }
    if (auto t = parse_tier_cost_key(k)) {
      if (auto d = decimal(val, p, l))
        out.tier[t->field] = CostSection::TierValue{*d, t->above_input_tokens, Site{p, line_of(val, l)}};
      return true;
    }
    if (k == "search_context_cost_per_query") {
      // LiteLLM's shape: {search_context_size_low, _medium, _high}; Tollgate prices a call at medium.
      for_each_entry(val, p, l, [&](const std::string& size, const YAML::Node& sv, const std::string& sp, int sl) {
        if (size == "search_context_size_medium") {
          if (auto d = decimal(sv, sp, sl)) out.flat["web_search_cost_per_call"] = *d;
        } else if (size == "search_context_size_low" || size == "search_context_size_high") {
          if (!decimal(sv, sp, sl)) return;  // validated, not used: a call is priced at medium
        } else {
          unknown(sp, sl, kUnknown);
        }
      });
      return true;
    }
    return false;
  }

  /// Merges the cost keys of both sections into `d` (litellm_params wins, key by key); tier
  /// keys must all name the same threshold.
  void merge_costs(const CostSection& params, const CostSection& info, Deployment& d) {
    for (const CostKey& c : kDeploymentCostKeys) {
      if (auto it = params.flat.find(c.key); it != params.flat.end()) d.*c.field = it->second;
      else if (auto jt = info.flat.find(c.key); jt != info.flat.end()) d.*c.field = jt->second;
    }
    std::map<TierCostField, const CostSection::TierValue*> chosen;
    for (const auto& [field, value] : info.tier) chosen[field] = &value;
    for (const auto& [field, value] : params.tier) chosen[field] = &value;
    if (chosen.empty()) return;
    TierCostOverride tier;
    const CostSection::TierValue* first = nullptr;
    for (const auto& [field, value] : chosen) {
      if (!first) {
        first = value;
        tier.above_input_tokens = value->above_input_tokens;
      } else if (value->above_input_tokens != tier.above_input_tokens) {
        error(value->site.path, value->site.line,
              "long-prompt tier keys of one deployment must name one threshold: " +
                  std::to_string(value->above_input_tokens / 1000) + "k here, " +
                  std::to_string(tier.above_input_tokens / 1000) + "k at " + first->site.path);
        return;
      }
      switch (field) {
        case TierCostField::input_cost_per_token: tier.input_cost_per_token = value->decimal; break;
        case TierCostField::output_cost_per_token: tier.output_cost_per_token = value->decimal; break;
        case TierCostField::cache_read_input_token_cost: tier.cache_read_input_token_cost = value->decimal; break;
        case TierCostField::cache_creation_input_token_cost: tier.cache_creation_input_token_cost = value->decimal; break;
      }
    }
    d.long_prompt_tier_cost = std::move(tier);
  }

  void load_litellm_params(const YAML::Node& v, const std::string& path, int line, Deployment& d,
                           std::optional<std::string>& model, std::optional<std::string>& custom_provider,
                           bool& has_api_base, bool& has_api_key, bool& has_api_version, CostSection& costs) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "model") {
        model = str(val, p, l);
        if (!model && val.IsNull()) error(p, line_of(val, l), "model is required");
      } else if (k == "custom_llm_provider") {
        custom_provider = str(val, p, l);
      } else if (k == "api_base" || k == "base_url") {
        if (auto s = str(val, p, l)) {
          d.api_base = *s;
          has_api_base = true;
        }
      } else if (k == "api_key") {
        if (auto s = str(val, p, l)) {
          d.api_key = *s;
          has_api_key = true;
        }
      } else if (k == "api_version") {
        if (auto s = str(val, p, l)) {
          d.api_version = *s;
          has_api_version = true;
        }
      } else if (k == "timeout") {
        d.timeout = seconds(val, p, l, false);
      } else if (k == "stream_timeout") {
        d.stream_timeout = seconds(val, p, l, false);
      } else if (k == "rpm") {
        d.rpm = integer(val, p, l);
      } else if (k == "tpm") {
        d.tpm = integer(val, p, l);
      } else if (k == "weight") {
        d.weight = integer(val, p, l);
      } else if (load_cost_key(k, val, p, l, costs)) {
      } else if (k == "drop_params") {
        // Cosmetic in LiteLLM (drop unsupported OpenAI params); Tollgate passes bodies through.
      } else {
        unknown(p, l, kIgnored);
      }
    });
  }

  void load_model_info(const YAML::Node& v, const std::string& path, int line, Deployment& d, CostSection& costs,
                       int& id_line) {
    std::optional<std::int64_t> max_tokens_alias;
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "id") {
        if (auto s = str(val, p, l)) {
          if (s->empty()) {
            error(p, line_of(val, l), "id must not be empty");
          } else {
            d.id = *s;
            id_line = line_of(val, l);
          }
        }
      } else if (k == "base_model") {
        if (auto s = str(val, p, l)) d.base_model = *s;
      } else if (k == "max_input_tokens") {
        d.max_input_tokens = integer(val, p, l, 1);
      } else if (k == "max_output_tokens") {
        d.max_output_tokens = integer(val, p, l, 1);
      } else if (k == "max_tokens") {
        max_tokens_alias = integer(val, p, l, 1);  // LiteLLM's legacy name for max output
      } else if (k == "access_groups") {
        if (auto list = string_list(val, p, l)) d.access_groups = std::move(*list);
      } else if (load_cost_key(k, val, p, l, costs)) {
      } else if (is_silent_model_info(k)) {
      } else {
        unknown(p, l, kIgnored);
      }
    });
    if (!d.max_output_tokens && max_tokens_alias) d.max_output_tokens = max_tokens_alias;
  }

  void load_deployment(const YAML::Node& entry, const std::string& path, int line, Config& cfg) {
    line = line_of(entry, line);
    if (!entry.IsMap()) {
      error(path, line, std::string("expected a map with model_name and litellm_params, got ") +
                            type_name(entry));
      return;
    }
    Deployment d;
    std::optional<std::string> model, custom_provider;
    CostSection param_costs, info_costs;
    bool has_name = false, has_params = false, has_api_base = false, has_api_key = false,
         has_api_version = false;
    int model_line = line, id_line = line;
    const std::size_t errors_before = errors.size();
    for_each_entry(entry, path, line, [&](const std::string& k, const YAML::Node& val,
                                          const std::string& p, int l) {
      if (k == "model_name") {
        if (auto s = str(val, p, l)) {
          if (s->empty()) {
            error(p, line_of(val, l), "model_name must not be empty");
          } else {
            d.model_name = *s;  // a wildcard (`*`, `openai/*`) serves the names it matches
          }
        }
        has_name = true;
      } else if (k == "litellm_params") {
        has_params = true;
        model_line = l;
        // A deployment's secrets and URLs from unset variables are left unset (LiteLLM reads
        // them as None and fails the deployment when it is called), with a warning.
        lenient_env_ = true;
        unset_env_.clear();
        load_litellm_params(val, p, l, d, model, custom_provider, has_api_base, has_api_key,
                            has_api_version, param_costs);
        lenient_env_ = false;
      } else if (k == "model_info") {
        load_model_info(val, p, l, d, info_costs, id_line);
      } else {
        unknown(p, l, kIgnored);
      }
    });
    if (!has_name) error(join(path, "model_name"), line, "model_name is required");
    if (!has_params) error(join(path, "litellm_params"), line, "litellm_params is required");
    else if (!model && errors.size() == errors_before)
      error(join(path, "litellm_params.model"), model_line, "model is required");
    if (!model || d.model_name.empty()) return;
    // From here on a failure still names the group, so fallbacks to it are not reported twice.
    broken_groups_.insert(d.model_name);

    // Provider: custom_llm_provider, else the "provider/" prefix, else claude* → anthropic.
    const std::string mpath = join(path, "litellm_params.model");
    std::string prefix;
    std::string upstream = *model;
    if (custom_provider) {
      prefix = *custom_provider;
      if (starts_with(upstream, prefix + "/")) upstream = upstream.substr(prefix.size() + 1);
    } else if (auto slash = model->find('/'); slash != std::string::npos) {
      prefix = model->substr(0, slash);
      upstream = model->substr(slash + 1);
    } else {
      prefix = starts_with(*model, "claude") ? "anthropic" : "openai";
    }
    // A deployment that cannot be called is kept, with a warning (LiteLLM loads it and fails it
    // when a request reaches it); its group's other deployments and fallbacks still serve.
    // `unusable` empty: its provider is not implemented (400 unsupported_provider); else why its
    // config cannot be called (500 deployment_misconfigured).
    auto keep_uncallable = [&](std::string unusable) {
      d.provider_prefix = prefix;
      d.provider = ProviderKind::unsupported;
      d.unusable = std::move(unusable);
      d.upstream_model = upstream.empty() ? *model : upstream;
      merge_costs(param_costs, info_costs, d);
      broken_groups_.erase(d.model_name);
      id_lines_.push_back(d.id.empty() ? 0 : id_line);
      paths_.push_back(path);
      cfg.model_list.push_back(std::move(d));
    };
    const ProviderInfo* info = find_provider(prefix);
    if (!info) {
      warn(custom_provider ? join(path, "litellm_params.custom_llm_provider") : mpath, model_line,
           "provider \"" + prefix + "\" is not supported by tollgate: requests routed to this deployment fail with 400 "
           "unsupported_provider; its group's other deployments and fallbacks still serve (supported: " +
               supported_prefixes() + ")");
      keep_uncallable("");
      return;
    }
    auto keep_unusable = [&](const std::string& wpath, const std::string& why, int wline = 0) {
      warn(wpath, wline > 0 ? wline : model_line, why + ": requests routed to this deployment fail with 500 deployment_misconfigured; "
                                    "its group's other deployments and fallbacks still serve");
      keep_uncallable(why);
    };
    if (!unset_env_.empty()) {
      // As LiteLLM reads an unset variable (None): the file loads, the deployment fails when
      // called. Tollgate does not fall back to a provider default key or URL in its place.
      std::string names;
      for (const auto& u : unset_env_) names += (names.empty() ? "" : ", ") + u.name + " (" + u.path + ")";
      const auto first = unset_env_.front();
      unset_env_.clear();
      keep_unusable(first.path, "environment variable(s) not set: " + names, first.line);
      return;
    }
    if (upstream.empty()) {
      keep_unusable(mpath, "model name after the provider prefix is empty");
      return;
    }
    d.provider_prefix = prefix;
    d.provider = info->kind;
    d.upstream_model = upstream;

    // Provider defaults from the environment, as LiteLLM reads them.
    auto from_env = [&](const std::array<std::string_view, 2>& names) -> std::optional<std::string> {
      for (std::string_view n : names)
        if (!n.empty())
          if (auto v = lookup_env(n); v && !v->empty()) return v;
      return std::nullopt;
    };
    if (!has_api_key)
      if (auto k = from_env(info->key_env)) d.api_key = *k;
    if (!has_api_base) {
      if (auto b = from_env(info->base_env)) d.api_base = *b;
      else d.api_base = std::string(info->default_api_base);
    }
    if (d.provider == ProviderKind::azure && !has_api_version)
      if (auto v = lookup_env("AZURE_API_VERSION")) d.api_version = *v;

    while (!d.api_base.empty() && d.api_base.back() == '/') d.api_base.pop_back();
    const std::string bpath = join(path, "litellm_params.api_base");
    if (d.api_base.empty() && info->requires_api_base) {
      keep_unusable(bpath, "api_base is required for provider \"" + prefix + "\"");
      return;
    }
    if (!d.api_base.empty() && !starts_with(d.api_base, "http://") &&
        !starts_with(d.api_base, "https://")) {
      keep_unusable(bpath, "api_base must start with http:// or https://, got \"" + d.api_base + "\"");
      return;
    }
    // litellm_params prices win over model_info ones.
    merge_costs(param_costs, info_costs, d);

    broken_groups_.erase(d.model_name);
    id_lines_.push_back(d.id.empty() ? 0 : id_line);
    paths_.push_back(path);
    cfg.model_list.push_back(std::move(d));
  }

  void load_litellm_settings(const YAML::Node& v, const std::string& path, int line, Config& cfg) {
    LitellmSettings& s = cfg.litellm_settings;
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "num_retries") s.num_retries = small_int(val, p, l);
      else if (k == "request_timeout") s.request_timeout = seconds(val, p, l, false);
      else if (k == "fallbacks") s.fallbacks = fallbacks(val, p, l, fallback_sites_[k]);
      else if (k == "context_window_fallbacks") s.context_window_fallbacks = fallbacks(val, p, l, fallback_sites_[k]);
      else if (k == "content_policy_fallbacks") s.content_policy_fallbacks = fallbacks(val, p, l, fallback_sites_[k]);
      else if (k == "default_fallbacks") default_fallbacks(val, p, l, s);
      else if (k == "max_budget") s.max_budget = decimal(val, p, l);
      else if (k == "max_end_user_budget") s.max_end_user_budget = decimal(val, p, l);
      else if (k == "budget_duration") {
        if (auto d = str(val, p, l)) {
          if (valid_budget_duration(*d)) s.budget_duration = *d;
          else error(p, line_of(val, l), "expected a duration like 30s, 30m, 24h, 30d or 1mo, got \"" + *d + "\"");
        }
      } else if (k == "callbacks" || k == "success_callback") {
        // LiteLLM's switch for OpenTelemetry export; other callbacks are logging integrations.
        if (val.IsSequence())
          for (const auto& e : val)
            if (e.IsScalar() && e.as<std::string>() == "otel") otel_callback_ = true;
      } else if (is_silent_litellm_setting(k)) {
      } else {
        unknown(p, l, kIgnored);
      }
    });
  }

  /// An absolute http(s) URL with a host, or why not.
  static std::expected<void, std::string> check_http_url(const std::string& url) {
    auto u = boost::urls::parse_uri(url);
    if (!u) return std::unexpected("'" + url + "' is not a URL");
    if (u->scheme() != "http" && u->scheme() != "https")
      return std::unexpected("'" + url + "' must be an http:// or https:// URL");
    if (u->host().empty()) return std::unexpected("'" + url + "' has no host");
    return {};
  }

  /// `key=value,key2=value2` as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES write
  /// them (values percent-decoded); malformed entries are skipped.
  static std::vector<std::pair<std::string, std::string>> otel_pairs(std::string_view text) {
    std::vector<std::pair<std::string, std::string>> out;
    auto decode = [](std::string_view v) {
      std::string r;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '%' && i + 2 < v.size()) {
          const auto hex = std::string(v.substr(i + 1, 2));
          char* end = nullptr;
          const long c = std::strtol(hex.c_str(), &end, 16);
          if (end == hex.c_str() + 2) {
            r.push_back(static_cast<char>(c));
            i += 2;
            continue;
          }
        }
        r.push_back(v[i]);
      }
      return r;
    };
    auto trim = [](std::string_view v) {
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return v;
    };
    while (!text.empty()) {
      const auto comma = text.find(',');
      auto item = text.substr(0, comma);
      text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
      const auto eq = item.find('=');
      if (eq == std::string_view::npos) continue;
      auto k = trim(item.substr(0, eq));
      if (k.empty()) continue;
      out.emplace_back(decode(k), decode(trim(item.substr(eq + 1))));
    }
    return out;
  }

  void load_otel(const YAML::Node& v, const std::string& path, int line, OtelSettings& o) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val, const std::string& p, int l) {
      if (k == "enabled") {
        if (auto b = boolean(val, p, l)) {
          o.enabled = *b;
          otel_enabled_set_ = true;
        }
      } else if (k == "endpoint" || k == "traces_endpoint") {
        if (auto s = str(val, p, l)) {
          std::string url = *s;
          // `endpoint` is the OTLP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT): /v1/traces is appended.
          if (k == "endpoint") url = (url.ends_with("/") ? url.substr(0, url.size() - 1) : url) + "/v1/traces";
          if (auto t = check_http_url(url); !t) error(p, line_of(val, l), t.error());
          else o.traces_endpoint = url;
        }
      } else if (k == "headers") {
        for_each_entry(val, p, l, [&](const std::string& hk, const YAML::Node& hv, const std::string& hp, int hl) {
          if (auto s = str(hv, hp, hl)) o.headers.emplace_back(hk, *s);
        });
      } else if (k == "service_name") {
        if (auto s = str(val, p, l)) {
          if (s->empty()) error(p, line_of(val, l), "service_name must not be empty");
          else o.service_name = *s;
        }
      } else if (k == "resource_attributes") {
        for_each_entry(val, p, l, [&](const std::string& rk, const YAML::Node& rv, const std::string& rp, int rl) {
          if (auto s = str(rv, rp, rl)) o.resource_attributes.emplace_back(rk, *s);
        });
      } else if (k == "capture_content") {
        if (auto b = boolean(val, p, l)) o.capture_content = *b;
      } else if (k == "timeout_ms") {
        if (auto d = millis(val, p, l)) {
          if (d->count() > 60000) error(p, line_of(val, l), "timeout_ms must be 1..60000");
          else o.timeout = *d;
        }
      } else if (k == "queue_size") {
        if (auto n = integer(val, p, l, 1)) {
          if (*n > 1000000) error(p, line_of(val, l), "queue_size must be 1..1000000");
          else o.queue_size = *n;
        }
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  void load_alerts(const YAML::Node& v, const std::string& path, int line, AlertSettings& a) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val, const std::string& p, int l) {
      if (k == "webhooks") {
        if (auto list = string_list(val, p, l))
          for (std::size_t i = 0; i < list->size(); ++i) {
            if (auto ok = check_http_url((*list)[i]); !ok) error(index(p, i), line_of(val[i], l), ok.error());
            else a.webhooks.push_back((*list)[i]);
          }
      } else if (k == "timeout_ms") {
        if (auto d = millis(val, p, l)) {
          if (d->count() > 60000) error(p, line_of(val, l), "timeout_ms must be 1..60000");
          else a.timeout = *d;
        }
      } else if (k == "budget_thresholds") {
        for_each_entry(val, p, l, [&](const std::string& kind, const YAML::Node& tv, const std::string& tp, int tl) {
          if (!a.budget_thresholds.contains(kind)) {
            error(tp, tl, "unknown scope kind '" + kind + "' (key, user, end_user, team, organization, team_member, tag, global, model)");
            return;
          }
          std::vector<int> out;
          if (!tv.IsSequence()) {
            error(tp, line_of(tv, tl), "expected a list of percentages, e.g. [50, 80, 100]");
            return;
          }
          for (std::size_t i = 0; i < tv.size(); ++i) {
            auto n = integer(tv[i], index(tp, i), line_of(tv[i], tl), 1);
            if (!n) return;
            if (*n > 1000) {
              error(index(tp, i), line_of(tv[i], tl), "a threshold is a percentage of max_budget, 1..1000");
              return;
            }
            out.push_back(static_cast<int>(*n));
          }
          std::sort(out.begin(), out.end());
          out.erase(std::unique(out.begin(), out.end()), out.end());
          a.budget_thresholds[kind] = std::move(out);
        });
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  /// LiteLLM's general_settings.alerting channels: their URLs come from the environment.
  void load_alerting_channels(Config& cfg) {
    for (const auto& ch : alerting_channels_) {
      const char* var = ch == "slack" ? "SLACK_WEBHOOK_URL" : ch == "webhook" ? "WEBHOOK_URL" : nullptr;
      if (!var) {
        warn("general_settings.alerting", alerting_line_, "alerting channel '" + ch + "' is not supported (slack and webhook are)");
        continue;
      }
      auto url = lookup_env(var);
      if (!url || url->empty()) {
        warn("general_settings.alerting", alerting_line_, "'" + ch + "' alerting needs the " + std::string(var) + " environment variable");
        continue;
      }
      if (auto ok = check_http_url(*url); !ok) error("general_settings.alerting", alerting_line_, std::string(var) + ": " + ok.error());
      else cfg.tollgate_settings.alerts.webhooks.push_back(*url);
    }
  }

  /// The OpenTelemetry environment variables under what the file left unset.
  void load_otel_from_environment(Config& cfg) {
    auto& o = cfg.tollgate_settings.otel;
    if (otel_callback_ && !otel_enabled_set_) o.enabled = true;
    if (o.traces_endpoint.empty()) {
      if (auto t = lookup_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); t && !t->empty()) {
        o.traces_endpoint = *t;
      } else if (auto e = lookup_env("OTEL_EXPORTER_OTLP_ENDPOINT"); e && !e->empty()) {
        std::string base = *e;
        if (base.ends_with("/")) base.pop_back();
        o.traces_endpoint = base + "/v1/traces";
      } else {
        o.traces_endpoint = "http://localhost:4318/v1/traces";
      }
      if (auto t = check_http_url(o.traces_endpoint); !t && o.enabled)
        error("tollgate_settings.otel.traces_endpoint", 0, "from the environment: " + t.error());
    }
    if (o.headers.empty())
      if (auto h = lookup_env("OTEL_EXPORTER_OTLP_TRACES_HEADERS").value_or(lookup_env("OTEL_EXPORTER_OTLP_HEADERS").value_or(""));
          !h.empty())
        o.headers = otel_pairs(h);
    if (o.service_name == "tollgate")
      if (auto n = lookup_env("OTEL_SERVICE_NAME"); n && !n->empty()) o.service_name = *n;
    if (o.resource_attributes.empty())
      if (auto r = lookup_env("OTEL_RESOURCE_ATTRIBUTES"); r && !r->empty()) o.resource_attributes = otel_pairs(*r);
  }

  void default_fallbacks(const YAML::Node& val, const std::string& p, int l, LitellmSettings& s) {
    if (auto list = string_list(val, p, l)) {
      for (std::size_t i = 0; i < list->size(); ++i)
        refs_.push_back(GroupRef{(*list)[i], index(p, i), line_of(val[i], l), false});
      s.default_fallbacks = std::move(*list);
    }
  }

  static bool valid_budget_duration(std::string_view d) {
    std::size_t n = 0;
    while (n < d.size() && d[n] >= '0' && d[n] <= '9') ++n;
    if (n == 0) return false;
    const std::string_view unit = d.substr(n);
    return unit == "s" || unit == "m" || unit == "h" || unit == "d" || unit == "w" || unit == "mo";
  }

  void load_router_settings(const YAML::Node& v, const std::string& path, int line, Config& cfg,
                            bool& has_num_retries, bool& has_timeout) {
    RouterSettings& r = cfg.router_settings;
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "routing_strategy") {
        if (auto s = str(val, p, l)) {
          if (*s == "simple-shuffle") r.routing_strategy = RoutingStrategy::simple_shuffle;
          else if (*s == "least-busy") r.routing_strategy = RoutingStrategy::least_busy;
          else if (*s == "latency-based-routing") r.routing_strategy = RoutingStrategy::latency_based;
          else if (*s == "usage-based-routing" || *s == "usage-based-routing-v2")
            r.routing_strategy = RoutingStrategy::usage_based;
          else
            error(p, line_of(val, l), "unknown routing_strategy \"" + *s +
                                          "\" (expected simple-shuffle, least-busy, "
                                          "latency-based-routing, usage-based-routing or usage-based-routing-v2)");
        }
      } else if (k == "num_retries") {
        if (auto n = small_int(val, p, l)) {
          r.num_retries = *n;
          has_num_retries = true;
        }
      } else if (k == "max_fallbacks") {
        if (auto n = small_int(val, p, l)) r.max_fallbacks = *n;
      } else if (k == "allowed_fails") {
        if (auto n = small_int(val, p, l)) r.allowed_fails = *n;
      } else if (k == "cooldown_time") {
        if (auto d = seconds(val, p, l, true)) r.cooldown_time = *d;
      } else if (k == "retry_after") {
        if (auto d = seconds(val, p, l, true)) r.retry_after = *d;
      } else if (k == "timeout") {
        if (auto d = seconds(val, p, l, false)) {
          r.timeout = *d;
          has_timeout = true;
        }
      } else if (k == "fallbacks" || k == "context_window_fallbacks" || k == "content_policy_fallbacks") {
        // The Router accepts these too; they land in litellm_settings (router_settings wins).
        RouterFallbacks rf{k, {}, {}};
        rf.rules = fallbacks(val, p, l, rf.sites);
        router_fallbacks_.push_back(std::move(rf));
      } else if (k == "default_fallbacks") {
        LitellmSettings tmp;
        default_fallbacks(val, p, l, tmp);
        router_default_fallbacks_ = std::move(tmp.default_fallbacks);
        has_router_default_fallbacks_ = true;
      } else if (is_silent_router_setting(k)) {
      } else if (k == "redis_host") {
        if (auto s = str(val, p, l)) {
          if (s->empty()) error(p, line_of(val, l), "redis_host must not be empty (omit it for one instance)");
          else if (redis_url_.host.empty()) r.redis.host = *s;
        }
      } else if (k == "redis_port") {
        if (auto n = integer(val, p, l, 1)) {
          if (*n > 65535) error(p, line_of(val, l), "redis_port must be 1..65535");
          else redis_port_ = static_cast<int>(*n);
        }
      } else if (k == "redis_password") {
        if (auto s = str(val, p, l)) redis_password_ = *s;
      } else if (k == "redis_url") {
        if (auto s = str(val, p, l)) {
          auto e = parse_redis_url(*s);
          if (!e) error(p, line_of(val, l), e.error());
          else redis_url_ = *e;
        }
      } else if (k == "retry_policy" || k == "allowed_fails_policy") {
        // Accepted so LiteLLM configs load; validated for os.environ/ like any string.
        walk_scalars(val, p, l);
        warn(p, l, std::string(kIgnored));
      } else {
        unknown(p, l, kIgnored);
      }
    });
    // redis_url wins over the separate keys (LiteLLM reads it first).
    if (redis_url_.configured()) {
      r.redis = redis_url_;
    } else if (r.redis.configured()) {
      r.redis.port = redis_port_;
      r.redis.password = redis_password_;
    } else if (redis_port_ != 6379 || !redis_password_.empty()) {
      error(join(path, "redis_host"), line, "redis_port / redis_password need redis_host (or set redis_url)");
    }
  }

  /// Resolves os.environ/ in every scalar beneath `v` (so a missing variable is still an error).
  void walk_scalars(const YAML::Node& v, const std::string& path, int line) {
    if (v.IsScalar()) {
      substitute(v.Scalar(), path, line_of(v, line));
    } else if (v.IsSequence()) {
      for (std::size_t i = 0; i < v.size(); ++i) walk_scalars(v[i], index(path, i), line);
    } else if (v.IsMap()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        const YAML::Node k = it->first;
        const YAML::Node value = it->second;
        walk_scalars(value, join(path, k.IsScalar() ? k.Scalar() : "?"), line_of(k, line));
      }
    }
  }

  void load_general_settings(const YAML::Node& v, const std::string& path, int line, Config& cfg) {
    GeneralSettings& g = cfg.general_settings;
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "master_key") {
        if (auto s = str(val, p, l)) {
          g.master_key = *s;
          if (!s->empty() && !starts_with(*s, "sk-"))
            warn(p, line_of(val, l), "LiteLLM requires master_key to start with \"sk-\"");
        }
      } else if (k == "database_url") {
        // What `serve` can open (core::parse_database_url, also used by the store factory):
        // anything else would pass `config check` and then fail at start.
        if (auto s = str(val, p, l)) {
          if (auto parsed = core::parse_database_url(*s); !parsed) error(p, line_of(val, l), parsed.error());
          else g.database_url = *s;
        }
      } else if (k == "database_connection_pool_limit") {
        if (auto n = integer(val, p, l, 1)) g.database_connection_pool_limit = static_cast<int>(std::min<std::int64_t>(*n, 1000));
      } else if (k == "enforce_fallback_budget") {
        if (auto b = boolean(val, p, l)) g.enforce_fallback_budget = *b;
      } else if (k == "enforce_fallback_model_access") {
        if (auto b = boolean(val, p, l)) g.enforce_fallback_model_access = *b;
      } else if (k == "disable_spend_logs") {
        if (auto b = boolean(val, p, l)) g.disable_spend_logs = *b;
      } else if (k == "block_unpriced_models") {
        if (auto b = boolean(val, p, l)) g.block_unpriced_models = *b;
      } else if (k == "apply_user_budget_to_team_keys") {
        if (auto b = boolean(val, p, l)) g.apply_user_budget_to_team_keys = *b;
      } else if (k == "alerting") {
        if (auto list = string_list(val, p, l)) {
          alerting_channels_ = std::move(*list);
          alerting_line_ = line_of(val, l);
        }
      } else if (k == "alerting_threshold" || k == "alert_types" || k == "alert_to_webhook_url") {
        // LiteLLM's slow-request threshold and alert routing: Tollgate's alerts are listed in
        // docs/observability.md and all go to every channel.
        warn(p, l, "accepted and ignored: Tollgate sends every alert kind to every channel");
      } else if (k == "budget_reset_timezone") {
        if (auto s = str(val, p, l)) g.budget_reset_timezone = *s;
      } else {
        unknown(p, l, kIgnored);
      }
    });
  }

  // As LiteLLM: without general_settings.database_url, the DATABASE_URL environment variable (or
  // environment_variables entry) names the database.
  void load_database_url_from_environment(Config& cfg) {
    GeneralSettings& g = cfg.general_settings;
    if (!g.database_url.empty()) return;
    const auto url = lookup_env("DATABASE_URL");
    if (!url || url->empty()) return;
    if (auto parsed = core::parse_database_url(*url); !parsed)
      error("general_settings.database_url", 0, "from the DATABASE_URL environment variable: " + parsed.error());
    else
      g.database_url = *url;
  }

  void load_tollgate_settings(const YAML::Node& v, const std::string& path, int line, Config& cfg) {
    TollgateSettings& t = cfg.tollgate_settings;
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "max_request_body_bytes") {
        if (auto n = integer(val, p, l, 1)) t.max_request_body_bytes = *n;
      } else if (k == "max_upstream_body_bytes") {
        if (auto n = integer(val, p, l, 1)) t.max_upstream_body_bytes = *n;
      } else if (k == "header_read_timeout_ms") {
        if (auto d = millis(val, p, l)) t.header_read_timeout = *d;
      } else if (k == "body_read_timeout_ms") {
        if (auto d = millis(val, p, l)) t.body_read_timeout = *d;
      } else if (k == "idle_timeout_ms") {
        if (auto d = millis(val, p, l)) t.idle_timeout = *d;
      } else if (k == "connect_timeout_ms") {
        if (auto d = millis(val, p, l)) t.connect_timeout = *d;
      } else if (k == "drain_timeout_ms") {
        if (auto d = millis(val, p, l, 0)) {
          if (*d > TollgateSettings::kMaxDrainTimeout)
            error(p, line_of(val, l),
                  "must be at most " + std::to_string(TollgateSettings::kMaxDrainTimeout.count()) +
                      " (one hour), got " + std::to_string(d->count()));
          else
            t.drain_timeout = *d;
        }
      } else if (k == "worker_threads") {
        if (auto n = small_int(val, p, l)) t.worker_threads = *n;
      } else if (k == "ca_file") {
        if (auto s = str(val, p, l)) t.ca_file = *s;
      } else if (k == "tls_verify") {
        if (auto b = boolean(val, p, l)) {
          t.tls_verify = *b;
          if (!*b) warn(p, line_of(val, l), "upstream TLS certificate verification is disabled");
        }
      } else if (k == "max_idle_connections_per_upstream") {
        if (auto n = small_int(val, p, l)) t.max_idle_connections_per_upstream = *n;
      } else if (k == "data_dir") {
        if (auto s = str(val, p, l)) {
          if (s->empty()) error(p, line_of(val, l), "data_dir must not be empty");
          else t.data_dir = *s;
        }
      } else if (k == "budget_output_policy") {
        if (auto s = str(val, p, l)) {
          if (*s == "clamp") t.budget_output_policy = TollgateSettings::BudgetOutputPolicy::clamp;
          else if (*s == "refuse") t.budget_output_policy = TollgateSettings::BudgetOutputPolicy::refuse;
          else error(p, line_of(val, l), "budget_output_policy must be `clamp` or `refuse`, got '" + *s + "'");
        }
      } else if (k == "min_output_tokens") {
        if (auto n = integer(val, p, l, 1)) t.min_output_tokens = *n;
      } else if (k == "budget_reservation_share_percent") {
        if (auto n = small_int(val, p, l)) {
          if (*n < 1 || *n > 100) error(p, line_of(val, l), "budget_reservation_share_percent must be 1..100");
          else t.budget_reservation_share_percent = *n;
        }
      } else if (k == "ledger_lease_ms") {
        if (auto n = integer(val, p, l, 1000)) {
          if (*n > 600000) error(p, line_of(val, l), "ledger_lease_ms must be 1000..600000");
          else t.ledger_lease = milliseconds(*n);
        }
      } else if (k == "max_queued_jobs_per_key") {
        if (auto n = integer(val, p, l, 0)) {
          if (*n > 1000000) error(p, line_of(val, l), "max_queued_jobs_per_key must be 0..1000000");
          else t.max_queued_jobs_per_key = *n;
        }
      } else if (k == "job_retention_ms") {
        if (auto n = integer(val, p, l, 1000)) {
          if (*n > 315360000000) error(p, line_of(val, l), "job_retention_ms must be 1000..315360000000 (ten years)");
          else t.job_retention = milliseconds(*n);
        }
      } else if (k == "identity_refresh_ms") {
        if (auto n = integer(val, p, l, 50)) {
          if (*n > 60000) error(p, line_of(val, l), "identity_refresh_ms must be 50..60000");
          else t.identity_refresh = milliseconds(*n);
        }
      } else if (k == "redis_key_prefix") {
        if (auto s = str(val, p, l)) {
          if (s->empty() || s->size() > 64) error(p, line_of(val, l), "redis_key_prefix must be 1..64 characters");
          else t.redis_key_prefix = *s;
        }
      } else if (k == "redis_timeout_ms") {
        if (auto n = integer(val, p, l, 10)) {
          if (*n > 60000) error(p, line_of(val, l), "redis_timeout_ms must be 10..60000");
          else t.redis_timeout = milliseconds(*n);
        }
      } else if (k == "alerts") {
        load_alerts(val, p, l, t.alerts);
      } else if (k == "access_log") {
        if (auto s = str(val, p, l)) t.access_log = *s;
      } else if (k == "otel") {
        load_otel(val, p, l, t.otel);
      } else if (k == "price_file") {
        if (auto s = str(val, p, l)) {
          if (s->empty()) {
            error(p, line_of(val, l), "price_file must not be empty (omit it to use the bundled table)");
          } else {
            t.price_file = *s;
            t.price_file_line = line_of(val, l);
          }
        }
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  // ---- fallback_policy (config/policy.hpp) -----------------------------------------------

  void load_fallback_policy(const YAML::Node& v, const std::string& path, int line, Config& cfg) {
    FallbackPolicyConfig& fp = cfg.fallback_policy;
    fp.defaults.path = join(path, "defaults");
    fp.defaults.line = line;
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "deadline_slack_ms") {
        if (auto d = millis(val, p, l, 0)) fp.deadline_slack = *d;
      } else if (k == "provider_circuit") {
        load_provider_circuit(val, p, l, fp.provider_circuit);
      } else if (k == "defaults") {
        fp.defaults.path = p;
        fp.defaults.line = l;
        load_group_policy(val, p, l, fp.defaults);
      } else if (k == "model_groups") {
        for_each_entry(val, p, l, [&](const std::string& group, const YAML::Node& gval,
                                      const std::string& gp, int gl) {
          if (group == "*") {
            error(gp, gl, "\"*\" is not allowed in model_groups; use fallback_policy.defaults for every group");
            return;
          }
          refs_.push_back(GroupRef{group, gp, gl, false});
          GroupPolicyConfig g;
          g.group = group;
          g.path = gp;
          g.line = gl;
          load_group_policy(gval, gp, gl, g);
          fp.model_groups.push_back(std::move(g));
        });
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  void load_provider_circuit(const YAML::Node& v, const std::string& path, int line,
                             ProviderCircuitConfig& pc) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "open_ratio") {
        if (auto r = ratio(val, p, l)) pc.open_ratio = *r;
      } else if (k == "min_deployments") {
        if (auto n = small_int(val, p, l, 1)) pc.min_deployments = *n;
      } else if (k == "cooldown_ms") {
        if (auto d = millis(val, p, l, 0)) pc.cooldown = *d;
      } else if (k == "commercial_limit_cooldown_ms") {
        if (auto d = millis(val, p, l, 0)) pc.commercial_limit_cooldown = *d;
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  /// `defaults:` or `model_groups.<group>:`.
  void load_group_policy(const YAML::Node& v, const std::string& path, int line, GroupPolicyConfig& g) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "classes") {
        for_each_entry(val, p, l, [&](const std::string& name, const YAML::Node& rule,
                                      const std::string& cp, int cl) {
          auto cls = parse_failure_class(name);
          if (!cls) {
            error(cp, cl, "unknown failure class \"" + name + "\" (expected " +
                              names_of<FailureClass>(kFailureClassCount) + ")");
            return;
          }
          ClassRuleConfig r;
          r.cls = *cls;
          load_class_rule(rule, cp, cl, r);
          g.classes.push_back(std::move(r));
        });
      } else if (k == "budgets") {
        load_budgets(val, p, l, g.budgets);
      } else if (k == "circuit") {
        load_circuit(val, p, l, g.circuit);
      } else if (k == "feature_circuit") {
        load_feature_circuit(val, p, l, g.feature_circuit);
      } else if (k == "degradation") {
        if (val.IsNull()) return;
        if (auto d = load_degradation(val, p, l, g.path)) g.degradation = std::move(*d);
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  void load_class_rule(const YAML::Node& v, const std::string& path, int line, ClassRuleConfig& r) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "status") {
        if (val.IsNull()) return;
        if (!val.IsSequence()) {
          error(p, line_of(val, l), std::string("expected a list of HTTP statuses, got ") + type_name(val));
          return;
        }
        std::vector<int> statuses;
        bool ok = true;
        for (std::size_t i = 0; i < val.size(); ++i) {
          const std::string ip = index(p, i);
          auto n = small_int(val[i], ip, l);
          if (!n) {
            if (val[i].IsNull()) error(ip, line_of(val[i], l), "expected an HTTP status, got null");
            ok = false;
          } else if (*n < 100 || *n > 599) {
            error(ip, line_of(val[i], l), "not an HTTP status (100..599): " + std::to_string(*n));
            ok = false;
          } else {
            statuses.push_back(*n);
          }
        }
        if (ok) r.status = std::move(statuses);
      } else if (k == "codes") {
        r.codes = string_list(val, p, l);
      } else if (k == "messages") {
        r.messages = string_list(val, p, l);
      } else if (k == "transport") {
        auto names = string_list(val, p, l);
        if (!names) return;
        std::vector<TransportEvent> events;
        bool ok = true;
        for (std::size_t i = 0; i < names->size(); ++i) {
          const std::string& name = (*names)[i];
          auto e = parse_transport_event(name);
          const int il = line_of(val[i], l);
          if (!e) {
            error(index(p, i), il, "unknown transport event \"" + name + "\" (expected " +
                                        names_of<TransportEvent>(kTransportEventCount) + ")");
            ok = false;
          } else if (*e == TransportEvent::none) {
            // Every complete response has transport "none": listing it would capture them all.
            error(index(p, i), il, "transport event \"none\" cannot be matched; use status or codes");
            ok = false;
          } else {
            events.push_back(*e);
          }
        }
        if (ok) r.transport = std::move(events);
      } else if (k == "action") {
        if (auto s = str(val, p, l)) {
          if (auto a = parse_policy_action(*s)) r.action = *a;
          else
            error(p, line_of(val, l), "unknown action \"" + *s + "\" (expected " +
                                          names_of<PolicyAction>(kPolicyActionCount) + "; \"retry\" = retry_then_fallback)");
        }
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  void load_budgets(const YAML::Node& v, const std::string& path, int line, RequestBudgetConfig& b) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "max_retries") {
        if (auto n = small_int(val, p, l, 0)) b.max_retries = *n;
      } else if (k == "max_fallbacks") {
        if (auto n = small_int(val, p, l, 0)) b.max_fallbacks = *n;
      } else if (k == "deadline_ms") {
        if (auto d = millis(val, p, l, 1)) b.deadline = *d;
      } else if (k == "min_time_left_ms") {
        if (auto d = millis(val, p, l, 0)) b.min_time_left = *d;
      } else if (k == "max_request_cost") {
        if (auto c = decimal(val, p, l)) b.max_request_cost = *c;
      } else {
        unknown(p, l, kUnknown);
      }
    });
    if (b.deadline && b.min_time_left && *b.min_time_left >= *b.deadline)
      warn(join(path, "min_time_left_ms"), line,
           "min_time_left_ms is not below deadline_ms: no attempt could start");
  }

  void load_circuit(const YAML::Node& v, const std::string& path, int line, CircuitConfig& c) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "consecutive_failures") {
        if (auto n = small_int(val, p, l, 1)) c.consecutive_failures = *n;
      } else if (k == "failure_ratio") {
        if (auto r = ratio(val, p, l)) c.failure_ratio = *r;
      } else if (k == "window_ms") {
        if (auto d = millis(val, p, l, 1)) c.window = *d;
      } else if (k == "min_requests") {
        if (auto n = small_int(val, p, l, 1)) c.min_requests = *n;
      } else if (k == "cooldown_ms") {
        if (auto d = millis(val, p, l, 0)) c.cooldown = *d;
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  void load_feature_circuit(const YAML::Node& v, const std::string& path, int line,
                            FeatureCircuitConfig& c) {
    for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                      const std::string& p, int l) {
      if (k == "consecutive_failures") {
        if (auto n = small_int(val, p, l, 1)) c.consecutive_failures = *n;
      } else if (k == "cooldown_ms") {
        if (auto d = millis(val, p, l, 0)) c.cooldown = *d;
      } else {
        unknown(p, l, kUnknown);
      }
    });
  }

  /// A whole `degradation:` block (it is not layered field by field: a group's own block
  /// replaces the defaults' one). nullopt when it is unusable (errors reported).
  std::optional<DegradationConfig> load_degradation(const YAML::Node& v, const std::string& path,
                                                    int line, const std::string& layer_path) {
    DegradationConfig d;
    bool has_mode = false, ok = true, seen_max_tokens = false;
    std::optional<Site> model_site, max_tokens_site, caveat_site, max_age_site;
    const std::size_t errors_before = errors.size();
    const bool is_map = for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val,
                                                          const std::string& p, int l) {
      const Site site{p, line_of(val, l)};
      if (k == "mode") {
        if (auto s = str(val, p, l)) {
          has_mode = true;
          if (auto m = parse_degradation_mode(*s)) d.mode = *m;
          else {
            ok = false;
            error(p, site.line, "unknown degradation mode \"" + *s + "\" (expected " +
                                    names_of<DegradationMode>(kDegradationModeCount) + ")");
          }
        }
      } else if (k == "model") {
        if (auto s = str(val, p, l)) {
          d.model = *s;
          model_site = site;
        }
      } else if (k == "max_tokens") {
        seen_max_tokens = !val.IsNull();
        if ((d.max_tokens = integer(val, p, l, 1))) max_tokens_site = site;
      } else if (k == "caveat") {
        if (auto s = str(val, p, l)) {
          d.caveat = *s;
          caveat_site = site;
        }
      } else if (k == "max_age_ms") {
        if ((d.max_age = millis(val, p, l, 1))) max_age_site = site;
      } else {
        unknown(p, l, kUnknown);
      }
    });
    if (!is_map) return std::nullopt;
    if (!has_mode) {
      if (ok && errors.size() == errors_before)
        error(join(path, "mode"), line, "mode is required (" +
                                            names_of<DegradationMode>(kDegradationModeCount) + ")");
      return std::nullopt;
    }
    if (!ok) return std::nullopt;
    const bool needs_model = d.mode == DegradationMode::equivalent || d.mode == DegradationMode::reduced;
    const std::string mode_name(to_string(d.mode));
    if (needs_model) {
      if (d.model.empty()) {
        error(join(path, "model"), model_site ? model_site->line : line,
              "mode " + mode_name + " needs model (the model group that serves degraded requests)");
        ok = false;
      } else {
        refs_.push_back(GroupRef{d.model, model_site->path, model_site->line, false});
        degradation_model_sites_[layer_path] = *model_site;
      }
    } else if (model_site) {
      warn(model_site->path, model_site->line, "used only by modes equivalent and reduced, ignored for mode " + mode_name);
    }
    if (d.mode == DegradationMode::reduced && !d.max_tokens) {
      // An invalid max_tokens was reported already.
      if (!seen_max_tokens) error(join(path, "max_tokens"), line, "mode reduced needs max_tokens (the output cap)");
      ok = false;
    } else if (d.mode != DegradationMode::reduced && max_tokens_site) {
      warn(max_tokens_site->path, max_tokens_site->line, "used only by mode reduced, ignored for mode " + mode_name);
    }
    if (d.mode != DegradationMode::reduced && caveat_site)
      warn(caveat_site->path, caveat_site->line, "used only by mode reduced, ignored for mode " + mode_name);
    if (d.mode != DegradationMode::stale_cache && max_age_site)
      warn(max_age_site->path, max_age_site->line, "used only by mode stale_cache, ignored for mode " + mode_name);
    if (!ok) return std::nullopt;
    return d;
  }

  // ---- whole document -------------------------------------------------------------------

  void load(const YAML::Node& root, Config& cfg) {
    if (root.IsNull()) {
      warn("model_list", 0, "model_list is empty: no model can be served");
      return;
    }
    if (!root.IsMap()) {
      error("", line_of(root, 0), std::string("the config must be a map, got ") + type_name(root));
      return;
    }
    // environment_variables first: os.environ/ anywhere may refer to them.
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node value = it->second;
      if (k.IsScalar() && k.Scalar() == "environment_variables")
        load_environment_variables(value, "environment_variables", line_of(k, 0), cfg);
    }

    bool has_model_list = false, router_retries = false, router_timeout = false;
    for_each_entry(root, "", 0, [&](const std::string& k, const YAML::Node& val,
                                    const std::string& p, int l) {
      if (k == "model_list") {
        has_model_list = true;
        if (val.IsNull()) return;
        if (!val.IsSequence()) {
          error(p, line_of(val, l), std::string("expected a list of deployments, got ") + type_name(val));
          return;
        }
        for (std::size_t i = 0; i < val.size(); ++i) load_deployment(val[i], index(p, i), l, cfg);
      } else if (k == "litellm_settings") {
        load_litellm_settings(val, p, l, cfg);
      } else if (k == "router_settings") {
        load_router_settings(val, p, l, cfg, router_retries, router_timeout);
      } else if (k == "general_settings") {
        load_general_settings(val, p, l, cfg);
      } else if (k == "tollgate_settings") {
        load_tollgate_settings(val, p, l, cfg);
      } else if (k == "fallback_policy") {
        load_fallback_policy(val, p, l, cfg);
      } else if (k == "environment_variables") {
        // loaded above
      } else if (k == "include") {
        error(p, l, "include is not supported by tollgate; inline the included files");
      } else if (is_known_top_level_unsupported(k)) {
        unknown(p, l, kIgnored);
      } else {
        unknown(p, l, kUnknown);
      }
    });

    merge_router_fallbacks(cfg);
    load_database_url_from_environment(cfg);
    load_otel_from_environment(cfg);
    load_alerting_channels(cfg);
    if (cfg.model_list.empty() && (errors.empty() || !has_model_list))
      warn("model_list", 0, "model_list is empty: no model can be served");
    assign_ids(cfg);
    check_group_refs(cfg);
    check_fallback_cycles(cfg);

    cfg.effective_num_retries = router_retries ? cfg.router_settings.num_retries
                                : cfg.litellm_settings.num_retries ? *cfg.litellm_settings.num_retries
                                                                   : 2;
    cfg.router_settings.num_retries = cfg.effective_num_retries;
    cfg.effective_timeout = router_timeout ? cfg.router_settings.timeout
                            : cfg.litellm_settings.request_timeout ? *cfg.litellm_settings.request_timeout
                                                                   : milliseconds{600000};
    cfg.router_settings.timeout = cfg.effective_timeout;
  }

  void merge_router_fallbacks(Config& cfg) {
    LitellmSettings& ls = cfg.litellm_settings;
    for (RouterFallbacks& rf : router_fallbacks_) {
      const std::string& key = rf.key;
      auto& dst = key == "fallbacks" ? ls.fallbacks
                  : key == "context_window_fallbacks" ? ls.context_window_fallbacks
                                                      : ls.content_policy_fallbacks;
      if (!dst.empty())
        warn("router_settings." + key, 0,
             "also set in litellm_settings." + key + "; the router_settings value is used");
      dst = std::move(rf.rules);
      fallback_sites_[key] = std::move(rf.sites);
    }
    if (has_router_default_fallbacks_) {
      if (!ls.default_fallbacks.empty())
        warn("router_settings.default_fallbacks", 0,
             "also set in litellm_settings.default_fallbacks; the router_settings value is used");
      ls.default_fallbacks = std::move(router_default_fallbacks_);
    }
  }

  void assign_ids(Config& cfg) {
    std::set<std::string> ids;
    for (std::size_t i = 0; i < cfg.model_list.size(); ++i) {
      const Deployment& d = cfg.model_list[i];
      if (d.id.empty()) continue;
      if (!ids.insert(d.id).second)
        error(join(paths_[i], "model_info.id"), id_lines_[i], "duplicate model_info.id \"" + d.id + "\"");
    }
    std::map<std::string, int> next_in_group;
    for (Deployment& d : cfg.model_list) {
      int& n = next_in_group[d.model_name];
      const int mine = n++;
      if (!d.id.empty()) continue;
      std::string id = d.model_name + "/" + std::to_string(mine);
      // An explicit id may already look like a generated one; stay unique and stable.
      for (int k = 2; ids.contains(id); ++k) id = d.model_name + "/" + std::to_string(mine) + "~" + std::to_string(k);
      ids.insert(id);
      d.id = std::move(id);
    }
  }

  /// The fallback graph over model groups: litellm_settings.{fallbacks, context_window_fallbacks,
  /// content_policy_fallbacks} (without "*" rules) plus each group's degradation model
  /// (equivalent / reduced; the group's own degradation, else defaults.degradation). Any cycle,
  /// a group falling back to itself included, is an error at the edge that closes it. A group
  /// inheriting a defaults degradation to itself is no edge: it is the degradation target.
  void check_fallback_cycles(const Config& cfg) {
    struct Edge {
      std::string to;
      Site site;
    };
    const std::vector<std::string> groups = cfg.model_groups();
    const std::set<std::string> known(groups.begin(), groups.end());
    std::map<std::string, std::vector<Edge>> graph;
    const LitellmSettings& ls = cfg.litellm_settings;
    for (std::string_view list : kFallbackLists) {
      const std::string key(list);
      const std::vector<FallbackRule>& rules = key == "fallbacks"                  ? ls.fallbacks
                                               : key == "context_window_fallbacks" ? ls.context_window_fallbacks
                                                                                   : ls.content_policy_fallbacks;
      const auto& sites = fallback_sites_[key];
      for (std::size_t r = 0; r < rules.size(); ++r) {
        const FallbackRule& rule = rules[r];
        if (rule.from == "*" || !known.contains(rule.from)) continue;
        for (std::size_t t = 0; t < rule.to.size(); ++t) {
          if (!known.contains(rule.to[t])) continue;
          Site site = r < sites.size() && t < sites[r].size() ? sites[r][t]
                                                              : Site{"litellm_settings." + key, 0};
          graph[rule.from].push_back(Edge{rule.to[t], std::move(site)});
        }
      }
    }
    const FallbackPolicyConfig& fp = cfg.fallback_policy;
    auto degradation_edge = [&](const std::string& group, const GroupPolicyConfig& layer, bool inherited) {
      const DegradationConfig& d = *layer.degradation;
      if (d.mode != DegradationMode::equivalent && d.mode != DegradationMode::reduced) return;
      if (!known.contains(d.model) || (inherited && d.model == group)) return;
      auto it = degradation_model_sites_.find(layer.path);
      Site site = it != degradation_model_sites_.end() ? it->second : Site{join(layer.path, "degradation.model"), layer.line};
      graph[group].push_back(Edge{d.model, std::move(site)});
    };
    for (const std::string& g : groups) {
      const GroupPolicyConfig* own = nullptr;
      for (const GroupPolicyConfig& layer : fp.model_groups)
        if (layer.group == g && layer.degradation) own = &layer;
      if (own) degradation_edge(g, *own, false);
      else if (fp.defaults.degradation) degradation_edge(g, fp.defaults, true);
    }

    // Depth-first search; every edge to a group still on the stack closes a cycle.
    enum class Mark { unseen, on_stack, done };
    std::map<std::string, Mark> marks;
    std::vector<std::string> stack;
    std::set<std::vector<std::string>> reported;
    auto visit = [&](auto&& self, const std::string& node) -> void {
      marks[node] = Mark::on_stack;
      stack.push_back(node);
      for (const Edge& e : graph[node]) {
        const Mark m = marks[e.to];
        if (m == Mark::unseen) {
          self(self, e.to);
        } else if (m == Mark::on_stack) {
          const auto from = std::find(stack.begin(), stack.end(), e.to);
          std::vector<std::string> cycle(from, stack.end());
          // One report per cycle, whichever of its groups it is entered from.
          std::vector<std::string> canonical = cycle;
          std::rotate(canonical.begin(), std::min_element(canonical.begin(), canonical.end()), canonical.end());
          if (!reported.insert(canonical).second) continue;
          std::string text;
          for (const std::string& g : cycle) text += g + " -> ";
          text += e.to;
          // LiteLLM loads such configs (its own examples have mutual fallbacks), and a request
          // walks only its own group's fallbacks, once: a warning, not a refusal.
          warn(e.site.path, e.site.line, "circular fallback chain: " + text);
        }
      }
      stack.pop_back();
      marks[node] = Mark::done;
    };
    for (const std::string& g : groups)
      if (marks[g] == Mark::unseen) visit(visit, g);
  }

  void check_group_refs(const Config& cfg) {
    const std::vector<std::string> groups = cfg.model_groups();
    const std::set<std::string> known(groups.begin(), groups.end());
    std::vector<std::string> patterns;
    for (const auto& g : groups)
      if (is_wildcard(g)) patterns.push_back(g);
    // A name a wildcard group serves is a group too (routing::ModelGroups::find).
    const auto served_by_wildcard = [&](const std::string& name) {
      return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return wildcard_capture(p, name).has_value(); });
    };
    for (const GroupRef& r : refs_) {
      if (r.star_allowed && r.group == "*") continue;
      if (!known.contains(r.group) && !broken_groups_.contains(r.group) && !served_by_wildcard(r.group))
        error(r.path, r.line, "model group \"" + r.group + "\" is not in model_list");
    }
  }

 private:
  EnvLookup env_;
  std::map<std::string, std::string> overlay_;
  std::vector<GroupRef> refs_;
  bool otel_callback_ = false;     ///< litellm_settings.callbacks names "otel"
  std::vector<std::string> alerting_channels_;  ///< general_settings.alerting
  int alerting_line_ = 0;
  bool otel_enabled_set_ = false;  ///< tollgate_settings.otel.enabled was written
  std::set<std::string> broken_groups_;
  struct RouterFallbacks {
    std::string key;
    std::vector<FallbackRule> rules;
    std::vector<std::vector<Site>> sites;
  };
  std::vector<RouterFallbacks> router_fallbacks_;
  /// Per fallback list (kFallbackLists), per rule, per target: where it was written.
  std::map<std::string, std::vector<std::vector<Site>>> fallback_sites_;
  /// Per policy layer (GroupPolicyConfig::path): where its degradation.model was written.
  std::map<std::string, Site> degradation_model_sites_;
  std::vector<std::string> router_default_fallbacks_;
  bool has_router_default_fallbacks_ = false;
  RedisEndpoint redis_url_;   // router_settings.redis_url, parsed
  int redis_port_ = 6379;     // router_settings.redis_port
  std::string redis_password_;
  std::vector<int> id_lines_;
  std::vector<std::string> paths_;
  bool lenient_env_ = false;  // inside a deployment's litellm_params: an unset variable is a warning
  struct UnsetEnv {
    std::string name, path;
    int line = 0;
  };
  std::vector<UnsetEnv> unset_env_;  // the variables this deployment references that are not set
};

/// Whether 0-based line `line` of `text` holds a tab character.
bool line_has_tab(std::string_view text, int line) {
  std::size_t start = 0;
  for (int i = 0; i < line && start != std::string_view::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || start > text.size()) return false;
  const auto end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start).find('\t') !=
         std::string_view::npos;
}

LoadResult load_impl(std::string_view yaml, std::string source_name, const LoadOptions& options) {
  LoadResult result;
  // A UTF-8 byte-order mark: skipped here, so that yaml-cpp's marks are offsets into `yaml`.
  if (yaml.starts_with("\xEF\xBB\xBF")) yaml.remove_prefix(3);
  EnvLookup env = options.getenv ? options.getenv : process_environment();
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    // The line is the Problem's own; the column and, for the commonest cause, a hint go in the text.
    std::string text = "invalid YAML";
    if (e.mark.line >= 0) {
      text += " (column " + std::to_string(e.mark.column + 1) + ")";
      if (line_has_tab(yaml, e.mark.line)) text += " (the line holds a tab: YAML indents with spaces only)";
    }
    result.errors.push_back(Problem{"", e.mark.line >= 0 ? e.mark.line + 1 : 0, text + ": " + e.msg});
    return result;
  }
  if (auto open = unterminated_quote(root, yaml)) {
    result.errors.push_back(Problem{"", open->line,
                                    "invalid YAML (column " + std::to_string(open->column) +
                                        "): a quoted string is never closed"});
    return result;
  }
  auto cfg = std::make_shared<Config>();
  cfg->source_path = std::move(source_name);
  Loader loader(std::move(env));
  try {
    loader.load(root, *cfg);
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on malformed access we did not anticipate; report, never crash.
    loader.error("", e.mark.line >= 0 ? e.mark.line + 1 : 0, std::string("invalid config: ") + e.msg);
  }
  result.errors = std::move(loader.errors);
  result.warnings = std::move(loader.warnings);
  if (result.errors.empty()) {
    if (options.export_environment_variables) export_environment_variables(*cfg);
    result.config = std::move(cfg);
  }
  return result;
}

}  // namespace

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

void export_environment_variables(const Config& config) {
  for (const auto& [name, value] : config.environment_variables)
    ::setenv(name.c_str(), value.c_str(), 1);
}

LoadResult load_config_string(std::string_view yaml, std::string source_name) {
  return load_impl(yaml, std::move(source_name), LoadOptions{});
}
LoadResult load_config_string(std::string_view yaml, std::string source_name,
                              const LoadOptions& options) {
  return load_impl(yaml, std::move(source_name), options);
}
LoadResult load_config_string(std::string_view yaml, std::string source_name, EnvLookup getenv) {
  return load_impl(yaml, std::move(source_name), LoadOptions{std::move(getenv), false});
}

LoadResult load_config_file(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult r;
    r.errors.push_back(Problem{"", 0, "cannot read config file " + path});
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_impl(text.str(), path, options);
}
LoadResult load_config_file(const std::string& path) { return load_config_file(path, LoadOptions{}); }
LoadResult load_config_file(const std::string& path, EnvLookup getenv) {
  return load_config_file(path, LoadOptions{std::move(getenv), false});
}

std::optional<std::string> normalize_decimal(std::string_view text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<std::string> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  const std::string original(text);
  std::string_view t = trim(text);
  if (!t.empty() && t.front() == '-')
    return fail("must not be negative, got \"" + original + "\"");
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  const auto e = t.find_first_of("eE");
  const std::string_view mant = t.substr(0, e);
  const auto dot = mant.find('.');
  const std::string_view int_part = mant.substr(0, dot);
  const std::string_view frac_part = dot == std::string_view::npos ? std::string_view{} : mant.substr(dot + 1);
  const bool mant_ok = (int_part.empty() || all_digits(int_part)) &&
                       (frac_part.empty() || all_digits(frac_part)) &&
                       (!int_part.empty() || !frac_part.empty());
  if (!mant_ok) return fail("expected a non-negative decimal number, got \"" + original + "\"");

  if (e == std::string_view::npos) {
    // Keep the text as written, only made canonical enough for a strict parser.
    std::string out = int_part.empty() ? "0" : std::string(int_part);
    if (!frac_part.empty()) out += "." + std::string(frac_part);
    return out;
  }
  std::string_view exp_text = t.substr(e + 1);
  bool neg_exp = false;
  if (!exp_text.empty() && (exp_text.front() == '+' || exp_text.front() == '-')) {
    neg_exp = exp_text.front() == '-';
    exp_text.remove_prefix(1);
  }
  if (!all_digits(exp_text)) return fail("expected a non-negative decimal number, got \"" + original + "\"");
  int exp = 0;
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);
  if (exp_text.size() > 3 || exp > 100) return fail("exponent out of range in \"" + original + "\"");
  if (neg_exp) exp = -exp;

  const std::string digits = std::string(int_part) + std::string(frac_part);
  const long point = static_cast<long>(int_part.size()) + exp;  // position of '.' in digits
  std::string whole, frac;
  if (point <= 0) {
    whole = "0";
    frac = std::string(static_cast<std::size_t>(-point), '0') + digits;
  } else if (point >= static_cast<long>(digits.size())) {
    whole = digits + std::string(static_cast<std::size_t>(point) - digits.size(), '0');
  } else {
    whole = digits.substr(0, static_cast<std::size_t>(point));
    frac = digits.substr(static_cast<std::size_t>(point));
  }
  const auto nz = whole.find_first_not_of('0');
  whole = nz == std::string::npos ? "0" : whole.substr(nz);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return frac.empty() ? whole : whole + "." + frac;
}

}  // namespace tollgate::config
