#pragma once
/// How a failed upstream exchange reads to the failure policy and to the client: the transport
/// event a TransportError is (policy/failure.hpp), and the gateway errors (in the client's API
/// format, core/error.hpp) for a transport failure, a malformed answer and a shutdown. Internal
/// to pipeline/.

#include <string>

#include "config/config.hpp"
#include "core/error.hpp"
#include "http/client.hpp"
#include "policy/failure.hpp"

namespace tollgate::pipeline {

/// The policy's transport event for `e` (whether the request was sent decides the class).
policy::TransportEvent transport_event(const http::TransportError& e);

/// The client-facing error for a transport-level failure (no upstream body to relay): 504 for a
/// timeout, 502 otherwise, naming the deployment.
core::Error transport_error(const http::TransportError& e, const config::Deployment& d);

/// What a request still running when the gateway's drain ran out ends with (docs/operations.md).
core::Error shutdown_error();

/// 502 bad_upstream_response: deployment `d` answered something unusable (`why`).
core::Error malformed_error(const config::Deployment& d, const std::string& why);

}  // namespace tollgate::pipeline
