#pragma once
/// The routing picture GET /tollgate/routing shows (docs/admin_api.md): model groups with their
/// deployments (price, live circuit) and the fallback graph as the failure policy walks it.
/// Credentials never appear: api_key is not read, api_base loses user info, query and fragment.

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "budget/pricing.hpp"
#include "config/config.hpp"
#include "policy/circuit.hpp"
#include "policy/group_policy.hpp"

namespace tollgate::api {

/// `url` without user info ("user:pass@"), query string and fragment: "https://h:8443/v1".
std::string redact_api_base(std::string_view url);

/// One edge of the fallback graph: a failure of one of `classes` in group `from` sends the
/// request to `to`, at position `order` (0-based) of the `kind` list.
struct FallbackEdge {
  std::string from;
  std::string to;
  /// fallbacks | default_fallbacks | context_window_fallbacks | content_policy_fallbacks |
  /// degradation (the group's degradation mode `equivalent` or `reduced` answering with `to`)
  std::string kind;
  std::vector<std::string> classes;  ///< failure class names, in the policy's class order
  int order = 0;
  std::string mode;  ///< kind degradation: the mode (equivalent, reduced); else empty
};

/// The fallback edges of `cfg` under `policies`: for each group and each failure class whose
/// action walks a fallback list (retry_then_fallback, retry_with_circuit, fallback,
/// next_deployment), the targets routing::fallback_groups gives — the same list the attempt
/// loop walks; and a `degradation` edge to the model group of an `equivalent` or `reduced`
/// degradation mode, for the classes that may end in it (the attempt loop's rule: not
/// fail_fast or stop_and_alert; context_overflow and content_policy only with action degrade).
/// Ordered by from-group (config order), kind, order.
std::vector<FallbackEdge> fallback_edges(const config::Config& cfg, const policy::PolicySet& policies);

/// {"model_groups": [...], "fallbacks": [...]} (docs/admin_api.md "GET /tollgate/routing").
/// `prices` is indexed like cfg.model_list; `circuits` is policy::Circuits::snapshot().
boost::json::object routing_json(const config::Config& cfg, const std::vector<budget::ResolvedPrice>& prices,
                                 const policy::PolicySet& policies, const std::vector<policy::CircuitView>& circuits);

}  // namespace tollgate::api
