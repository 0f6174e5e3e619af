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

/// The URL of deployment `d`'s model on the Gemini API (`{base}/v1beta/models/{model}`) or on
/// Vertex AI (`{base}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}`)
/// with `method` appended (":generateContent", ":embedContent", ":predict", ...). Path segments
/// are percent-encoded.
std::string model_url(const config::Deployment& d, bool vertex, std::string_view method);

}  // namespace tollgate::providers::gemini
