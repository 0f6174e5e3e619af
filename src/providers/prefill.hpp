#pragma once
/// Assistant prefill (issue 13 §3): which deployments can continue an answer from a final
/// assistant message, and how that message is written for each of them. The text a cut stream
/// delivered is sent this way to the target asked to continue it (docs/streaming.md).
///
/// Sources: Anthropic Messages API "Prefill Claude's response" (a final `assistant` message is
/// continued; its content may not end with whitespace); Amazon Bedrock Converse with Anthropic
/// models (the same rule); Mistral chat completions (`prefix: true` on the final assistant
/// message); vLLM's OpenAI-compatible server (`continue_final_message: true`,
/// `add_generation_prompt: false`).

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "config/config.hpp"

namespace tollgate::providers {

/// Whether `d` may be asked to continue a final assistant message: `model_info.
/// supports_assistant_prefill` when set, else the provider's default — true for anthropic/,
/// bedrock/ Anthropic models (upstream model containing "anthropic.") and mistral/, false for
/// every other provider (OpenAI and Azure answer such a request anew instead of continuing it).
bool accepts_prefill(const config::Deployment& d) noexcept;

/// The delivered text as a prefill: trailing whitespace removed (Anthropic refuses a final
/// assistant message that ends with it; every provider continues the text as well without it).
std::string_view prefill_text(std::string_view delivered) noexcept;

/// The text of `body`'s final message (an OpenAI chat or Anthropic Messages request) when its
/// role is `assistant` — the caller's own prefill: its string content, or its text parts /
/// blocks joined. nullopt when the last message is not the assistant's (or there is none).
std::optional<std::string> final_assistant_text(const boost::json::object& body);

/// Appends the final assistant message `prefill` to `body`, an OpenAI chat request (`messages`
/// array; an Anthropic Messages request has the same member and roles), or with `replace` sets
/// the content of its last message (the prefill of an earlier continuation). `content_blocks`:
/// the content as one Anthropic text block instead of a string. A body without a `messages`
/// array is left as it is.
void put_prefill(boost::json::object& body, std::string_view prefill, bool content_blocks, bool replace);

/// The request members `d` needs to treat the final assistant message as a prefix rather than a
/// turn to answer, added to `body` (an OpenAI chat request whose last message is the prefill):
/// `prefix: true` on that message for mistral/; vLLM's `continue_final_message: true` and
/// `add_generation_prompt: false` for other OpenAI-style deployments that accept a prefill;
/// nothing for Anthropic and Bedrock, whose translation continues a final assistant message.
void mark_prefill(const config::Deployment& d, boost::json::object& body);

}  // namespace tollgate::providers
