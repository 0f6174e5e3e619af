#pragma once
/// Decoding the bodies of the non-chat OpenAI endpoints (embeddings, legacy completions) into a
/// call: their own input fields validated with OpenAI's rules, and what the attempt loop needs
/// to bound and send them (pipeline::ChatCall::output, stream, include_usage). The model and the
/// caller's names are read by the gateway as for chat (api/gateway.cpp).

#include <optional>

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::api {

/// Most inputs in one embeddings request (OpenAI: "any array must be 2048 dimensions or less").
inline constexpr std::size_t kMaxEmbeddingInputs = 2048;
/// Most tokens in one token-array input, and most prompts of a completions request.
inline constexpr std::size_t kMaxTokenArrayLength = 1'000'000;
/// Largest `dimensions` accepted (text-embedding-3-large has 3072; a provider refuses more).
inline constexpr std::int64_t kMaxEmbeddingDimensions = 65'536;
/// OpenAI's default `max_tokens` of the legacy completions endpoint
/// (https://platform.openai.com/docs/api-reference/completions/create#completions-create-max_tokens).
inline constexpr std::int64_t kCompletionsDefaultMaxTokens = 16;

/// An OpenAI embeddings request (https://platform.openai.com/docs/api-reference/embeddings/create):
/// `input` a non-empty string, an array of 1..2048 non-empty strings, a non-empty token array
/// (integers >= 0) or an array of 1..2048 such token arrays; `encoding_format` "float" | "base64";
/// `dimensions` an integer 1..65536; `user` a string (read as the end user elsewhere); no
/// `stream`. Sets call.api = embeddings, no output bound (output.no_output), not streamed.
/// Errors: 400 `invalid_request_error` naming the parameter (OpenAI's shape); nullopt = valid.
std::optional<core::Error> decode_embeddings(boost::json::object& body, pipeline::ChatCall& call);

/// An OpenAI legacy completions request (https://platform.openai.com/docs/api-reference/completions/create):
/// `prompt` a string, an array of strings, a token array or an array of token arrays (not
/// empty); `max_tokens` an integer >= 1, written into the body as 16 (OpenAI's default) when
/// absent so that the bound reserved is the one in force; `n` 1..128 and `best_of` 1..20 with
/// best_of >= n and best_of > 1 not streamed; `stream`, `stream_options.include_usage`; `echo`
/// a boolean, `suffix` a string, `logprobs` an integer 0..5 (passed through). The output bound
/// counts every completion generated: max(n, best_of) per prompt. Sets call.api = completions.
/// Errors: 400 `invalid_request_error` naming the parameter; nullopt = valid.
std::optional<core::Error> decode_completions(boost::json::object& body, pipeline::ChatCall& call);

}  // namespace tollgate::api
