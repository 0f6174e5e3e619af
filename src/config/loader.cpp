#include "config/loader.hpp"
#include "config/load_context.hpp"
#include "config/section.hpp"
#include "config/sections.hpp"
#include "config/yaml11.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace tollgate::config {

namespace {

using detail::Field;
using detail::LoadContext;
using detail::line_of;
using detail::type_name;
using S = SettingStatus;
using detail::trim;

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

#define TG_READ +[]([[maybe_unused]] LoadContext & c, [[maybe_unused]] Config & cfg, [[maybe_unused]] const YAML::Node& v, [[maybe_unused]] const std::string& p, [[maybe_unused]] int l)

constexpr std::string_view kLitellmOnly = "a LiteLLM feature tollgate does not have, ignored";

/// The top level of the file: its sections, and LiteLLM's top-level keys Tollgate does not have.
const std::array<Field<Config>, 20> kTopLevel{{
    {{"model_list", "list of deployments", "[]", "The deployments, grouped by model_name", S::supported,
      "An empty list loads with a warning: no model can be served."},
     TG_READ {
       c.has_model_list = true;
       if (v.IsNull()) return;
       if (!v.IsSequence()) {
         c.error(p, line_of(v, l), std::string("expected a list of deployments, got ") + type_name(v));
         return;
       }
       for (std::size_t i = 0; i < v.size(); ++i) detail::load_deployment(c, v[i], detail::index(p, i), l, cfg);
     }},
    {{"litellm_settings", "map", "—", "LiteLLM SDK settings", S::supported, "Below."},
     TG_READ { detail::load_litellm_settings(c, v, p, l, cfg); }},
    {{"router_settings", "map", "—", "Router settings", S::supported, "Below."},
     TG_READ { detail::load_router_settings(c, v, p, l, cfg); }},
    {{"general_settings", "map", "—", "Proxy settings", S::supported, "Below."},
     TG_READ { detail::load_general_settings(c, v, p, l, cfg); }},
    {{"environment_variables", "map: NAME → value", "{}", "Variables set before the proxy starts", S::supported,
      "Take precedence over the process environment for `os.environ/NAME`; values may be `os.environ/OTHER` "
      "(the real environment). Exported with setenv() after a successful load, as LiteLLM does."},
     +[](LoadContext&, Config&, const YAML::Node&, const std::string&, int) {}},  // read first, by load_document: os.environ/ anywhere may refer to it
    {{"tollgate_settings", "map", "—", "", S::supported, "Tollgate's own knobs; below."},
     TG_READ { detail::load_tollgate_settings(c, v, p, l, cfg); }},
    {{"fallback_policy", "map", "—", "", S::supported, "The governed fallback policy; below."},
     TG_READ { detail::load_fallback_policy(c, v, p, l, cfg); }},
    {{"include", "list of files", "—", "Other config files merged in", S::refused,
      "include is not supported by tollgate; inline the included files"}},
    {{"credential_list", "list", "—", "Named provider credentials", S::warned, kLitellmOnly}},
    {{"guardrails", "list", "—", "Content guardrails", S::warned, kLitellmOnly}},
    {{"mcp_servers", "map", "—", "MCP servers", S::warned, kLitellmOnly}},
    {{"callback_settings", "map", "—", "Per-callback settings", S::warned, kLitellmOnly}},
    {{"assistant_settings", "map", "—", "Assistants API", S::warned, kLitellmOnly}},
    {{"files_settings", "list", "—", "Files API", S::warned, kLitellmOnly}},
    {{"finetune_settings", "list", "—", "Fine-tuning API", S::warned, kLitellmOnly}},
    {{"search_tools", "list", "—", "Search tools", S::warned, kLitellmOnly}},
    {{"vector_store_registry", "list", "—", "Vector stores", S::warned, kLitellmOnly}},
    {{"model_group_settings", "map", "—", "Per-group settings", S::warned, kLitellmOnly}},
    {{"pass_through_endpoints", "list", "—", "Raw provider routes", S::warned, kLitellmOnly}},
    {{"prompts", "list", "—", "Prompt management", S::warned, kLitellmOnly}},
}};

#undef TG_READ

void load_environment_variables(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg) {
  c.for_each_entry(v, path, line, [&](const std::string& key, const YAML::Node& value, const std::string& p, int l) {
    if (value.IsNull()) {
      cfg.environment_variables[key] = "";
      return;
    }
    if (!value.IsScalar()) {
      c.error(p, line_of(value, l), std::string("expected a scalar, got ") + type_name(value));
      return;
    }
    // os.environ/ inside environment_variables refers to the real environment.
    const std::string& text = value.Scalar();
    std::optional<std::string> resolved = text;
    if (detail::starts_with(text, detail::kEnvPrefix)) {
      const std::string name(detail::trim(std::string_view(text).substr(detail::kEnvPrefix.size())));
      resolved = c.lookup_real_env(name);
      if (!resolved) {
        c.error(p, line_of(value, l), "environment variable " + name + " is not set (referenced as " + text + ")");
        return;
      }
    }
    cfg.environment_variables[key] = *resolved;
  });
  c.set_overlay(cfg.environment_variables);
}

void load_document(LoadContext& c, const YAML::Node& root, Config& cfg) {
  if (root.IsNull()) {
    c.warn("model_list", 0, "model_list is empty: no model can be served");
    return;
  }
  if (!root.IsMap()) {
    c.error("", line_of(root, 0), std::string("the config must be a map, got ") + type_name(root));
    return;
  }
  // environment_variables first: os.environ/ anywhere may refer to them.
  for (auto it = root.begin(); it != root.end(); ++it) {
    const YAML::Node k = it->first;
    const YAML::Node value = it->second;
    if (k.IsScalar() && k.Scalar() == "environment_variables")
      load_environment_variables(c, value, "environment_variables", line_of(k, 0), cfg);
  }
  detail::load_section<Config>(c, kTopLevel, root, "", 0, cfg, detail::kUnknownKey);

  detail::finish_litellm_sections(c, cfg);
  detail::finish_tollgate_settings(c, cfg);
  if (cfg.model_list.empty() && (c.errors.empty() || !c.has_model_list))
    c.warn("model_list", 0, "model_list is empty: no model can be served");
  detail::assign_ids(c, cfg);
  detail::check_group_refs(c, cfg);
  detail::check_fallback_cycles(c, cfg);
}

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

/// The N of a path "model_list[N]" or "model_list[N].…"; nullopt for any other path.
std::optional<std::size_t> model_list_index(std::string_view path) {
  constexpr std::string_view kPrefix = "model_list[";
  if (!path.starts_with(kPrefix)) return std::nullopt;
  path.remove_prefix(kPrefix.size());
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(path.data(), path.data() + path.size(), n);
  if (ec != std::errc{} || end == path.data() || end == path.data() + path.size() || *end != ']') return std::nullopt;
  return n;
}

/// Appends each extra model (JSON is YAML) to the root's model_list; returns how many entries
/// the file itself has. A model that is not a JSON object is an error under its label.
std::size_t append_extra_models(YAML::Node& root, const std::vector<ExtraModel>& extras, LoadResult& result) {
  if (extras.empty()) return 0;
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) return 0;  // load_document reports it
  YAML::Node list = root["model_list"];
  if (!list || list.IsNull()) {
    list = YAML::Node(YAML::NodeType::Sequence);
    root["model_list"] = list;
  }
  if (!list.IsSequence()) return 0;  // load_document reports it
  const std::size_t file_models = list.size();
  for (const auto& extra : extras) {
    YAML::Node entry;
    try {
      entry = YAML::Load(extra.json);
    } catch (const YAML::Exception& e) {
      result.errors.push_back(Problem{extra.label, 0, "invalid JSON: " + e.msg});
      continue;
    }
    if (!entry.IsMap()) {
      result.errors.push_back(Problem{extra.label, 0, "expected an object with model_name and litellm_params"});
      continue;
    }
    list.push_back(entry);
  }
  return file_models;
}

