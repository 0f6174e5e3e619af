#pragma once
/// Embeddings on Ollama (`ollama/` and `ollama_chat/`: the same server), the OpenAI embeddings
/// call (CallApi::embeddings) sent to Ollama's native endpoint and answered as an OpenAI `list`:
/// POST {api_base}/api/embed `{"model","input": string | [string],"dimensions"?}` →
/// `{"model","embeddings":[[..]],"prompt_eval_count"}` (https://github.com/ollama/ollama/blob/main/docs/api.md
/// "Generate Embeddings"). The usage is `prompt_eval_count`; Ollama is self-hosted, priced 0
/// (budget/pricing.cpp), so the charge is 0 either way. Errors: outcome_from_ollama_error.

#include <expected>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "providers/provider.hpp"

namespace tollgate::providers::ollama {

/// The one instance.
const Provider& embeddings_adapter();

/// The /api/embed body of an OpenAI embeddings request (texts only; model := `model`).
/// Errors: a token-array input (embedding_texts).
std::expected<boost::json::object, std::string> embed_body(const boost::json::object& request, std::string_view model);

/// An /api/embed answer → the OpenAI `list`. Errors: not JSON, or no (valid) `embeddings`.
std::expected<Provider::Parsed, std::string> embed_response(std::string_view body, std::string_view model);

}  // namespace tollgate::providers::ollama
