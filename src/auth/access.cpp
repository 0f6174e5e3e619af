#include "auth/access.hpp"

namespace tollgate::auth {

namespace {

std::string list_text(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += "'" + v[i] + "'";
  }
  return s + "]";
}

}  // namespace

bool models_allow(const std::vector<std::string>& allowed, std::string_view group, const config::Config& config) {
  if (allowed.empty()) return true;
  for (const auto& a : allowed) {
    if (a == "*" || a == "all-proxy-models" || a == "all-team-models" || a == group) return true;
  }
  for (const auto& d : config.model_list) {
    if (d.model_name != group) continue;
    for (const auto& ag : d.access_groups)
      for (const auto& a : allowed)
        if (a == ag) return true;
  }
  return false;
}

bool may_call(const Principal& p, std::string_view group, const config::Config& config) {
  return !model_access_error(p, group, config).has_value();
}

std::optional<core::Error> model_access_error(const Principal& p, std::string_view group,
                                              const config::Config& config) {
  if (p.is_master || !p.key) return std::nullopt;
  std::string who;
  const std::vector<std::string>* list = nullptr;
  if (!models_allow(p.key->models, group, config)) {
    who = "key";
    list = &p.key->models;
  } else if (p.team && !models_allow(p.team->models, group, config)) {
    who = "team";
    list = &p.team->models;
  } else {
    return std::nullopt;
  }
  return core::Error::caller(401, "key_model_access_denied",
                             who + " not allowed to access model. This " + who + " can only access models=" +
                                 list_text(*list) + ". Tried to access " + std::string(group),
                             "model", "401");
}

}  // namespace tollgate::auth
