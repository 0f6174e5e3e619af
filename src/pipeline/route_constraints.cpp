#include "pipeline/route_constraints.hpp"

#include <algorithm>

namespace tollgate::pipeline {

routing::RouteConstraints route_constraints(const auth::Principal& p, const config::Config& cfg) {
  routing::RouteConstraints c;
  auto add = [&](const std::string& region, const char* source) {
    if (!region.empty()) c.regions.push_back({region, source});
  };
  if (p.key) add(p.key->allowed_model_region, "key");
  if (p.team) add(p.team->allowed_model_region, "team");
  if (p.customer) add(p.customer->allowed_model_region, "end_user");
  c.tag_filtering = cfg.router_settings.enable_tag_filtering;
  c.match_any = cfg.router_settings.tag_filtering_match_any;
  if (c.tag_filtering) {
    // A budgeted tag the caller may not charge (another tenant's) does not route it either: its
    // budget would no longer bound the use of the deployments it reserves.
    c.tags = p.tags;
    std::erase_if(c.tags, [&](const std::string& t) {
      return std::find(p.uncharged_tags.begin(), p.uncharged_tags.end(), t) != p.uncharged_tags.end();
    });
    if (p.key) c.key_tags = p.key->tags;
  }
  return c;
}

}  // namespace tollgate::pipeline
