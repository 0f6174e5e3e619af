#pragma once
/// Token usage of one upstream response, as line items (tokens, never money), in the gateway's
/// internal terms. Provider readers (providers/usage.hpp) fill it from each API's usage shape;
/// budget/cost.hpp prices it. Plain data; thread-compatible.

#include <cstdint>
#include <string>

namespace tollgate::budget {

/// What one response consumed, by token kind.
///
/// Input side: `prompt_tokens` counts every input token (OpenAI's convention): the uncached text
/// tokens plus `cached_tokens`, `cache_write_tokens`, `cache_write_1h_tokens` and
/// `audio_input_tokens`, which are parts of it (Anthropic's `input_tokens` does not include its
/// cache tokens: its reader adds them).
/// Output side: `completion_tokens` is what the provider reports as completion tokens;
/// `audio_output_tokens`, `image_output_tokens` and `rejected_prediction_tokens` are parts of it;
/// `reasoning_tokens` are a part of it too unless `reasoning_outside_completion` (xAI reports
/// reasoning beside completion tokens, and bills both).
struct Usage {
  std::int64_t prompt_tokens = 0;          ///< all input tokens (OpenAI `prompt_tokens`)
  std::int64_t completion_tokens = 0;      ///< OpenAI `completion_tokens`, Anthropic `output_tokens`
  std::int64_t cached_tokens = 0;          ///< read from the prompt cache (part of prompt_tokens)
  std::int64_t cache_write_tokens = 0;     ///< written to the prompt cache, 5-minute TTL (part of prompt_tokens)
  std::int64_t cache_write_1h_tokens = 0;  ///< written to the prompt cache, 1-hour TTL (part of prompt_tokens)
  std::int64_t audio_input_tokens = 0;     ///< audio prompt tokens (part of prompt_tokens)
  std::int64_t reasoning_tokens = 0;       ///< `completion_tokens_details.reasoning_tokens`
  bool reasoning_outside_completion = false;  ///< reasoning_tokens are not included in completion_tokens
  std::int64_t audio_output_tokens = 0;    ///< audio completion tokens (part of completion_tokens)
  std::int64_t image_output_tokens = 0;    ///< image completion tokens (part of completion_tokens)
  std::int64_t rejected_prediction_tokens = 0;  ///< Predicted Outputs tokens not used (part of completion_tokens)
  std::int64_t web_search_calls = 0;       ///< server-side web-search tool calls
  std::string service_tier;                ///< the tier the response says served it ("default", "priority", "flex", ...); empty = not said
  bool reported = false;                   ///< false: the upstream reported no usage (unknown, not zero)

  /// The prompt split into its parts (tokens). Each part takes what it reports, at most what is
  /// left of prompt_tokens, in this order: cached, cache writes (5-minute), cache writes (1-hour),
  /// audio; `text` is the rest (the uncached text tokens). Negative counts read as 0. This is the
  /// split the cost prices (budget/cost.cpp), so no token is counted twice whatever the upstream
  /// claimed (e.g. more cached tokens than the prompt).
  struct PromptSplit {
    std::int64_t text = 0;
    std::int64_t cached = 0;
    std::int64_t cache_write = 0;
    std::int64_t cache_write_1h = 0;
    std::int64_t audio = 0;
  };
  [[nodiscard]] PromptSplit prompt_split() const noexcept {
    PromptSplit s;
    std::int64_t left = prompt_tokens > 0 ? prompt_tokens : 0;
    auto take = [&left](std::int64_t reported) {
      const std::int64_t n = reported <= 0 ? 0 : reported < left ? reported : left;
      left -= n;
      return n;
    };
    s.cached = take(cached_tokens);
    s.cache_write = take(cache_write_tokens);
    s.cache_write_1h = take(cache_write_1h_tokens);
    s.audio = take(audio_input_tokens);
    s.text = left;
    return s;
  }
  /// Sets the prompt's parts to prompt_split()'s, so that whoever writes this usage out again in
  /// another API's terms (Anthropic's `input_tokens` = prompt − cached − cache writes) gets parts
  /// that add up. The bill is unchanged. Called by the provider readers (providers/usage.hpp).
  void fit_prompt_parts() noexcept {
    const PromptSplit s = prompt_split();
    cached_tokens = s.cached;
    cache_write_tokens = s.cache_write;
    cache_write_1h_tokens = s.cache_write_1h;
    audio_input_tokens = s.audio;
  }

  /// Every output token billed: completion_tokens, plus reasoning_tokens when reported beside it.
  [[nodiscard]] std::int64_t billed_output_tokens() const noexcept {
    return reasoning_outside_completion ? completion_tokens + reasoning_tokens : completion_tokens;
  }
};

}  // namespace tollgate::budget
