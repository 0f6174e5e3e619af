#pragma once
// Helpers shared by the config tests: load YAML text with a fixed environment, and find the
// problem reported at a YAML path.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"

namespace tollgate::config::testing_helpers {

/// An environment lookup over `vars` (os.environ/NAME references).
inline EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

/// Loads `yaml` as the file `source` with the environment `vars`.
inline LoadResult load(std::string_view yaml, std::map<std::string, std::string> vars = {},
                       std::string source = "test.yaml") {
  return load_config_string(yaml, source, env_of(std::move(vars)));
}

/// Every problem, one per line (for failure messages).
inline std::string all(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems) out += p.to_string() + "\n";
  return out;
}

/// The one problem whose path is `path` (fails the test when there is not exactly one).
inline Problem only(const std::vector<Problem>& problems, const std::string& path) {
  std::vector<Problem> found;
  for (const Problem& p : problems)
    if (p.path == path) found.push_back(p);
  EXPECT_EQ(found.size(), 1u) << "no single problem at " << path << "; problems:\n" << all(problems);
  return found.empty() ? Problem{} : found.front();
}

}  // namespace tollgate::config::testing_helpers
