#pragma once
/// Which deployments serve a client API natively (its own wire format, no translation through
/// chat): /v1/messages on Anthropic deployments, /v1/responses on OpenAI and Azure ones
/// (docs/responses_api.md, docs/life_of_a_request.md "decode").

#include "config/config.hpp"
#include "providers/call_api.hpp"
#include "providers/provider.hpp"

namespace tollgate::providers {

/// The adapter that serves calls of client API `api` to deployment `d` in that API's own
/// format (the caller's body passed through), as the seam picks it (adapter_for, i.e.
/// Provider::for_api): anthropic::native_adapter for `messages` on an Anthropic deployment,
/// responses::native_adapter for `responses` on an OpenAI or Azure one; nullptr otherwise (the
/// call is then served through its chat translation). No allocation.
const Provider* native_adapter_for(const config::Deployment& d, CallApi api) noexcept;

}  // namespace tollgate::providers
