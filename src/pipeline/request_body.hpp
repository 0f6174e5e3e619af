#pragma once
/// The request as the caller sent it, rebuilt from a run's state: attempts rewrite the body in
/// place (the upstream model, each attempt's output bound), so what a deferred job replays and
/// what the stale cache is keyed by are built from the caller's own fields. Internal to pipeline/.

#include <string>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// The request's body with the caller's own model and output limits.
json::object caller_body(const RunState& st);

/// The stale_cache key of this request: cache::request_key of the caller (key hash, master or
/// anonymous), the group asked for and the caller's body (stream flags and gateway-only members
/// left out), the same key the response cache uses (without its namespace).
std::string cache_key(const RunState& st);

/// The body a deferred job replays: the request without its stream flags, the request's tags
/// kept as `metadata.tags` (binding erased the top-level `tags`), and the effective budgets as
/// `tollgate_request_budget` (tightening only, so replaying them cannot loosen anything; the
/// runner removes the field before the call).
json::object deferred_body(const RunState& st);

}  // namespace tollgate::pipeline
