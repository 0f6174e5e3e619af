#pragma once
/// Embeddings on Cohere (`cohere/`), the OpenAI embeddings call (CallApi::embeddings) sent to
/// Cohere's v2 Embed API and answered as an OpenAI `list`: POST {api_base}/v2/embed
/// `{"model","texts":[..],"input_type":"search_document","embedding_types":["float"],"output_dimension"?}`
/// → `{"embeddings":{"float":[[..]]},"meta":{"billed_units":{"input_tokens"}}}`
/// (https://docs.cohere.com/reference/embed). The usage is `meta.billed_units.input_tokens`, what
/// Cohere bills. OpenAI's `dimensions` becomes `output_dimension` (embed-v4.0 takes 256, 512,
/// 1024, 1536; Cohere refuses others). Errors: outcome_from_cohere_error.

#include <expected>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "providers/provider.hpp"

namespace tollgate::providers::cohere {

/// The one instance.
const Provider& embeddings_adapter();

/// The /v2/embed body of an OpenAI embeddings request (model := `model`). Errors: a token-array
/// input (embedding_texts).
std::expected<boost::json::object, std::string> embed_body(const boost::json::object& request, std::string_view model);

/// A /v2/embed answer → the OpenAI `list`. Errors: not JSON, or no (valid) `embeddings.float`.
std::expected<Provider::Parsed, std::string> embed_response(std::string_view body, std::string_view model);

}  // namespace tollgate::providers::cohere
