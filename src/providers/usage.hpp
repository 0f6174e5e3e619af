#pragma once
/// Token usage of one upstream response, in the gateway's internal (OpenAI) terms.

#include "budget/usage.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

namespace tollgate::providers {

/// Token usage of one response (budget/usage.hpp: line items by token kind).
using Usage = budget::Usage;

/// The largest token count an upstream's usage may report (10^15: far beyond any response). The
/// readers add up to a handful of counts (Anthropic: input + cache reads + cache writes), which
/// stays far below INT64_MAX; a larger count is not a count (read as absent: the usage is then
/// unreported, the bill unknown, when the count is a required one).
inline constexpr std::int64_t kMaxTokenCount = 1'000'000'000'000'000;

namespace detail {
/// A non-negative JSON integer (int64/uint64, or an integral double) at most kMaxTokenCount at
/// `key`, else nullopt.
inline std::optional<std::int64_t> json_count(const boost::json::object& o, boost::json::string_view key) noexcept {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = v->if_int64())
    return *i >= 0 && *i <= kMaxTokenCount ? std::optional<std::int64_t>(*i) : std::nullopt;
  if (const auto* u = v->if_uint64()) {
    return *u <= static_cast<std::uint64_t>(kMaxTokenCount) ? std::optional<std::int64_t>(static_cast<std::int64_t>(*u))
                                                             : std::nullopt;
  }
  if (const auto* d = v->if_double()) {
    if (*d >= 0 && *d <= static_cast<double>(kMaxTokenCount) &&
        static_cast<double>(static_cast<std::int64_t>(*d)) == *d) {
      return static_cast<std::int64_t>(*d);
    }
  }
  return std::nullopt;
}
}  // namespace detail

/// Reads an OpenAI `usage` object (Chat Completions response or the final
/// `stream_options.include_usage` chunk; https://platform.openai.com/docs/api-reference/chat/object):
/// `prompt_tokens`, `completion_tokens`, `prompt_tokens_details.{cached_tokens, audio_tokens}`,
/// `completion_tokens_details.{reasoning_tokens, audio_tokens, rejected_prediction_tokens}`, and
/// `total_tokens` to tell where reasoning tokens were counted: reasoning is reported beside the
/// completion tokens (xAI) when it exceeds them or when total = prompt + completion + reasoning.
/// `reported` is false — the usage is unknown, not zero — when `usage` is null, absent (pass a
/// null value), not an object, or lacks a valid `prompt_tokens` or `completion_tokens` (a
/// non-negative integer; counts sent as strings are not read). Optional details that are
/// malformed read as 0. The prompt's parts (cached, cache writes, audio) are cut to what is left of
/// `prompt_tokens`, in that order, as the cost counts them.
inline Usage usage_from_openai(const boost::json::value& usage) noexcept {
  Usage u;
  const auto* o = usage.if_object();
  if (o == nullptr) return u;
  const auto prompt = detail::json_count(*o, "prompt_tokens");
  const auto completion = detail::json_count(*o, "completion_tokens");
  if (!prompt || !completion) return u;
  u.reported = true;
  u.prompt_tokens = *prompt;
  u.completion_tokens = *completion;
  if (const auto* details = o->if_contains("prompt_tokens_details")) {
    if (const auto* d = details->if_object()) {
      u.cached_tokens = detail::json_count(*d, "cached_tokens").value_or(0);
      u.audio_input_tokens = detail::json_count(*d, "audio_tokens").value_or(0);
    }
  }
  if (const auto* details = o->if_contains("completion_tokens_details")) {
    if (const auto* d = details->if_object()) {
      u.reasoning_tokens = detail::json_count(*d, "reasoning_tokens").value_or(0);
      u.audio_output_tokens = detail::json_count(*d, "audio_tokens").value_or(0);
      u.rejected_prediction_tokens = detail::json_count(*d, "rejected_prediction_tokens").value_or(0);
    }
  }
  // Cache writes, as Anthropic names them (LiteLLM, and Tollgate's own OpenAI-shaped answers for
  // Claude, carry them beside OpenAI's fields): parts of prompt_tokens.
  if (const auto writes = detail::json_count(*o, "cache_creation_input_tokens")) {
    u.cache_write_tokens = *writes;
    if (const auto* cc = o->if_contains("cache_creation"); cc && cc->is_object()) {
      u.cache_write_1h_tokens = std::min(detail::json_count(cc->get_object(), "ephemeral_1h_input_tokens").value_or(0), *writes);
      u.cache_write_tokens = *writes - u.cache_write_1h_tokens;
    }
  }
  // The prompt's parts are parts of prompt_tokens (OpenAI: cached tokens are "present in the
  // prompt"): one reported beyond what is left of it is cut, as the cost counts it.
  u.fit_prompt_parts();
  if (u.reasoning_tokens > 0) {
    const auto total = detail::json_count(*o, "total_tokens");
    u.reasoning_outside_completion =
        u.reasoning_tokens > u.completion_tokens ||
        (total && u.prompt_tokens <= INT64_MAX - u.completion_tokens - u.reasoning_tokens &&
         *total == u.prompt_tokens + u.completion_tokens + u.reasoning_tokens);
  }
  return u;
}

/// The usage of an OpenAI `chat.completion` (or a chunk): usage_from_openai of its `usage`, and
/// the `service_tier` the response says it was served in (OpenAI reports it at the top level).
inline Usage usage_from_openai_response(const boost::json::object& response) noexcept {
  const auto* u = response.if_contains("usage");
  Usage out = u ? usage_from_openai(*u) : Usage{};
  if (const auto* st = response.if_contains("service_tier"); st && st->is_string())
    out.service_tier = std::string(st->get_string());
  return out;
}

/// Writes an OpenAI `usage` object: `{"prompt_tokens","completion_tokens","total_tokens",
/// "prompt_tokens_details":{"cached_tokens"}}`, total = prompt + completion.
inline boost::json::object usage_to_openai(const Usage& u) {
  boost::json::object o;
  o.reserve(4);
  o.emplace("prompt_tokens", u.prompt_tokens);
  o.emplace("completion_tokens", u.completion_tokens);
  o.emplace("total_tokens", u.prompt_tokens + u.completion_tokens);
  boost::json::object details;
  details.emplace("cached_tokens", u.cached_tokens);
  o.emplace("prompt_tokens_details", std::move(details));
  // Cache writes (Claude) have no OpenAI field: Anthropic's names beside OpenAI's, as LiteLLM does.
  if (const std::int64_t writes = u.cache_write_tokens + u.cache_write_1h_tokens; writes > 0) {
    o.emplace("cache_creation_input_tokens", writes);
    o.emplace("cache_creation", boost::json::object{{"ephemeral_5m_input_tokens", u.cache_write_tokens},
                                                    {"ephemeral_1h_input_tokens", u.cache_write_1h_tokens}});
  }
  return o;
}

}  // namespace tollgate::providers
