#pragma once
/// Routing constraints that are data boundaries (seed 003: "if your product cannot tolerate that
/// movement, encode it as a hard constraint"): which of a model group's deployments one request
/// may be sent to, beyond the group itself. Two kinds, both LiteLLM's:
///  - region: `allowed_model_region` of the caller's key, team or end user (docs: LiteLLM
///    "Region-based Routing") against each deployment's `litellm_params.region_name`;
///  - tags: with `router_settings.enable_tag_filtering`, the request's tags against each
///    deployment's `litellm_params.tags` (docs: LiteLLM "Tag Based Routing").
/// The same filter applies to the primary group, every retry, every fallback target and every
/// degradation target, so a fallback never crosses a boundary the caller may not cross.
/// Pure functions over the immutable config; thread-safe.

#include <cstddef>
#include <string_view>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace tollgate::routing {

/// One region requirement and where it came from.
struct RegionRule {
  std::string region;  ///< as configured ("eu", "us"); compared case-insensitively
  std::string source;  ///< "key", "team" or "end_user" (named in refusals and the trace)
};

/// What one request may be routed to. Default-constructed: no constraint.
struct RouteConstraints {
  /// Every rule must hold: a deployment serves only when its region_name equals each rule's
  /// region (a deployment with no region_name meets no rule). Two different regions → nothing.
  std::vector<RegionRule> regions;
  bool tag_filtering = false;  ///< router_settings.enable_tag_filtering
  /// router_settings.tag_filtering_match_any: a deployment needs one of the request's tags
  /// (true) or all of them (false).
  bool match_any = true;
  std::vector<std::string> tags;  ///< the request's tags (key tags + the request's own)
  /// The tags an admin gave the caller's key: a hard boundary. With tag filtering on and this
  /// not empty, only deployments carrying one of them (all of them when match_any is false) may
  /// serve, whatever the request adds, and none falls through to `default`. The request's own
  /// tags then choose among those (LiteLLM's rule below).
  std::vector<std::string> key_tags;

  bool empty() const noexcept { return regions.empty() && !tag_filtering; }
};

/// The deployments of one group a request may use, and why none when none.
struct Eligible {
  std::vector<std::size_t> members;  ///< deployment indices, config order
  /// Empty when `members` is not empty; otherwise "region" or "tag" (the boundary that left
  /// nothing) and a sentence for the caller and the trace.
  std::string boundary;
  std::string why;
};

/// Whether a deployment's `region_name` `a` is region `b`: equal ignoring ASCII case; an empty
/// `a` (no region_name) is in no region.
bool same_region(std::string_view a, std::string_view b);

/// Filters `members` (deployment indices of one group, into cfg.model_list) by `c`.
/// Region first, then the key's tags (a hard filter), then the request's tags, as LiteLLM's
/// router does:
///  - with request tags: the deployments whose tags match (any/all, per match_any); when none
///    does, those tagged "default"; when none is, nothing;
///  - without request tags: the deployments tagged "default" when there are any, else all.
/// `group` only names the group in `why`.
Eligible eligible_deployments(const config::Config& cfg, const std::vector<std::size_t>& members,
                              const RouteConstraints& c, std::string_view group);

}  // namespace tollgate::routing
