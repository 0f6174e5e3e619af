#pragma once
/// Which client API a call speaks (its request body and its answer are in that API's shape).
/// Every call, whatever its API, goes through the one attempt loop; the deployment's provider
/// says whether (and how) it serves the API (providers/provider.hpp "Operations").

#include <string_view>

namespace tollgate::providers {

/// A client API, i.e. the operation a call asks for.
enum class CallApi {
  chat,         ///< OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat)
  messages,     ///< Anthropic Messages (https://docs.anthropic.com/en/api/messages), native body
  responses,    ///< OpenAI Responses (https://platform.openai.com/docs/api-reference/responses)
  embeddings,   ///< OpenAI Embeddings (https://platform.openai.com/docs/api-reference/embeddings)
  completions,  ///< OpenAI legacy Completions (https://platform.openai.com/docs/api-reference/completions)
};

/// Human name for error messages ("chat completions", "embeddings", ...).
constexpr std::string_view api_name(CallApi a) noexcept {
  switch (a) {
    case CallApi::chat: return "chat completions";
    case CallApi::messages: return "messages";
    case CallApi::responses: return "responses";
    case CallApi::embeddings: return "embeddings";
    case CallApi::completions: return "completions";
  }
  return "chat completions";
}

/// LiteLLM's spend-log `call_type` of a call of this API ("acompletion", "anthropic_messages",
/// "aresponses", "aembedding", "atext_completion"), as its proxy writes them.
constexpr std::string_view litellm_call_type(CallApi a) noexcept {
  switch (a) {
    case CallApi::chat: return "acompletion";
    case CallApi::messages: return "anthropic_messages";
    case CallApi::responses: return "aresponses";
    case CallApi::embeddings: return "aembedding";
    case CallApi::completions: return "atext_completion";
  }
  return "acompletion";
}

/// Whether calls of this API may stream (embeddings never do).
constexpr bool api_streams(CallApi a) noexcept { return a != CallApi::embeddings; }

/// Whether an answer of this API has generated output tokens to bound (embeddings have none:
/// the reservation is the input's cost only).
constexpr bool api_has_output(CallApi a) noexcept { return a != CallApi::embeddings; }

}  // namespace tollgate::providers
