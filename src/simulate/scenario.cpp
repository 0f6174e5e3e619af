#include "simulate/scenario.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include <boost/json.hpp>

#include "budget/money.hpp"
#include "policy/request_budget.hpp"

namespace tollgate::simulate {

namespace json = boost::json;

const std::vector<std::string>& named_errors() {
  static const std::vector<std::string> names{
      "rate_limit_exceeded", "insufficient_quota", "context_length_exceeded", "content_filter",
      "invalid_api_key",     "permission",         "not_found",               "invalid_request",
      "request_too_large",   "server_error",       "bad_gateway_html",        "overloaded",
      "overloaded_529",      "timeout"};
  return names;
}

const std::vector<std::string>& fault_names() {
  static const std::vector<std::string> names{"reset", "connect_refused", "timeout", "garbage"};
  return names;
}

std::string ScenarioProblem::to_string() const {
  std::string out = path;
  if (line > 0) out += (out.empty() ? "line " : " (line ") + std::to_string(line) + (out.empty() ? "" : ")");
  if (!out.empty()) out += ": ";
  return out + message;
}

namespace {

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

int line_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

/// Collects problems while walking the YAML tree.
class Parser {
 public:
  std::vector<ScenarioProblem> problems;

  void problem(const std::string& path, const YAML::Node& n, std::string message) {
    problems.push_back(ScenarioProblem{path, n ? line_of(n) : 0, std::move(message)});
  }

  /// Reports keys of map `n` that are not in `allowed`.
  void only_keys(const YAML::Node& n, const std::string& path, const std::vector<std::string>& allowed) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.Scalar();
      if (!contains(allowed, k))
        problem(join(path, k), it->first, "unknown key '" + k + "'; expected one of: " + joined(allowed));
    }
  }

  static std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

  bool is_map(const YAML::Node& n, const std::string& path) {
    if (n.IsMap()) return true;
    problem(path, n, "expected a map");
    return false;
  }

  std::optional<std::string> string_of(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) {
      problem(path, n, "expected a string");
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<std::int64_t> int_of(const YAML::Node& n, const std::string& path, std::int64_t min, std::int64_t max) {
    if (!n.IsScalar()) {
      problem(path, n, "expected an integer");
      return std::nullopt;
    }
    const std::string& s = n.Scalar();
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) {
      problem(path, n, "expected an integer, got '" + s + "'");
      return std::nullopt;
    }
    if (v < min || v > max) {
      problem(path, n, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + s);
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> bool_of(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
      std::string s = n.Scalar();
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (s == "true" || s == "yes" || s == "on") return true;
      if (s == "false" || s == "no" || s == "off") return false;
    }
    problem(path, n, "expected true or false");
    return std::nullopt;
  }

  std::optional<std::int64_t> dollars_of(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) {
      problem(path, n, "expected decimal dollars");
      return std::nullopt;
    }
    auto v = budget::parse_dollars(n.Scalar());
    if (!v) {
      problem(path, n, "expected non-negative decimal dollars: " + v.error());
      return std::nullopt;
    }
    return *v;
  }

