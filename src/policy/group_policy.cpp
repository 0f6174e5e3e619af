#include "policy/group_policy.hpp"

namespace tollgate::policy {

PolicySet::PolicySet(const config::Config& cfg) {
  const config::FallbackPolicyConfig& fp = cfg.fallback_policy;
  const ClassTable base = ClassTable::defaults().with(fp.defaults.classes);
  const config::DegradationConfig base_degradation = fp.defaults.degradation.value_or(config::DegradationConfig{});

  defaults_.classes = base;
  defaults_.budget = configured_budget(cfg, {});
  defaults_.degradation = base_degradation;

  for (const config::GroupPolicyConfig& g : fp.model_groups) {
    if (g.group.empty()) continue;
    GroupPolicy p;
    p.classes = base.with(g.classes);
    p.budget = configured_budget(cfg, g.group);
    p.degradation = g.degradation ? *g.degradation : base_degradation;
    groups_.insert_or_assign(g.group, std::move(p));
  }
}

const GroupPolicy& PolicySet::for_group(std::string_view group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? defaults_ : it->second;
}

}  // namespace tollgate::policy
