#pragma once
/// GET and DELETE /v1/responses/{id} (also /responses/{id}, /openai/v1/responses/{id}): a
/// response stored by OpenAI, passed through to an OpenAI or Azure deployment
/// (docs/responses_api.md "GET and DELETE"). Tollgate stores no responses itself. Nothing is
/// generated, so nothing is admitted or charged.
///
/// Contract: OpenAI API reference "Responses": GET /v1/responses/{response_id} (the response
/// object), DELETE /v1/responses/{response_id} ({id, object, deleted}).

#include <optional>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "auth/principal.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::api {

/// The response id of a stored-response path (`/v1/responses/resp_…`), nullopt for other paths.
/// An id with characters outside [A-Za-z0-9_-] is returned as it is (the handler refuses it).
std::optional<std::string_view> stored_response_id(std::string_view path);

/// Answers a GET or DELETE of stored response `id` for `principal`: the deployment is the first
/// OpenAI/Azure deployment of the model group named by the `model` query parameter or the
/// `x-tollgate-model-group` header, else of the whole config, among those the caller may call.
/// The upstream's status and body are relayed. Errors (OpenAI's shape): 400 for a malformed id
/// or a group without an OpenAI/Azure deployment, 401 for a group the key may not call, 404 when
/// no deployment can serve it, 405 for another method, 502/504 when the upstream cannot be reached.
boost::asio::awaitable<http::Response> stored_response(const http::Request& req, std::string_view id,
                                                      const pipeline::Services& services,
                                                      const auth::Principal& principal);

}  // namespace tollgate::api
