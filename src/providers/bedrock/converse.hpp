#pragma once
/// Translation between OpenAI Chat Completions (Tollgate's internal format) and the Amazon
/// Bedrock Converse API, whole bodies (the stream is converse_stream.hpp).
/// Contract: Bedrock API reference "Converse"
/// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html) and its
/// types Message, ContentBlock, SystemContentBlock, ToolConfiguration, ToolChoice,
/// InferenceConfiguration, TokenUsage, StopReason. Pure; inputs are JSON objects whose optional
/// fields may be wrongly typed (skipped, never thrown on).

#include <cstdint>
#include <optional>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "providers/usage.hpp"

namespace tollgate::providers::bedrock {

/// OpenAI chat request → Converse request body (the model id is in the URL, not the body).
/// - `system`/`developer` messages → `system: [{text}]`; `user`/`assistant` content (string or
///   parts) → `content` blocks: `text` → `{text}`, `image_url` with a base64 `data:image/<fmt>`
///   URL → `{image:{format, source:{bytes}}}` (other URLs cannot be sent: dropped); a part's
///   `cache_control` → a `{cachePoint:{type:"default"}}` block after it.
/// - assistant `tool_calls` → `{toolUse:{toolUseId, name, input}}` (arguments parsed; invalid →
///   `{}`); `tool` messages → user `{toolResult:{toolUseId, content:[{text}]}}`; consecutive
///   messages of one role are merged (Converse requires alternation); empty ones dropped.
/// - `max_completion_tokens`, else `max_tokens` → `inferenceConfig.maxTokens`; `temperature`,
///   `top_p` → `temperature`, `topP`; `stop` → `stopSequences`.
/// - `tools` (function tools) → `toolConfig.tools[].toolSpec{name, description,
///   inputSchema.json}`; `tool_choice` auto → `{auto:{}}`, required → `{any:{}}`, a named
///   function → `{tool:{name}}`, none → no toolChoice (Converse has no "none").
/// - `thinking` (Anthropic's object, as LiteLLM accepts it) → `additionalModelRequestFields.thinking`;
///   `reasoning_effort` low/medium/high → thinking budget 1024/2048/4096 (LiteLLM's mapping).
/// Every other OpenAI field is dropped.
boost::json::object chat_to_converse(const boost::json::object& chat);

/// Converse response → OpenAI `chat.completion` (`id` "chatcmpl-bedrock-<n>", `created` now,
/// `model` := `model`): text blocks joined into `message.content` (null when only tool calls),
/// `toolUse` → `tool_calls` (arguments = serialized input), `reasoningContent.reasoningText.text`
/// → `message.reasoning_content`; `stopReason` per finish_reason_from_stop_reason; usage per
/// usage_from_converse, in OpenAI shape.
boost::json::object converse_to_chat(const boost::json::object& response, std::string_view model);

/// Converse `stopReason` → OpenAI finish_reason: end_turn, stop_sequence → "stop"; max_tokens →
/// "length"; tool_use → "tool_calls"; guardrail_intervened, content_filtered → "content_filter";
/// anything else → "stop".
std::string_view finish_reason_from_stop_reason(std::string_view stop_reason) noexcept;

/// Converse `usage` (TokenUsage) → Usage: prompt = inputTokens + cacheReadInputTokens +
/// cacheWriteInputTokens (Bedrock, like Anthropic, counts cache tokens apart from inputTokens),
/// completion = outputTokens (reasoning included: Bedrock reports no separate count),
/// cached = cacheReadInputTokens, cache_write = cacheWriteInputTokens. `reported` false unless
/// inputTokens and outputTokens are non-negative integers.
Usage usage_from_converse(const boost::json::value& usage) noexcept;

}  // namespace tollgate::providers::bedrock
