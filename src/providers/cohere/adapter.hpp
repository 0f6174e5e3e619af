#pragma once
/// Cohere's v2 Chat API as a Provider adapter (LiteLLM prefix `cohere/`, also `cohere_chat/`):
/// POST {api_base}/v2/chat, default base https://api.cohere.com, key COHERE_API_KEY sent as
/// `Authorization: Bearer`. Streams are SSE with typed events. Translation:
/// providers/cohere/translate.hpp. Docs: docs.cohere.com/reference/chat, /reference/errors.

#include "providers/provider.hpp"

namespace tollgate::providers::cohere {

/// The one instance.
const Provider& adapter();

/// A Cohere error answer for the classifier: `{"message": "..."}` (Cohere's error shape, with an
/// optional `id`) is the provider's own error (error_body, unbilled); the status decides the
/// class (429 capacity, 401/403 misconfigured, 5xx transient) and the message words do for 400s
/// ("too many tokens" → context overflow).
policy::Outcome outcome_from_cohere_error(int status, std::string_view body);

}  // namespace tollgate::providers::cohere