  /// YAML → JSON (scalars typed as YAML 1.2 core would: null, bool, integer, float, else string).
  json::value to_json(const YAML::Node& n) {
    if (n.IsMap()) {
      json::object o;
      for (auto it = n.begin(); it != n.end(); ++it) o[it->first.Scalar()] = to_json(it->second);
      return o;
    }
    if (n.IsSequence()) {
      json::array a;
      for (const auto& e : n) a.push_back(to_json(e));
      return a;
    }
    if (!n.IsScalar()) return nullptr;
    const std::string& s = n.Scalar();
    if (n.Tag() == "!") return json::value(s);  // quoted: always a string
    if (s == "null" || s == "~") return nullptr;
    if (s == "true") return true;
    if (s == "false") return false;
    std::int64_t i = 0;
    if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i); ec == std::errc{} && p == s.data() + s.size() && !s.empty())
      return i;
    return json::value(s);
  }

  std::optional<Outcome> outcome(const YAML::Node& n, const std::string& path) {
    Outcome o;
    o.where = path;
    if (n.IsScalar()) {
      // Shorthand: a named error, a fault, "ok", or a bare status.
      const std::string& s = n.Scalar();
      if (s == "ok" || s == "success") return o;
      if (contains(named_errors(), s)) {
        o.error = s;
        return o;
      }
      if (contains(fault_names(), s) && s != "timeout") {
        o.fault = s;
        return o;
      }
      if (auto st = int_of(n, path, 100, 599)) {
        o.status = static_cast<int>(*st);
        return o;
      }
      problems.back().message = "expected an outcome: a map, 'ok', a status, a named error (" + joined(named_errors()) +
                                ") or a fault (reset, connect_refused, garbage; for a hang use {fault: timeout})";
      return std::nullopt;
    }
    if (!is_map(n, path)) return std::nullopt;
    only_keys(n, path,
              {"status", "error", "fault", "retry_after", "retry_after_ms", "latency_ms", "prompt_tokens",
               "completion_tokens", "message", "headers", "times"});
    bool ok = true;
    if (auto v = n["status"]) {
      if (auto st = int_of(v, path + ".status", 100, 599)) o.status = static_cast<int>(*st);
      else ok = false;
    }
    if (auto v = n["error"]) {
      auto s = string_of(v, path + ".error");
      if (s && !contains(named_errors(), *s)) {
        problem(path + ".error", v, "unknown error '" + *s + "'; one of: " + joined(named_errors()));
        ok = false;
      } else if (s) {
        o.error = *s;
      } else {
        ok = false;
      }
    }
    if (auto v = n["fault"]) {
      auto s = string_of(v, path + ".fault");
      if (s && !contains(fault_names(), *s)) {
        problem(path + ".fault", v, "unknown fault '" + *s + "'; one of: " + joined(fault_names()));
        ok = false;
      } else if (s) {
        o.fault = *s;
      } else {
        ok = false;
      }
    }
    if (!o.fault.empty() && (!o.error.empty() || o.status)) {
      problem(path, n, "a fault has no HTTP response: do not combine 'fault' with 'error' or 'status'");
      ok = false;
    }
    if (auto v = n["retry_after"]) {
      if (auto s = string_of(v, path + ".retry_after")) o.retry_after = *s;
      else ok = false;
    }
    if (auto v = n["retry_after_ms"]) {
      if (auto x = int_of(v, path + ".retry_after_ms", 0, 86'400'000)) o.retry_after_ms = *x;
      else ok = false;
    }
    if (auto v = n["latency_ms"]) {
      if (auto x = int_of(v, path + ".latency_ms", 0, 86'400'000)) o.latency_ms = *x;
      else ok = false;
    }
    if (auto v = n["prompt_tokens"]) {
      if (auto x = int_of(v, path + ".prompt_tokens", 0, 100'000'000)) o.prompt_tokens = *x;
      else ok = false;
    }
    if (auto v = n["completion_tokens"]) {
      if (auto x = int_of(v, path + ".completion_tokens", 0, 100'000'000)) o.completion_tokens = *x;
      else ok = false;
    }
    if (auto v = n["message"]) {
      if (auto s = string_of(v, path + ".message")) o.message = *s;
      else ok = false;
    }
    if (auto v = n["headers"]) {
      if (is_map(v, path + ".headers")) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          auto s = string_of(it->second, path + ".headers." + it->first.Scalar());
          if (s) o.headers.emplace_back(it->first.Scalar(), *s);
          else ok = false;
        }
      } else {
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return o;
  }

  /// A list of outcomes; `times: N` entries are expanded.
  std::vector<Outcome> outcome_list(const YAML::Node& n, const std::string& path) {
    std::vector<Outcome> out;
    if (!n.IsSequence()) {
      problem(path, n, "expected a list of outcomes");
      return out;
    }
    std::size_t i = 0;
    for (const auto& e : n) {
      const std::string p = path + "[" + std::to_string(i++) + "]";
      auto o = outcome(e, p);
      if (!o) continue;
      std::int64_t times = 1;
      if (e.IsMap())
        if (auto t = e["times"]) times = int_of(t, p + ".times", 1, 100'000).value_or(1);
      for (std::int64_t k = 0; k < times; ++k) out.push_back(*o);
    }
    return out;
  }

  Scripts scripts(const YAML::Node& n, const std::string& path) {
    Scripts out;
    if (!is_map(n, path)) return out;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.Scalar();
      out.emplace_back(k, outcome_list(it->second, join(path, k)));
    }
    return out;
  }

  std::optional<KeySpec> key(const YAML::Node& n, const std::string& path, bool inline_key) {
    if (!is_map(n, path)) return std::nullopt;
    std::vector<std::string> allowed{"max_budget", "soft_budget", "spent", "models", "rpm_limit", "tpm_limit",
                                     "max_parallel_requests", "request_budget"};
    if (inline_key) allowed.insert(allowed.begin(), "alias");
    only_keys(n, path, allowed);
    KeySpec k;
    k.where = path;
    if (auto v = n["alias"]; inline_key && v)
      if (auto s = string_of(v, path + ".alias")) k.alias = *s;
    if (auto v = n["max_budget"]) k.max_budget_nanos = dollars_of(v, path + ".max_budget");
    if (auto v = n["soft_budget"]) k.soft_budget_nanos = dollars_of(v, path + ".soft_budget");
    if (auto v = n["spent"]) k.spent_nanos = dollars_of(v, path + ".spent").value_or(0);
    if (auto v = n["models"]) {
      if (!v.IsSequence()) problem(path + ".models", v, "expected a list of model groups");
      else
        for (const auto& m : v)
          if (auto s = string_of(m, path + ".models")) k.models.push_back(*s);
    }
    if (auto v = n["rpm_limit"]) k.rpm_limit = int_of(v, path + ".rpm_limit", 0, 1'000'000'000);
    if (auto v = n["tpm_limit"]) k.tpm_limit = int_of(v, path + ".tpm_limit", 0, 1'000'000'000'000);
    if (auto v = n["max_parallel_requests"]) k.max_parallel_requests = int_of(v, path + ".max_parallel_requests", 0, 1'000'000);
    if (auto v = n["request_budget"]) {
      const std::string rp = path + ".request_budget";
      if (is_map(v, rp)) {
        only_keys(v, rp, {"max_retries", "max_fallbacks", "deadline_ms", "max_request_cost", "first_token_timeout_ms",
                          "stream_idle_timeout_ms", "stream_holdback_tokens"});
        for (auto it = v.begin(); it != v.end(); ++it) {
          const std::string f = it->first.Scalar();
          auto s = string_of(it->second, join(rp, f));
          if (!s) continue;
          policy::BudgetOverride probe;
          if (auto bad = policy::parse_override_field(f, *s, probe)) {
            if (!bad->ends_with("unknown request budget field")) problem(join(rp, f), it->second, *bad);
            continue;
          }
          k.request_budget.emplace_back(f, *s);
        }
      }
    }
    return k;
  }

  std::optional<RequestSpec> request(const YAML::Node& n, const std::string& path, Scenario& sc,
                                     std::set<std::string>& aliases) {
    if (!is_map(n, path)) return std::nullopt;
    only_keys(n, path,
              {"name", "model", "max_tokens", "messages", "stream", "headers", "key", "repeat", "advance_ms", "upstream"});
    RequestSpec r;
    r.where = path;
    r.line = line_of(n);
    if (auto v = n["name"])
      if (auto s = string_of(v, path + ".name")) r.name = *s;
    if (auto v = n["model"]) {
      if (auto s = string_of(v, path + ".model")) r.model = *s;
    } else {
      problem(path + ".model", n, "required: the model group to call");
    }
    if (auto v = n["max_tokens"]) r.max_tokens = int_of(v, path + ".max_tokens", 1, 10'000'000);
    if (auto v = n["messages"]) {
      const std::string mp = path + ".messages";
      if (!v.IsSequence() || v.size() == 0) {
        problem(mp, v, "expected a non-empty list of messages ({role, content})");
      } else {
        std::size_t i = 0;
        for (const auto& m : v) {
          const std::string ep = mp + "[" + std::to_string(i++) + "]";
          if (!is_map(m, ep)) continue;
          if (!m["role"] || !m["role"].IsScalar()) problem(ep + ".role", m, "required: a string");
          if (!m["content"]) problem(ep + ".content", m, "required");
          r.messages.push_back(to_json(m));
        }
      }
    } else {
      json::object m;
      m["role"] = "user";
      m["content"] = "Say something short.";
      r.messages.push_back(std::move(m));
    }
    if (auto v = n["stream"]) r.stream = bool_of(v, path + ".stream").value_or(false);
    if (auto v = n["headers"]) {
      const std::string hp = path + ".headers";
      if (is_map(v, hp)) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          std::string name = it->first.Scalar();
          std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
          auto s = string_of(it->second, join(hp, name));
          if (!s) continue;
          const bool known = std::ranges::any_of(policy::kOverrideHeaders, [&](const char* h) { return name == h; });
          if (!known) {
            std::string names;
            for (const char* h : policy::kOverrideHeaders) names += (names.empty() ? "" : ", ") + std::string(h);
            problem(join(hp, name), it->first, "unknown header; the simulator reads the request budget headers " + names);
            continue;
          }
          policy::BudgetOverride probe;
          if (auto bad = policy::parse_override_field(name, *s, probe)) {
            problem(join(hp, name), it->second, *bad);
            continue;
          }
          r.headers.emplace_back(name, *s);
        }
      }
    }
    if (auto v = n["key"]) {
      const std::string kp = path + ".key";
      if (v.IsScalar()) {
        r.key = v.Scalar();
        if (!aliases.contains(*r.key)) problem(kp, v, "unknown key '" + *r.key + "': define it under `keys:`");
      } else if (auto k = key(v, kp, true)) {
        if (k->alias.empty()) k->alias = "key-" + path;
        if (aliases.contains(k->alias)) {
          problem(kp + ".alias", v, "key alias '" + k->alias + "' is already defined; refer to it by name (key: " + k->alias + ")");
        } else {
          aliases.insert(k->alias);
          r.key = k->alias;
          sc.keys.push_back(std::move(*k));
        }
      }
    }
    if (auto v = n["repeat"]) r.repeat = static_cast<int>(int_of(v, path + ".repeat", 1, 100'000).value_or(1));
    if (auto v = n["advance_ms"]) r.advance_ms = int_of(v, path + ".advance_ms", 0, 365LL * 86'400'000).value_or(0);
    if (auto v = n["upstream"]) r.upstream = scripts(v, path + ".upstream");
    return r;
  }

  void scenario(const YAML::Node& root, Scenario& sc) {
    if (!root.IsMap()) {
      problem("", root, "a scenario is a map with a `requests:` list (see docs/simulate.md)");
      return;
    }
    only_keys(root, "", {"name", "description", "seed", "latency_ms", "default", "keys", "key", "upstream", "requests"});
    if (auto v = root["name"])
      if (auto s = string_of(v, "name")) sc.name = *s;
    if (auto v = root["description"])
      if (auto s = string_of(v, "description")) sc.description = *s;
    if (auto v = root["seed"]) sc.seed = static_cast<std::uint64_t>(int_of(v, "seed", 0, INT64_MAX).value_or(1));
    if (auto v = root["latency_ms"]) sc.latency_ms = int_of(v, "latency_ms", 0, 86'400'000).value_or(0);
    if (auto v = root["default"]) {
      if (v.IsMap() && v["times"]) problem("default.times", v["times"], "not allowed here: the default applies to every unscripted attempt");
      sc.default_outcome = outcome(v, "default");
    }
    std::set<std::string> aliases;
    if (auto v = root["keys"]) {
      if (is_map(v, "keys")) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          const std::string alias = it->first.Scalar();
          if (auto k = key(it->second, "keys." + alias, false)) {
            k->alias = alias;
            aliases.insert(alias);
            sc.keys.push_back(std::move(*k));
          }
        }
      }
    }
    if (auto v = root["key"]) {
      if (auto a = string_of(v, "key")) {
        if (!aliases.contains(*a)) problem("key", v, "unknown key '" + *a + "': define it under `keys:`");
        else sc.default_key = *a;
      }
    }
    if (auto v = root["upstream"]) sc.upstream = scripts(v, "upstream");
    auto reqs = root["requests"];
    if (!reqs) {
      problem("requests", root, "required: a non-empty list of requests");
      return;
    }
    if (!reqs.IsSequence() || reqs.size() == 0) {
      problem("requests", reqs, "expected a non-empty list of requests");
      return;
    }
    std::size_t i = 0;
    for (const auto& r : reqs) {
      auto spec = request(r, "requests[" + std::to_string(i++) + "]", sc, aliases);
      if (!spec) continue;
      if (!spec->key) spec->key = sc.default_key;
      sc.requests.push_back(std::move(*spec));
    }
  }
};

}  // namespace

