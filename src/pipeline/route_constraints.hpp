#pragma once
/// The routing constraints of one request (routing/constraints.hpp), from who is calling and the
/// config: the `allowed_model_region` of its key, team and end user, and — with
/// router_settings.enable_tag_filtering — its tags.

#include "auth/principal.hpp"
#include "config/config.hpp"
#include "routing/constraints.hpp"

namespace tollgate::pipeline {

/// Every region set on the principal's key, team or end user (customer record) becomes a rule
/// (all must hold); tags are the principal's (key tags + the request's own), used only when
/// tag filtering is on; the key's own tags (set by an admin) are also the hard tag boundary. The
/// end user's region applies whichever key calls (the master key too).
routing::RouteConstraints route_constraints(const auth::Principal& p, const config::Config& cfg);

}  // namespace tollgate::pipeline
