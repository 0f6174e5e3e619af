#pragma once
/// Translation between OpenAI Chat Completions (Tollgate's internal format) and Google's
/// Gemini `generateContent` API (the same body on the Gemini API and on Vertex AI).
///
/// Contracts implemented:
/// - Gemini API reference "Generating content" (https://ai.google.dev/api/generate-content):
///   GenerateContentRequest {contents[], systemInstruction, tools[].functionDeclarations[],
///   toolConfig.functionCallingConfig, generationConfig}, GenerateContentResponse
///   {candidates[].content.parts[], finishReason, promptFeedback.blockReason, usageMetadata}.
/// - Vertex AI "generateContent" (projects.locations.publishers.models.generateContent): the same
///   message types.
/// - OpenAI API reference "Chat Completions" (request, chat completion object, chunk object).
///
/// Pure functions (no I/O). Inputs must be JSON objects but need not follow the schema: wrongly
/// typed optional fields are skipped. Nothing throws except on allocation failure.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "providers/usage.hpp"

namespace tollgate::providers::gemini {

/// OpenAI chat request → GenerateContentRequest body.
///
/// - `system` / `developer` messages → `systemInstruction.parts[].text` (in order).
/// - `user` → role "user", `assistant` → role "model"; content string or parts: `text` → text
///   part; `image_url` / `file` with a `data:<mime>;base64,<data>` URL → `inlineData
///   {mimeType, data}`; other URLs → `fileData {fileUri}` (mimeType guessed from the extension,
///   else `image/jpeg`); assistant `tool_calls` → `functionCall {name, args}` (arguments parsed,
///   `{}` when not a JSON object); `tool` messages → `functionResponse {name, response}` in a
///   user turn (the name from the assistant call with that `tool_call_id`; a JSON-object content
///   is the response, anything else `{"content": text}`).
/// - Consecutive turns of one role are merged (Gemini expects alternation).
/// - `max_tokens` (what set_output_limit writes), else `max_completion_tokens` →
///   `generationConfig.maxOutputTokens`; `temperature`, `top_p` → `topP`, `top_k` → `topK`,
///   `n` → `candidateCount`, `stop` (string or list) → `stopSequences`, `presence_penalty`,
///   `frequency_penalty`, `seed`; `response_format` json_object → `responseMimeType:
///   application/json`, json_schema → also `responseSchema` (the schema with JSON-Schema-only
///   keys Gemini's OpenAPI subset rejects removed: `additionalProperties`, `$schema`, `strict`).
/// - `tools` (function tools) → one `tools[].functionDeclarations[]` {name, description,
///   parameters (same cleaning)}; `tool_choice` none/auto/required → mode NONE/AUTO/ANY, a named
///   function → ANY with `allowedFunctionNames`.
/// - Everything else (stream, stream_options, user, logprobs, ...) is dropped.
boost::json::object chat_request_to_gemini(const boost::json::object& chat);

/// Gemini `finishReason` → OpenAI `finish_reason`: STOP → "stop" ("tool_calls" when the
/// candidate called a function), MAX_TOKENS → "length", SAFETY, RECITATION, BLOCKLIST,
/// PROHIBITED_CONTENT, SPII, IMAGE_SAFETY, LANGUAGE → "content_filter", anything else → "stop".
std::string_view finish_reason_from_gemini(std::string_view reason, bool called_function) noexcept;

/// `usageMetadata` → Usage: prompt = promptTokenCount + toolUsePromptTokenCount, cached =
/// cachedContentTokenCount (a part of promptTokenCount), completion = candidatesTokenCount +
/// thoughtsTokenCount (Google bills thinking at the output price), reasoning = thoughtsTokenCount
/// (inside completion), audio input = the AUDIO entries of promptTokensDetails (the whole prompt,
/// cached content included) less those of cacheTokensDetails (the cached content, priced as
/// cached): Gemini API `UsageMetadata` reference. `reported` false
/// when the value is not an object or has no valid promptTokenCount.
Usage usage_from_gemini(const boost::json::value& usage_metadata) noexcept;

/// Usage → OpenAI `usage` (usage_to_openai plus `completion_tokens_details.reasoning_tokens`).
boost::json::object usage_to_openai_with_reasoning(const Usage& u);

/// GenerateContentResponse → OpenAI `chat.completion`: `id` = responseId (else generated),
/// `model` = modelVersion (else `model`); one choice per candidate (by `index`): text parts
/// concatenated (parts marked `thought` left out), `functionCall` parts → `tool_calls`
/// (`call_<i>` ids, arguments = serialized args), finish reason per finish_reason_from_gemini.
/// A prompt blocked before generation (`promptFeedback.blockReason`, no candidates) → one choice
/// with empty content and finish_reason "content_filter". `usage` from usageMetadata.
boost::json::object gemini_response_to_chat(const boost::json::object& response, std::string_view model);

}  // namespace tollgate::providers::gemini
