#pragma once
/// GET /v1/tollgate/jobs/{id}: the state or result of a deferred job (degradation mode
/// `deferred`, issue 4 §5). Visible to the virtual key that queued it and to the master key;
/// anyone else gets 404 (a job's existence is not disclosed). Body: pipeline::job_json.

#include <string_view>

#include "auth/identities.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::api {

inline constexpr std::string_view kJobsPrefix = "/v1/tollgate/jobs/";

/// Answers GET /v1/tollgate/jobs/{id}. Blocking (a store read): call off the I/O threads.
http::Response job_response(const http::Request& req, std::string_view id, const pipeline::Services& s,
                            const auth::IdentityIndex& ids);

}  // namespace tollgate::api
