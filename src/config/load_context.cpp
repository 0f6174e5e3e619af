#include "config/load_context.hpp"

#include "config/yaml11.hpp"

#include <boost/url/parse.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <set>

namespace tollgate::config::detail {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
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

std::expected<void, std::string> check_http_url(const std::string& url) {
  auto u = boost::urls::parse_uri(url);
  if (!u) return std::unexpected("'" + url + "' is not a URL");
  if (u->scheme() != "http" && u->scheme() != "https")
    return std::unexpected("'" + url + "' must be an http:// or https:// URL");
  if (u->host().empty()) return std::unexpected("'" + url + "' has no host");
  return {};
}

std::vector<std::pair<std::string, std::string>> otel_pairs(std::string_view text) {
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

bool valid_budget_duration(std::string_view d) {
  std::size_t n = 0;
  while (n < d.size() && d[n] >= '0' && d[n] <= '9') ++n;
  if (n == 0) return false;
  const std::string_view unit = d.substr(n);
  return unit == "s" || unit == "m" || unit == "h" || unit == "d" || unit == "w" || unit == "mo";
}

void LoadContext::error(std::string path, int line, std::string message) {
  errors.push_back(Problem{std::move(path), line, std::move(message)});
}
void LoadContext::warn(std::string path, int line, std::string message) {
  warnings.push_back(Problem{std::move(path), line, std::move(message)});
}

std::optional<std::string> LoadContext::lookup_env(std::string_view name) const {
  if (auto it = overlay_.find(std::string(name)); it != overlay_.end()) return it->second;
  return env_ ? env_(name) : std::nullopt;
}

std::optional<std::string> LoadContext::lookup_real_env(std::string_view name) const {
  return env_ ? env_(name) : std::nullopt;
}

bool LoadContext::entries_of(const YAML::Node& map, const std::string& path, int line, std::vector<Entry>& entries) {
  if (map.IsNull()) return true;
  if (!map.IsMap()) {
    error(path, line_of(map, line), std::string("expected a map, got ") + type_name(map));
    return false;
  }
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
  return true;
}

std::optional<std::string> LoadContext::str(const YAML::Node& v, const std::string& path, int line) {
  line = line_of(v, line);
  if (v.IsNull()) return std::nullopt;
  if (!v.IsScalar()) {
    error(path, line, std::string("expected a string, got ") + type_name(v));
    return std::nullopt;
  }
  return substitute(v.Scalar(), path, line);
}

std::optional<std::string> LoadContext::substitute(const std::string& text, const std::string& path, int line) {
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
    unset_env.push_back(UnsetEnv{name, path, line});
    return std::nullopt;
  }
  error(path, line, "environment variable " + name + " is not set (referenced as " + text + ")");
  return std::nullopt;
}

std::optional<std::int64_t> LoadContext::integer(const YAML::Node& v, const std::string& path, int line,
                                    std::int64_t min) {
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

std::optional<int> LoadContext::small_int(const YAML::Node& v, const std::string& path, int line, int min) {
  auto n = integer(v, path, line, min);
  if (!n) return std::nullopt;
  if (*n > std::numeric_limits<int>::max()) {
    error(path, line_of(v, line), "value too large");
    return std::nullopt;
  }
  return static_cast<int>(*n);
}

std::optional<bool> LoadContext::boolean(const YAML::Node& v, const std::string& path, int line) {
  line = line_of(v, line);
  auto text = str(v, path, line);
  if (!text) return std::nullopt;
  const std::string t = lower(trim(*text));
  if (t == "true" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "no" || t == "off") return false;
  error(path, line, "expected true or false, got \"" + *text + "\"");
  return std::nullopt;
}

std::optional<std::string> LoadContext::decimal(const YAML::Node& v, const std::string& path, int line) {
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

std::optional<milliseconds> LoadContext::seconds(const YAML::Node& v, const std::string& path, int line,
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

std::optional<milliseconds> LoadContext::millis(const YAML::Node& v, const std::string& path, int line,
                                   std::int64_t min) {
  auto n = integer(v, path, line, min);
  if (!n) return std::nullopt;
  return milliseconds{*n};
}

std::optional<double> LoadContext::ratio(const YAML::Node& v, const std::string& path, int line) {
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

std::optional<std::vector<std::string>> LoadContext::string_list(const YAML::Node& v, const std::string& path,
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

std::vector<FallbackRule> LoadContext::fallbacks(const YAML::Node& v, const std::string& path, int line,
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
      refs.push_back(GroupRef{from, rpath, rline, true});
      std::vector<Site> rule_sites;
      for (std::size_t i = 0; i < targets->size(); ++i) {
        refs.push_back(GroupRef{(*targets)[i], index(rpath, i), line_of(to[i], rline), false});
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

std::optional<std::vector<std::string>> LoadContext::group_list(const YAML::Node& v, const std::string& path,
                                                                int line) {
  auto list = string_list(v, path, line);
  if (list)
    for (std::size_t i = 0; i < list->size(); ++i)
      refs.push_back(GroupRef{(*list)[i], index(path, i), line_of(v[i], line), false});
  return list;
}

void LoadContext::walk_scalars(const YAML::Node& v, const std::string& path, int line) {
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

}  // namespace tollgate::config::detail
