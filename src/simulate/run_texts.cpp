#include "simulate/run_texts.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace tollgate::simulate {

namespace {

/// The variables `text` references as os.environ/NAME.
std::set<std::string, std::less<>> referenced_env(const std::string& text) {
  std::set<std::string, std::less<>> out;
  constexpr std::string_view kPrefix = "os.environ/";
  for (auto at = text.find(kPrefix); at != std::string::npos; at = text.find(kPrefix, at + 1)) {
    auto begin = at + kPrefix.size();
    while (begin < text.size() && text[begin] == ' ') ++begin;
    auto end = begin;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    if (end > begin) out.emplace(text.substr(begin, end - begin));
  }
  return out;
}

/// The number of line of `key` at the top of `section:` in YAML text, for messages; 0 unknown.
int line_of_key(const config::Config& cfg) { return cfg.tollgate_settings.price_file_line; }

void cap(int& v, int most) { v = std::min(v, most); }
void cap(std::optional<int>& v, int most) {
  if (v) *v = std::min(*v, most);
}

/// A copy of `cfg` whose retry and fallback budgets are at most `most`.
std::shared_ptr<const config::Config> capped(const config::Config& cfg, int most) {
  auto c = std::make_shared<config::Config>(cfg);
  cap(c->router_settings.num_retries, most);
  cap(c->router_settings.max_fallbacks, most);
  cap(c->litellm_settings.num_retries, most);
  cap(c->effective_num_retries, most);
  for (auto& d : c->model_list) cap(d.max_retries, most);
  auto cap_layer = [&](config::GroupPolicyConfig& g) {
    cap(g.budgets.max_retries, most);
    cap(g.budgets.max_fallbacks, most);
  };
  cap_layer(c->fallback_policy.defaults);
  for (auto& g : c->fallback_policy.model_groups) cap_layer(g);
  return c;
}

}  // namespace

std::string sandbox_env_value(std::string_view name) { return "sim-env-" + std::string(name); }

RunTextsOutcome run_texts(const std::string& scenario_text, const RunTextsOptions& opt) {
  RunTextsOutcome out;
  std::shared_ptr<const config::Config> cfg = opt.config;
  if (opt.config_text) {
    config::LoadOptions lo;
    lo.export_environment_variables = false;
    if (opt.sandboxed) {
      // Only the names the text itself references answer, each with a placeholder: the server's
      // environment is never read, and provider defaults (OPENAI_API_KEY...) stay unset.
      auto names = referenced_env(*opt.config_text);
      lo.getenv = [names = std::move(names)](std::string_view name) -> std::optional<std::string> {
        if (names.contains(name)) return sandbox_env_value(name);
        return std::nullopt;
      };
      lo.read_files = false;
    } else {
      lo.getenv = opt.getenv ? opt.getenv : config::process_environment();
    }
    auto loaded = config::load_config_string(*opt.config_text, opt.config_name, lo);
    out.config_warnings = loaded.warnings;
    if (!loaded.ok()) {
      out.config_errors = loaded.errors;
      return out;
    }
    cfg = loaded.config;
    if (opt.sandboxed && !cfg->tollgate_settings.price_file.empty() &&
        cfg->tollgate_settings.price_file != opt.allowed_price_file) {
      out.config_errors.push_back(config::Problem{
          "tollgate_settings.price_file", line_of_key(*cfg),
          "files are not read from a pasted config: remove price_file (the live config's price table applies when it "
          "names the same file)"});
      return out;
    }
  }
  if (!cfg) {
    out.config_errors.push_back(config::Problem{"", 0, "no config to simulate against"});
    return out;
  }
  auto scenario = parse_scenario(scenario_text, opt.scenario_name);
  if (!scenario) {
    out.scenario_errors = scenario.error();
    return out;
  }
  out.scenario_errors = check_against(*scenario, *cfg);
  if (opt.max_requests > 0) {
    std::int64_t total = 0;
    for (const auto& r : scenario->requests) total += r.repeat;
    if (total > opt.max_requests)
      out.scenario_errors.push_back(ScenarioProblem{"requests", 0,
                                                    "the scenario simulates " + std::to_string(total) +
                                                        " requests (repeat included); at most " +
                                                        std::to_string(opt.max_requests) + " here"});
  }
  if (!out.scenario_errors.empty()) return out;
  if (opt.max_retries_and_fallbacks > 0) cfg = capped(*cfg, opt.max_retries_and_fallbacks);
  out.result = run_simulation(*cfg, *scenario);
  return out;
}

}  // namespace tollgate::simulate
