#pragma once
// Upper bounds of the tokens an attempt can consume: its input, read from the request, and its
// output, from the request's limits and the model's maximum (DESIGN.md "Budget admission";
// docs/budgets.md "Input bounds"). Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string_view>

#include <boost/json/object.hpp>

namespace tollgate::budget {

/// Tokens assumed per image content part (`image_url`, Anthropic `image`) by
/// input_token_upper_bound. Covers GPT-4o/4.1 (<= ~1,105 tokens high detail), Claude
/// (<= ~1,600) and Gemini (258) images; NOT gpt-4o-mini, whose image tokens are multiplied
/// ~33x (up to ~37k per image) — pass a larger bound for such models.
inline constexpr std::int64_t kDefaultImageTokenBound = 2000;

/// Tokens added per message, per content part and per tool call, on top of the bytes of every
/// string in it (its role included): the chat format's own tokens. OpenAI documents 3 per
/// message (+1 for a name) around the role and content
/// (https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken); Anthropic's token
/// counting shows about as many ("Hello, world" as one user message counts 14 tokens:
/// https://docs.anthropic.com/en/docs/build-with-claude/token-counting; the bound gives 24).
inline constexpr std::int64_t kPerMessageTokenOverhead = 4;

/// Tokens added once per request: the reply priming (OpenAI: 3, "<|start|>assistant<|message|>").
inline constexpr std::int64_t kPerRequestTokenOverhead = 4;

/// Tokens added per tool definition, on top of its JSON bytes (the provider renders it into a
/// tools preamble of its own).
inline constexpr std::int64_t kPerToolTokenOverhead = 16;

/// The UTF-8 bytes of every string in `v` (recursively), saturating: an upper bound of the tokens
/// that text can be (a token is at least one byte).
[[nodiscard]] std::int64_t string_bytes(const boost::json::value& v) noexcept;

/// Output tokens assumed when the request sets no max_tokens/max_completion_tokens and the model
/// has no known max output. Conservative only for models whose real limit is <= 4096: callers
/// should make sure priced models carry max_output_tokens (the bundled table does).
inline constexpr std::int64_t kDefaultOutputTokenBound = 4096;

/// An upper bound of the input tokens of an OpenAI Chat Completions request (also accepts the
/// Anthropic Messages shape: top-level `system`, `image` parts). The original, model-blind bound:
/// prefer input_token_upper_bound(request, InputBoundContext), which sizes images, documents and
/// audio per model family.
///
/// Rule (DESIGN.md): a BPE/byte-fallback token is at least one byte of UTF-8 text, so
///   bound = kPerRequestTokenOverhead
///         + Σ messages (kPerMessageTokenOverhead + UTF-8 bytes of every string in the message,
///                       + kPerMessageTokenOverhead per content part and per tool call)
///         + image parts: `tokens_per_image` each (their URL/base64 bytes are not counted)
///         + bytes of top-level `system` / `prompt` strings
///         + `tools` / `functions` / `response_format` / `tool_choice`: serialized JSON bytes
///           + kPerToolTokenOverhead per tool.
/// Malformed shapes are counted leniently (strings anywhere are counted); saturates at INT64_MAX.
[[nodiscard]] std::int64_t input_token_upper_bound(const boost::json::object& chat_request,
                                                   std::int64_t tokens_per_image = kDefaultImageTokenBound);

/// What input_token_upper_bound(request, ctx) needs to know about the model an attempt goes to.
struct InputBoundContext {
  /// Lower-case model name (price-table key such as "gpt-4o" or "azure/gpt-4o", or the upstream
  /// model): selects the image/document rules' family (media_tokens.hpp, media_family_for).
  /// Empty or unlisted → the unknown family (the largest per-image maximum of all families).
  std::string_view model;
  /// The model's context limit, tokens (ModelPrice::max_input_tokens): the bound of any media part
  /// whose size cannot be read, and a cap on every media part (a part larger than the context makes
  /// the request fail unbilled). nullopt or ≤ 0 → kUnknownMediaTokenBound.
  std::optional<std::int64_t> max_input_tokens;
};

/// Tokens assumed for a media part whose size cannot be read when the model's context limit is
/// unknown: 10,000,000, above the largest context window on offer (Llama 4 Scout: 10M; the
/// bundled table's largest is gemini-1.5-pro's 2,097,152).
inline constexpr std::int64_t kUnknownMediaTokenBound = 10'000'000;

/// An upper bound of the input tokens the provider will bill for `request`, an OpenAI Chat
/// Completions body (also the Anthropic Messages and OpenAI Responses shapes, leniently), for the
/// model described by `ctx`. Never below the real count for the documented rules; see
/// docs/budgets.md "Input bounds" for every formula and its source.
///
///   bound = kPerRequestTokenOverhead
///         + Σ messages: kPerMessageTokenOverhead + UTF-8 bytes of their strings
///           (+ kPerMessageTokenOverhead per content part and per tool call; tool calls, tool
///           results and nested `content` arrays count as text, their media parts as media;
///           tool arguments given as JSON objects, e.g. Anthropic `tool_use.input`, count by
///           their serialized bytes)
///         + top-level `system` / `prompt` / `input` / `instructions` / `suffix` (arrays: per-part
///           overhead + the parts, media included)
///         + `tools` / `functions` / `response_format` / `tool_choice`: serialized JSON bytes
///           + kPerToolTokenOverhead per tool, + the family's hidden tool-use prompt when tools
///           are present, + kBuiltinToolTokens per provider-defined tool
///         + images (`image_url`, `input_image`, Anthropic `image`): image_token_bound() from the
///           dimensions read from inline base64 data (PNG/JPEG/GIF/WebP), the family maximum when
///           they cannot be read (URL, file id, undecodable data)
///         + PDFs (OpenAI `file` / `input_file`, Anthropic `document`): pages read from inline data
///           × pdf_page_token_bound(); plain-text documents: their bytes; unreadable or not inline
///           → ctx.max_input_tokens
///         + audio (`input_audio`): ceil(duration bound × kAudioTokensPerSecond); unreadable →
///           ctx.max_input_tokens (also for an assistant `audio: {id}` reference).
/// Every media part is capped at ctx.max_input_tokens. Malformed shapes are counted leniently
/// (strings anywhere count as text); never throws; saturates at INT64_MAX. Allocation: none beyond
/// the serializer of the tool definitions; inline payloads are decoded in place (images: header
/// bytes only; PDFs: one pass).
[[nodiscard]] std::int64_t input_token_upper_bound(const boost::json::object& request, const InputBoundContext& ctx);

}  // namespace tollgate::budget
