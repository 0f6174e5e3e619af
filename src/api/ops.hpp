#pragma once
/// Operator endpoints: GET /tollgate/stats (store group-commit and client connection figures), GET /tollgate/circuits
/// (every deployment, provider and feature circuit), GET /tollgate/alerts (recent alerts), all
/// with the master key; GET /metrics (Prometheus text exposition 0.0.4, unauthenticated like
/// LiteLLM's /metrics: keep it on an internal network).

#include <string_view>

#include <boost/json/array.hpp>

#include "auth/identities.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::api {

/// The recent alerts as GET /tollgate/alerts lists them: [{kind, subject, message, at_ms,
/// repeats}], newest first ([] without alerts).
boost::json::array alerts_json(const pipeline::Services& s);

/// Whether `path` is one of the operator endpoints above.
bool is_ops_path(std::string_view path);

/// Answers an operator endpoint (`path` from is_ops_path). 401/403 without the master key.
http::Response ops_response(const http::Request& req, std::string_view path, const pipeline::Services& s,
                            const auth::IdentityIndex& ids);

}  // namespace tollgate::api
