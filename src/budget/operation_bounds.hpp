#pragma once
// Input bounds of the non-chat operations (embeddings, legacy completions): what their request
// bodies can cost in input tokens, read from their own input fields (docs/budgets.md "Input
// bounds"). Pure functions; thread-safe.

#include <cstdint>
#include <optional>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace tollgate::budget {

/// An upper bound of the tokens of an OpenAI `input` / `prompt` value
/// (https://platform.openai.com/docs/api-reference/embeddings/create#embeddings-create-input):
/// a string counts its UTF-8 bytes (a token is at least one byte), a number (a token id) counts
/// 1, an array the sum of its elements. So token arrays are counted exactly, text bounded.
/// Other values count 0. Saturates at INT64_MAX.
[[nodiscard]] std::int64_t prompt_token_bound(const boost::json::value& input) noexcept;

/// The input bound of an OpenAI embeddings request: prompt_token_bound of its `input` (0 when
/// absent).
[[nodiscard]] std::int64_t embeddings_input_bound(const boost::json::object& request) noexcept;

/// The input bound of an OpenAI legacy completions request
/// (https://platform.openai.com/docs/api-reference/completions/create): prompt_token_bound of
/// `prompt`, plus that of `suffix` once per prompt (the suffix goes with each).
[[nodiscard]] std::int64_t completions_input_bound(const boost::json::object& request) noexcept;

/// How many separate inputs an `input` / `prompt` value holds, each answered on its own: a
/// string or a token array (numbers) is 1, an array of strings or of token arrays its length
/// (0 for an empty array).
[[nodiscard]] std::int64_t prompt_count(const boost::json::value& input) noexcept;

/// The exact token count of the longest item of an `input` made of token ids (a token array, or
/// an array of token arrays); nullopt when any item is text (its tokens are not known here).
[[nodiscard]] std::optional<std::int64_t> longest_token_input(const boost::json::value& input) noexcept;

}  // namespace tollgate::budget
