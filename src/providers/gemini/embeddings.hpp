#pragma once
/// Embeddings on the Gemini API (`gemini/`) and Vertex AI (`vertex_ai/`): the OpenAI embeddings
/// call (CallApi::embeddings) sent in Google's shape and answered as an OpenAI `list`.
/// - Gemini API (https://ai.google.dev/api/embeddings): one input → POST
///   {model}:embedContent `{"model":"models/{m}","content":{"parts":[{"text"}]},"outputDimensionality"?}`
///   → `{"embedding":{"values":[..]}}`; an array → POST {model}:batchEmbedContents
///   `{"requests":[<one embedContent body per input>]}` → `{"embeddings":[{"values":[..]}]}`. The
///   answer reports NO usage: `reported` is false and the charge is the reservation (the input
///   bound of budget/operation_bounds.hpp), as for an OpenAI answer without usage.
/// - Vertex AI (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api):
///   POST {model}:predict `{"instances":[{"content"}],"parameters":{"outputDimensionality"?}}` →
///   `{"predictions":[{"embeddings":{"values":[..],"statistics":{"token_count","truncated"}}}]}`;
///   the usage is the sum of the token counts (unreported when any is missing). Same OAuth
///   token step as Vertex chat (vertex_auth.hpp).
/// `dimensions` becomes `outputDimensionality`; `encoding_format: base64` is applied to the
/// answer by the attempt (providers/embeddings_list.hpp). Errors: Google's (errors.hpp).

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "providers/provider.hpp"

namespace tollgate::providers::gemini {

/// The `gemini/` embeddings adapter (static instance).
const Provider& gemini_embeddings_adapter();
/// The `vertex_ai/` embeddings adapter (static instance).
const Provider& vertex_embeddings_adapter();

/// The Gemini API body for `texts` of model `model`: an EmbedContentRequest for one text, a
/// BatchEmbedContentsRequest for more. `dimensions` <= 0: not sent.
boost::json::object gemini_embed_body(const std::vector<std::string_view>& texts, std::string_view model,
                                      std::int64_t dimensions);
/// The Vertex AI :predict body for `texts`. `dimensions` <= 0: not sent.
boost::json::object vertex_embed_body(const std::vector<std::string_view>& texts, std::int64_t dimensions);

/// An EmbedContentResponse or BatchEmbedContentsResponse → the OpenAI `list` (usage unreported).
/// Errors: not JSON, or no (valid) `embedding.values` / `embeddings[].values`.
std::expected<Provider::Parsed, std::string> gemini_embed_response(std::string_view body, std::string_view model);
/// A Vertex AI :predict answer → the OpenAI `list`, usage = Σ statistics.token_count.
/// Errors: not JSON, or no (valid) `predictions[].embeddings.values`.
std::expected<Provider::Parsed, std::string> vertex_embed_response(std::string_view body, std::string_view model);

}  // namespace tollgate::providers::gemini
