#include "routing/constraints.hpp"

#include <algorithm>

namespace tollgate::routing {

namespace {

bool has(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string list_text(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out + "]";
}

bool tags_match(const std::vector<std::string>& dep_tags, const std::vector<std::string>& req, bool match_any) {
  if (req.empty() || dep_tags.empty()) return false;
  if (match_any) return std::any_of(req.begin(), req.end(), [&](const std::string& t) { return has(dep_tags, t); });
  return std::all_of(req.begin(), req.end(), [&](const std::string& t) { return has(dep_tags, t); });
}

}  // namespace

bool same_region(std::string_view a, std::string_view b) {
  const auto lower = [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; };
  return !a.empty() && a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

Eligible eligible_deployments(const config::Config& cfg, const std::vector<std::size_t>& members,
                              const RouteConstraints& c, std::string_view group) {
  Eligible out;
  std::vector<std::size_t> pool;
  pool.reserve(members.size());
  for (auto i : members) {
    const auto& region = cfg.model_list[i].region_name;
    const bool ok = std::all_of(c.regions.begin(), c.regions.end(),
                                [&](const RegionRule& r) { return same_region(region, r.region); });
    if (ok) pool.push_back(i);
  }
  if (pool.empty()) {
    out.boundary = "region";
    std::string rules;
    for (const auto& r : c.regions) rules += (rules.empty() ? "" : ", ") + r.source + " allows region '" + r.region + "'";
    out.why = "no deployment of model group '" + std::string(group) + "' is in the allowed region (" + rules + ")";
    return out;
  }
  if (!c.tag_filtering) {
    out.members = std::move(pool);
    return out;
  }
  if (!c.key_tags.empty()) {
    std::erase_if(pool, [&](std::size_t i) { return !tags_match(cfg.model_list[i].tags, c.key_tags, c.match_any); });
    if (pool.empty()) {
      out.boundary = "tag";
      out.why = "no deployment of model group '" + std::string(group) + "' carries " +
                (c.match_any ? "any of" : "all of") + " the key's tags " + list_text(c.key_tags) +
                " (router_settings.enable_tag_filtering)";
      return out;
    }
  }
  std::vector<std::size_t> matched, defaults;
  for (auto i : pool) {
    const auto& tags = cfg.model_list[i].tags;
    if (tags_match(tags, c.tags, c.match_any)) matched.push_back(i);
    if (has(tags, "default")) defaults.push_back(i);
  }
  if (!matched.empty()) out.members = std::move(matched);
  else if (!defaults.empty()) out.members = std::move(defaults);
  else if (c.tags.empty()) out.members = std::move(pool);
  if (out.members.empty()) {
    out.boundary = "tag";
    out.why = "no deployment of model group '" + std::string(group) + "' carries " +
              (c.match_any ? "any of" : "all of") + " the request's tags " + list_text(c.tags) +
              " and none is tagged 'default' (router_settings.enable_tag_filtering)";
  }
  return out;
}

}  // namespace tollgate::routing