/// Problems of an extra model: `model_list[N]…` → its label (…), without a line.
void relabel_extra_problems(std::vector<Problem>& problems, std::size_t file_models, const std::vector<ExtraModel>& extras) {
  for (auto& pr : problems) {
    const auto k = model_list_index(pr.path);
    if (!k || *k < file_models || *k - file_models >= extras.size()) continue;
    const std::string& label = extras[*k - file_models].label;
    std::string rest = pr.path.substr(pr.path.find(']') + 1);
    if (label.empty() && rest.starts_with(".")) rest.erase(0, 1);
    pr.path = label + rest;
    pr.line = 0;
  }
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
  const std::size_t file_models = append_extra_models(root, options.extra_models, result);
  if (!result.errors.empty()) return result;
  auto cfg = std::make_shared<Config>();
  cfg->source_path = std::move(source_name);
  detail::LoadContext loader(std::move(env));
  loader.set_read_files(options.read_files);
  try {
    load_document(loader, root, *cfg);
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on malformed access we did not anticipate; report, never crash.
    loader.error("", e.mark.line >= 0 ? e.mark.line + 1 : 0, std::string("invalid config: ") + e.msg);
  }
  if (!options.extra_models.empty()) {
    for (std::size_t i = 0; i < cfg->model_list.size() && i < loader.deployment_paths.size(); ++i)
      if (auto k = model_list_index(loader.deployment_paths[i]); k && *k >= file_models) cfg->model_list[i].db_model = true;
    relabel_extra_problems(loader.errors, file_models, options.extra_models);
    relabel_extra_problems(loader.warnings, file_models, options.extra_models);
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

void detail::append_top_level_settings(std::vector<SettingInfo>& out) { detail::append_infos<Config>(kTopLevel, out); }

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
