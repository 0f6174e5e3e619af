#pragma once
/// The inputs of an OpenAI embeddings request as the non-OpenAI embeddings adapters read them
/// (providers/gemini/embeddings.hpp, ollama/embeddings.hpp, cohere/embeddings.hpp; the answer
/// is built by providers/embeddings_list.hpp). Shapes:
/// https://platform.openai.com/docs/api-reference/embeddings/create. The request was validated
/// by api/operation_decode.hpp decode_embeddings.

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "providers/provider.hpp"

namespace tollgate::providers {

/// The texts of an embeddings request's `input`: a string is one, an array of strings each of
/// its items (views into `request`). Errors: the input holds token ids (integers) or anything
/// else that is not text — "token-array input" in the message — which only OpenAI's and Azure's
/// APIs take.
std::expected<std::vector<std::string_view>, std::string> embedding_texts(const boost::json::object& request);

/// Provider::refuse_request of a text-only embeddings adapter: a token-array input (param
/// `input`), refused before sending; nullopt for text.
std::optional<Provider::Refusal> refuse_token_inputs(const boost::json::object& request);

/// The request's `dimensions` (an integer >= 1), nullopt when absent.
std::optional<std::int64_t> embedding_dimensions(const boost::json::object& request);

/// True when `value` is a non-empty array of numbers (one embedding vector).
bool is_embedding_vector(const boost::json::value& value);

}  // namespace tollgate::providers
