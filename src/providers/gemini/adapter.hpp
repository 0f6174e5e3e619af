#pragma once
/// The Gemini API (Google AI Studio, `gemini/`) and Vertex AI (`vertex_ai/`) provider adapters:
/// one body format (translate.hpp), two URL and auth schemes.
/// - Gemini API: POST {api_base=https://generativelanguage.googleapis.com}/v1beta/models/{model}:generateContent
///   (stream: :streamGenerateContent?alt=sse), key in `x-goog-api-key`
///   (https://ai.google.dev/api/generate-content).
/// - Vertex AI: POST {api_base=https://{location}-aiplatform.googleapis.com}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent
///   (location `global`: aiplatform.googleapis.com; default location us-central1), with an OAuth
///   bearer token minted at call time (vertex_auth.hpp).

#include "providers/provider.hpp"

namespace tollgate::providers::gemini {

/// The `gemini/` adapter (static instance).
const Provider& gemini_adapter();
/// The `vertex_ai/` adapter (static instance).
const Provider& vertex_adapter();

}  // namespace tollgate::providers::gemini
