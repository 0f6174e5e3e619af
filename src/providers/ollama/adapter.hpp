#pragma once
/// Ollama's native API as Provider adapters (LiteLLM prefixes `ollama_chat/` → POST
/// {api_base}/api/chat and `ollama/` → POST {api_base}/api/generate; default base
/// http://localhost:11434, env OLLAMA_API_BASE; an api_key, when configured, is sent as
/// `Authorization: Bearer` for Ollama behind an authenticating proxy or ollama.com). Streams are
/// NDJSON (http::StreamFraming::ndjson). Translation: providers/ollama/translate.hpp.

#include "providers/provider.hpp"

namespace tollgate::providers::ollama {

/// The /api/chat adapter (`ollama_chat/`).
const Provider& chat_adapter();
/// The /api/generate adapter (`ollama/`).
const Provider& generate_adapter();

/// An Ollama error answer read for the classifier: {"error": "..."} (Ollama's only error
/// shape) is the provider's own error (error_body, unbilled); 404 "model ... not found" is a
/// misconfigured deployment (error_code "ollama_model_not_found": the model is the config's, not the caller's); anything else keeps its status.
policy::Outcome outcome_from_ollama_error(int status, std::string_view body);

}  // namespace tollgate::providers::ollama
