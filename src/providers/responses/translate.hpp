#pragma once
/// Translation between the OpenAI Responses API (a client calling `/v1/responses`) and OpenAI
/// Chat Completions (Tollgate's internal format), for a deployment that does not speak the
/// Responses API itself (Anthropic, OpenAI-compatible servers, ...). OpenAI and Azure
/// deployments get the caller's body natively instead (docs/responses_api.md).
///
/// Contracts implemented: OpenAI API reference "Responses" (create: `input` items, `instructions`,
/// `tools`, `tool_choice`, `max_output_tokens`, `text.format`; the response object: `output`
/// items `message`/`function_call`, `status`, `incomplete_details`, `usage`).
///
/// All functions are pure (no I/O) and never throw except on allocation failure.

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/error.hpp"
#include "providers/usage.hpp"

namespace tollgate::providers::responses {

/// The first request feature only the Responses API itself can serve (a translated target cannot
/// express it), by its name as the caller wrote it: a built-in tool (`tools[i].type` other than
/// "function": web_search*, file_search, code_interpreter, computer_use*, image_generation, mcp,
/// local_shell, custom ...; the same in `tool_choice`), `previous_response_id`, `conversation`,
/// `background: true`, an `item_reference` input item, `prompt` (a stored prompt template).
/// nullopt when every feature translates. Examples: "tools[0].type=web_search_preview",
/// "previous_response_id".
std::optional<std::string> native_only_feature(const boost::json::object& req);

/// The first field of a Responses request that makes OpenAI add input the body does not show:
/// `previous_response_id` or `conversation` (the stored conversation), `prompt` (a stored prompt
/// template), an `item_reference` input item ("input[2].type=item_reference"). nullopt = none.
/// Its input can only be bounded by the model's context limit (pipeline/output_bound.hpp).
std::optional<std::string> hidden_input_field(const boost::json::object& req);

/// Responses request → OpenAI chat request. The caller must have checked native_only_feature.
///
/// - `instructions` → a leading system message; `input` a string → one user message; `input`
///   items: messages (`type` "message" or absent; role user/system/developer/assistant; content a
///   string or parts `input_text`/`output_text` → text, `input_image` {image_url, detail} →
///   image_url part, `input_file` {file_data, filename} → file part, `refusal` → text),
///   `function_call` {call_id, name, arguments} → an assistant message's `tool_calls` (consecutive
///   calls join one message), `function_call_output` {call_id, output} → a `tool` message,
///   `reasoning` items dropped (a translated target cannot read them).
/// - `tools` (function: {name, description, parameters, strict}) → chat function tools;
///   `tool_choice` "auto"/"none"/"required" kept, {type:function,name} → named function;
///   `parallel_tool_calls`, `temperature`, `top_p`, `user`, `stream` copied (`stream` adds
///   `stream_options.include_usage`); `metadata` is only echoed in the response; `max_output_tokens` → `max_tokens`;
///   `text.format` json_schema {name, schema, strict, description} / json_object →
///   `response_format`; `reasoning.effort` → `reasoning_effort`; `store`, `truncation`, `include`,
///   `service_tier` and `safety_identifier` are not sent (nothing stores a translated answer).
/// Errors (400 invalid_request_error naming the parameter): `input` missing or of another type,
/// an item or part of an unknown or malformed type, `input_image` by `file_id`, a tool without a
/// name, `max_output_tokens` not a positive integer, a `text.format` of another type.
std::expected<boost::json::object, core::Error> request_to_chat(const boost::json::object& req);

/// Usage in the Responses API's shape: {input_tokens, input_tokens_details{cached_tokens},
/// output_tokens (reasoning included), output_tokens_details{reasoning_tokens}, total_tokens}.
boost::json::object usage_to_responses(const Usage& u);

/// Reads a Responses API `usage` object (the shape above; a response's own or
/// response.completed's): prompt = input_tokens, cached = input_tokens_details.cached_tokens,
/// completion = output_tokens (reasoning included in it), reasoning =
/// output_tokens_details.reasoning_tokens. `reported` false when it is not an object or lacks a
/// valid input_tokens or output_tokens (unknown, not zero).
Usage usage_from_responses(const boost::json::value& usage) noexcept;

/// What a response object repeats of its request (the API reference's response object echoes
/// them): instructions, max_output_tokens, metadata, parallel_tool_calls, temperature, top_p,
/// tool_choice, tools, text, user, reasoning, previous_response_id (null), store (false: a
/// translated answer is never stored), truncation, with the API's defaults when absent.
boost::json::object response_echo(const boost::json::object& req);

/// A response object: `echo` (response_echo of the request) plus id, object "response",
/// created_at (Unix seconds), status, error null, incomplete_details, model, output, usage
/// (null when `usage` is nullopt). `status` "incomplete" gets incomplete_details
/// {reason:"max_output_tokens"}.
boost::json::object make_response(const boost::json::object& echo, std::string_view id, std::int64_t created_at,
                                  std::string_view model, std::string_view status, boost::json::array output,
                                  const std::optional<Usage>& usage);

/// A new response id: "resp_" followed by 48 hex digits. `prefix` "msg_"/"fc_" for output items.
std::string new_item_id(std::string_view prefix);

/// OpenAI `chat.completion` → response object (make_response): the first choice's text → one
/// `message` output item with an `output_text` part (a refusal → a `refusal` part), its
/// tool_calls → `function_call` items {id, call_id, name, arguments, status}; finish_reason
/// "length" → status "incomplete", anything else "completed"; usage per usage_to_responses
/// (null when the completion has none).
boost::json::object chat_response_to_response(const boost::json::object& completion, const boost::json::object& echo,
                                              std::string_view model);

}  // namespace tollgate::providers::responses
