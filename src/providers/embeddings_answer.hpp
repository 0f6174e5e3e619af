#pragma once
/// The OpenAI embeddings request and answer as the non-OpenAI embeddings adapters read and write
/// them (providers/gemini/embeddings.hpp, ollama/embeddings.hpp, cohere/embeddings.hpp): the
/// text inputs of a request, and the `list` answer built from the provider's vectors.
/// Shapes: https://platform.openai.com/docs/api-reference/embeddings (create; the embedding
/// object). The request was validated by api/operation_decode.hpp decode_embeddings.

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "config/config.hpp"
#include "providers/usage.hpp"

namespace tollgate::providers {

/// The texts of an embeddings request's `input`: a string is one, an array of strings each of
/// its items (views into `request`). Errors: the input holds token ids (integers) or anything
/// else that is not text — "token-array input" in the message — which only OpenAI's and Azure's
/// APIs take.
std::expected<std::vector<std::string_view>, std::string> embedding_texts(const boost::json::object& request);

/// The request's `dimensions` (an integer >= 1), nullopt when absent.
std::optional<std::int64_t> embedding_dimensions(const boost::json::object& request);

/// Why `request` (an OpenAI embeddings body) cannot be sent to deployment `d` as it is, checked
/// before anything is sent (the caller's 400): a token-array input to a provider that embeds text
/// only (every provider but OpenAI and Azure). nullopt: it can be.
std::optional<std::string> embeddings_input_refusal(const config::Deployment& d, const boost::json::object& request);

/// True when `value` is a non-empty array of numbers (one embedding vector).
bool is_embedding_vector(const boost::json::value& value);

/// The OpenAI answer `{"object":"list","data":[{"object":"embedding","index":i,"embedding":v}],
/// "model","usage":{"prompt_tokens","total_tokens"}}` from the vectors in input order (each an
/// array of numbers, moved in). The usage written is `usage.prompt_tokens`, 0 when the provider
/// reported none (`usage.reported` false: the charge is then the reservation, pipeline/attempt.cpp).
boost::json::object embeddings_list(boost::json::array vectors, std::string_view model, const Usage& usage);

/// Whether the request asked for `encoding_format: "base64"`.
bool wants_base64_embeddings(const boost::json::object& request);

/// Rewrites each `data[].embedding` array of numbers of an embeddings `list` as the base64 of
/// its values as little-endian IEEE 754 float32 (OpenAI's `encoding_format: "base64"`, which the
/// official SDKs decode with Float32Array). Items already strings are left as they are.
void encode_embeddings_base64(boost::json::object& list);

}  // namespace tollgate::providers
