#pragma once
/// The OpenAI embeddings response (https://platform.openai.com/docs/api-reference/embeddings/object)
/// built from another provider's vectors, and the caller's `encoding_format` applied to it.
/// Shape: `{"object":"list","data":[{"object":"embedding","index":i,"embedding":[floats]}],
/// "model":..., "usage":{"prompt_tokens","total_tokens"}}`. Pure functions; thread-safe.

#include <string>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "providers/usage.hpp"

namespace tollgate::providers {

/// The list of `vectors` (each an array of numbers, in input order) for `model`. `usage`
/// becomes `{"prompt_tokens": u.prompt_tokens, "total_tokens": same}` when reported; when the
/// provider reported none the member is omitted (no number is made up: the gateway charges
/// the reservation, docs/providers.md "Embeddings").
boost::json::object embeddings_list(boost::json::array vectors, std::string_view model, const Usage& usage);

/// Standard base64 (RFC 4648 §4, with padding) of the little-endian IEEE-754 float32 values of
/// `vector` — the form OpenAI sends for `encoding_format: "base64"` and its SDKs decode.
/// Non-numbers encode as 0.
std::string float32_base64(const boost::json::array& vector);

/// When `request` (the caller's OpenAI embeddings body) asks for `encoding_format: "base64"`,
/// replaces each `data[].embedding` array of `list` by float32_base64 of it; otherwise (float,
/// absent) leaves `list` as it is.
void apply_encoding_format(const boost::json::object& request, boost::json::object& list);

}  // namespace tollgate::providers