ScenarioResult parse_scenario(std::string_view yaml, std::string source_name) {
  Parser p;
  Scenario sc;
  sc.source_path = std::move(source_name);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    p.problems.push_back(ScenarioProblem{"", e.mark.is_null() ? 0 : e.mark.line + 1, "invalid YAML: " + e.msg});
    return std::unexpected(std::move(p.problems));
  }
  try {
    p.scenario(root, sc);
  } catch (const YAML::Exception& e) {
    p.problems.push_back(ScenarioProblem{"", e.mark.is_null() ? 0 : e.mark.line + 1, "invalid scenario: " + e.msg});
  }
  if (!p.problems.empty()) return std::unexpected(std::move(p.problems));
  return sc;
}

ScenarioResult load_scenario_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(std::vector<ScenarioProblem>{{"", 0, "cannot read the scenario file " + path}});
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), path);
}

std::vector<ScenarioProblem> check_against(const Scenario& sc, const config::Config& cfg) {
  std::vector<ScenarioProblem> out;
  const auto groups = cfg.model_groups();
  auto is_group = [&](const std::string& g) { return std::find(groups.begin(), groups.end(), g) != groups.end(); };
  auto is_deployment = [&](const std::string& id) {
    return std::any_of(cfg.model_list.begin(), cfg.model_list.end(), [&](const config::Deployment& d) { return d.id == id; });
  };
  auto check_scripts = [&](const Scripts& s, const std::string& path) {
    for (const auto& [k, list] : s) {
      (void)list;
      if (!is_deployment(k) && !is_group(k)) {
        std::string ids;
        for (const auto& d : cfg.model_list) ids += (ids.empty() ? "" : ", ") + d.id;
        out.push_back({path + "." + k, 0,
                       "'" + k + "' is neither a deployment id nor a model group of the config (deployments: " + ids + ")"});
      }
    }
  };
  check_scripts(sc.upstream, "upstream");
  for (const auto& r : sc.requests) {
    if (!r.model.empty() && !is_group(r.model))
      out.push_back({r.where + ".model", r.line, "'" + r.model + "' is not a model group of the config (groups: " + [&] {
                       std::string g;
                       for (const auto& x : groups) g += (g.empty() ? "" : ", ") + x;
                       return g;
                     }() + ")"});
    check_scripts(r.upstream, r.where + ".upstream");
  }
  for (const auto& k : sc.keys)
    for (const auto& m : k.models)
      if (!is_group(m)) out.push_back({k.where + ".models", 0, "'" + m + "' is not a model group of the config"});
  return out;
}

}  // namespace tollgate::simulate
