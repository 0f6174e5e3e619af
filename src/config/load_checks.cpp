// The checks once every section is loaded: ids, group references, fallback cycles.
#include "config/sections.hpp"
#include "config/wildcard.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace tollgate::config::detail {

void assign_ids(LoadContext& c, Config& cfg) {
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cfg.model_list.size(); ++i) {
    const Deployment& d = cfg.model_list[i];
    if (d.id.empty()) continue;
    if (!ids.insert(d.id).second)
      c.error(join(c.deployment_paths[i], "model_info.id"), c.id_lines[i], "duplicate model_info.id \"" + d.id + "\"");
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
void check_fallback_cycles(LoadContext& c, const Config& cfg) {
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
    const auto& sites = c.fallback_sites[key];
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
    auto it = c.degradation_model_sites.find(layer.path);
    Site site = it != c.degradation_model_sites.end() ? it->second : Site{join(layer.path, "degradation.model"), layer.line};
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
        c.warn(e.site.path, e.site.line, "circular fallback chain: " + text);
      }
    }
    stack.pop_back();
    marks[node] = Mark::done;
  };
  for (const std::string& g : groups)
    if (marks[g] == Mark::unseen) visit(visit, g);
}

void check_group_refs(LoadContext& c, const Config& cfg) {
  const std::vector<std::string> groups = cfg.model_groups();
  const std::set<std::string> known(groups.begin(), groups.end());
  std::vector<std::string> patterns;
  for (const auto& g : groups)
    if (is_wildcard(g)) patterns.push_back(g);
  // A name a wildcard group serves is a group too (routing::ModelGroups::find).
  const auto served_by_wildcard = [&](const std::string& name) {
    return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return wildcard_capture(p, name).has_value(); });
  };
  for (const GroupRef& r : c.refs) {
    if (r.star_allowed && r.group == "*") continue;
    if (!known.contains(r.group) && !c.broken_groups.contains(r.group) && !served_by_wildcard(r.group))
      c.error(r.path, r.line, "model group \"" + r.group + "\" is not in model_list");
  }
  for (const auto& a : cfg.router_settings.model_group_alias) {
    for (const auto& b : cfg.router_settings.model_group_alias)
      if (b.alias == a.group && a.alias != a.group)
        c.error("router_settings.model_group_alias." + a.alias, 0,
                "alias \"" + a.alias + "\" names another alias (\"" + a.group + "\"): aliases do not chain; name the model group");
    if (a.alias != a.group && known.contains(a.alias))
      c.warn("router_settings.model_group_alias." + a.alias, 0,
             "alias shadows the model group of the same name: requests for \"" + a.alias + "\" are served by \"" +
                 a.group + "\" (as in LiteLLM)");
  }
}

EnvLookup env_;

}  // namespace tollgate::config::detail
