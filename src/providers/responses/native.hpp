#pragma once
/// The OpenAI Responses API spoken natively: the adapter an OpenAI or Azure deployment serves
/// `/v1/responses` calls with (the caller's body sent as it is, the upstream's answer relayed).
///
/// Contract: OpenAI API reference "Responses" (POST /v1/responses, the response object and its
/// `usage`, the streaming events with response.completed / response.incomplete /
/// response.failed / error) and Azure OpenAI "Responses API" (POST {endpoint}/openai/v1/responses,
/// `api-key` header; GET/DELETE /openai/v1/responses/{id}).

#include <expected>
#include <string>
#include <string_view>

#include "http/client.hpp"
#include "providers/provider.hpp"

namespace tollgate::providers::responses {

/// The native adapter of OpenAI and Azure deployments (the deployment's kind picks the URL and
/// the auth header):
/// - build_request: POST {api_base}/responses (OpenAI; default base https://api.openai.com/v1)
///   or {api_base}/openai/v1/responses (Azure), the body as given with `model` := the upstream
///   model and `stream` as the call asks; Bearer / `api-key` auth;
/// - set_output_limit: `max_output_tokens` := the attempt's bound;
/// - parse_response: the response object itself (relayed byte for byte), usage from its `usage`
///   (usage_from_responses) and `service_tier`;
/// - parse_error: OpenAI's error body;
/// - stream_decoder: every event's data passed through unchanged (the sink re-frames it with
///   its `type` as the event name), usage from response.completed / response.incomplete;
///   an `error` event or response.failed is the stream's error (classified like chat's, and
///   not relayed: the sink ends the stream with its own error events).
const Provider& native_adapter();

/// The upstream URL of a stored response `id` (GET / DELETE pass-through) for deployment `d`:
/// {base}/responses/{id} (OpenAI) or {base}/openai/v1/responses/{id} (Azure), with the
/// deployment's auth header. Errors: a base URL that does not parse.
std::expected<http::OutgoingRequest, std::string> stored_response_request(const config::Deployment& d,
                                                                          std::string_view id);

}  // namespace tollgate::providers::responses
