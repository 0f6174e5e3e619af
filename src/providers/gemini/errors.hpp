#pragma once
/// Google API error bodies into the classifier's terms.
///
/// Shape (Google AIP-193, https://google.aip.dev/193; Gemini API "Troubleshooting" error table):
/// `{"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED","details":[...]}}`, and on
/// Vertex AI sometimes the same object inside a one-element array.

#include <optional>
#include <string_view>

#include <boost/json/object.hpp>

#include "policy/failure.hpp"

namespace tollgate::providers::gemini {

/// From a Google `error` object (`status` the HTTP status it came with; 0 inside a stream: the
/// object's `code` is used). error_type = the canonical `status` name (RESOURCE_EXHAUSTED ...);
/// error_code, in the classifier's vocabulary (docs/failure_policy.md, "Gemini and Vertex AI"):
/// RESOURCE_EXHAUSTED → rate_limit_exceeded; INVALID_ARGUMENT saying the input exceeds the
/// model's token limit → context_length_exceeded; a prompt blocked for safety →
/// content_policy_violation; otherwise the status name. An invalid API key (400 INVALID_ARGUMENT
/// with reason API_KEY_INVALID) is an authentication failure: the outcome's status is 401.
policy::Outcome outcome_from_google_error(int status, const boost::json::object& error);

/// From a whole error body; a body that is not a Google error keeps the status and says what
/// arrived (error_body false: not the API's documented, unbilled error answer).
policy::Outcome outcome_from_google_body(int status, std::string_view body);

/// A GenerateContentResponse (2xx) whose prompt was blocked before generation: no candidates
/// (absent or empty) and `promptFeedback.blockReason` set
/// (https://ai.google.dev/api/generate-content#PromptFeedback). The attempt's failure: status
/// 200, error_type `invalid_request_error`, error_code `content_policy_violation` (the
/// content_policy class), a message naming the block reason. nullopt for any other answer.
std::optional<policy::Outcome> blocked_prompt_outcome(const boost::json::object& response);

}  // namespace tollgate::providers::gemini
