#pragma once
/// The adapter of a deployment whose provider Tollgate does not implement (LiteLLM loads such a
/// config and fails the deployment at call time; so does Tollgate). Its build_request always
/// fails, so the attempt loop reports the deployment as misconfigured without sending anything:
/// the group's other deployments and its fallbacks still serve, and when none does the client
/// gets 400 `unsupported_provider` (500 `deployment_misconfigured` for a deployment whose
/// provider is implemented but whose config cannot be called: Deployment::unusable). Its other
/// members are never reached.

#include "providers/provider.hpp"

namespace tollgate::providers {

/// The one instance.
const Provider& unsupported_provider();

/// The client-facing message for deployment `d`: its provider prefix, or why it is unusable
/// (config::Deployment::unusable).
std::string unsupported_message(const config::Deployment& d);

}  // namespace tollgate::providers
