#include "config/config.hpp"

#include <unordered_set>

namespace tollgate::config {

std::vector<std::string> Config::model_groups() const {
  std::vector<std::string> groups;
  std::unordered_set<std::string> seen;
  for (const Deployment& d : model_list) {
    if (seen.insert(d.model_name).second) groups.push_back(d.model_name);
  }
  return groups;
}

std::string Problem::to_string() const {
  std::string out;
  if (!path.empty()) out += path;
  if (line > 0) {
    if (!out.empty()) out += ' ';
    out += "(line " + std::to_string(line) + ")";
  }
  if (!out.empty()) out += ": ";
  out += message;
  return out;
}

}  // namespace tollgate::config
