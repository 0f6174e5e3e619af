#pragma once
// Upper bounds of the tokens an attempt can consume: its input, read from the request, and its
// output, from the request's limits and the model's maximum (DESIGN.md "Budget admission";
// docs/budgets.md). Pure functions; thread-safe.

#include <cstdint>
#include <optional>

#include <boost/json/object.hpp>

namespace tollgate::budget {

/// Tokens assumed per image content part (`image_url`, Anthropic `image`) by
/// input_token_upper_bound. Covers GPT-4o/4.1 (<= ~1,105 tokens high detail), Claude
/// (<= ~1,600) and Gemini (258) images; NOT gpt-4o-mini, whose image tokens are multiplied
/// ~33x (up to ~37k per image) — pass a larger bound for such models.
inline constexpr std::int64_t kDefaultImageTokenBound = 2000;

/// Tokens added per message, per content part and per tool call (role/format tokens;
/// OpenAI's documented chat overhead is 3-4 per message).
inline constexpr std::int64_t kPerMessageTokenOverhead = 8;

/// Tokens added once per request (reply priming, format tokens), and per tool definition.
inline constexpr std::int64_t kPerRequestTokenOverhead = 16;

/// Output tokens assumed when the request sets no max_tokens/max_completion_tokens and the model
/// has no known max output. Conservative only for models whose real limit is <= 4096: callers
/// should make sure priced models carry max_output_tokens (the bundled table does).
inline constexpr std::int64_t kDefaultOutputTokenBound = 4096;

/// An upper bound of the input tokens of an OpenAI Chat Completions request (also accepts the
/// Anthropic Messages shape: top-level `system`, `image` parts).
///
/// Rule (DESIGN.md): a BPE/byte-fallback token is at least one byte of UTF-8 text, so
///   bound = kPerRequestTokenOverhead
///         + Σ messages (kPerMessageTokenOverhead + UTF-8 bytes of every string in the message,
///                       + kPerMessageTokenOverhead per content part and per tool call)
///         + image parts: `tokens_per_image` each (their URL/base64 bytes are not counted)
///         + bytes of top-level `system` / `prompt` strings
///         + `tools` / `functions` / `response_format` / `tool_choice`: serialized JSON bytes
///           + kPerRequestTokenOverhead per tool.
/// Malformed shapes are counted leniently (strings anywhere are counted); saturates at INT64_MAX.
[[nodiscard]] std::int64_t input_token_upper_bound(const boost::json::object& chat_request,
                                                   std::int64_t tokens_per_image = kDefaultImageTokenBound);

/// An upper bound of the output tokens of a chat request:
/// `max_completion_tokens` (else `max_tokens`) × `n` (default 1), capped at the model's max
/// output tokens when known (a larger request is rejected upstream); without a request limit,
/// `model_max_output` × n; without either, kDefaultOutputTokenBound × n. Non-positive or
/// non-integer limits / n are ignored (treated as absent). Saturates at INT64_MAX.
[[nodiscard]] std::int64_t output_token_upper_bound(const boost::json::object& chat_request,
                                                    std::optional<std::int64_t> model_max_output);

}  // namespace tollgate::budget
