#pragma once
/// Translation between OpenAI Chat Completions (Tollgate's internal format) and the Anthropic
/// Messages API, in both directions, for whole bodies and for streams.
///
/// Contracts implemented:
/// - OpenAI: API reference "Chat Completions" (create, the chat completion object, the chat
///   completion chunk object, `stream_options.include_usage`).
/// - Anthropic: API reference "Messages" (create), "Streaming Messages" (event flow
///   message_start → content_block_start/delta/stop* → message_delta → message_stop, `ping`,
///   `error`), "Errors" (error body and types), tool use docs (`tool_use` / `tool_result`).
///
/// All functions are pure (no I/O). Inputs are trusted to be JSON objects but not to follow the
/// schema: wrongly typed optional fields are skipped rather than thrown on. No function throws
/// except on allocation failure.

#include "http/sse.hpp"
#include "providers/usage.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tollgate::providers::anthropic {

// ---------------------------------------------------------------------------------------------
// OpenAI → Anthropic (Tollgate calling an Anthropic deployment)
// ---------------------------------------------------------------------------------------------

/// OpenAI chat request → Anthropic Messages request body (`POST /v1/messages`).
///
/// - `model` := `upstream_model`.
/// - `system`/`developer` messages (string or text parts) → top-level `system` string, joined
///   with "\n" in order.
/// - `user`/`assistant` content (string or parts) → content block arrays: `text` → text block
///   (empty texts dropped), `image_url` with a `data:<media>;base64,<data>` URL → image block
///   with a base64 source, other URLs → image block with a url source; `file` parts with a
///   base64 `file_data` data URL → document block. A part's `cache_control` is kept.
/// - assistant `tool_calls` → `tool_use` blocks (`arguments` JSON string parsed; an unparsable
///   or non-object string gives `{}`); `tool` messages → `tool_result` blocks in a user message.
/// - Consecutive messages with the same resulting role are merged into one message (Anthropic
///   requires alternation; it also merges consecutive tool results into one user turn).
///   Messages left without any block are dropped.
/// - `max_completion_tokens`, else `max_tokens`, else `default_max_tokens` → `max_tokens`
///   (required by Anthropic); `temperature`, `top_p` copied; `stop` (string or array) →
///   `stop_sequences`; `stream` copied; `tools` (function tools) → `{name, description,
///   input_schema}`; `tool_choice` "auto"→{type:auto}, "required"→{type:any}, "none"→
///   {type:none}, {type:function,function:{name}}→{type:tool,name}; `parallel_tool_calls:
///   false` → `tool_choice.disable_parallel_tool_use: true`; `user` → `metadata.user_id`.
/// - Every other OpenAI field (n, stream_options, logprobs, presence_penalty, seed,
///   response_format, ...) is dropped.
boost::json::object chat_request_to_messages(const boost::json::object& chat, std::string_view upstream_model,
                                             std::int64_t default_max_tokens);

/// Anthropic message (non-streaming `/v1/messages` response) → OpenAI `chat.completion`.
///
/// `id` kept (msg_...), `object` "chat.completion", `created` = now (Unix seconds), `model` :=
/// `model`; one choice: text blocks concatenated into `message.content` (null when there is no
/// text but there are tool calls), `tool_use` blocks → `message.tool_calls` (`arguments` =
/// serialized `input`); other blocks (thinking, ...) dropped. `stop_reason` → `finish_reason`
/// per `finish_reason_from_stop_reason`. Usage per `usage_from_anthropic`.
boost::json::object messages_response_to_chat(const boost::json::object& msg, std::string_view model);

/// Anthropic `stop_reason` → OpenAI `finish_reason`: end_turn, stop_sequence, pause_turn →
/// "stop"; max_tokens → "length"; tool_use → "tool_calls"; refusal → "content_filter";
/// null/absent → nullopt; any other value → "stop".
std::optional<std::string_view> finish_reason_from_stop_reason(const boost::json::value* stop_reason) noexcept;

/// Anthropic `usage` object → Usage: prompt = input_tokens + cache_read_input_tokens +
/// cache_creation_input_tokens, completion = output_tokens, cached = cache_read_input_tokens.
/// Non-object → `reported == false`.
Usage usage_from_anthropic(const boost::json::value& usage) noexcept;

/// Converts an Anthropic Messages event stream into OpenAI `chat.completion.chunk` payloads.
///
/// Feed every SSE event of the upstream stream, in order, to `on_event`; it appends zero or
/// more chunk JSON texts (the SSE data payloads, without `data: ` and without the final
/// `[DONE]`, which the caller writes) to `out_chunks`:
/// - message_start → `{delta:{role:"assistant",content:""}}` (once);
/// - text block start with text / `text_delta` → `{delta:{content}}`;
/// - `tool_use` block start → `{delta:{tool_calls:[{index,id,type:"function",function:{name,
///   arguments:""}}]}}` (index counts tool calls from 0); `input_json_delta` →
///   `{delta:{tool_calls:[{index,function:{arguments:<fragment>}}]}}`;
/// - message_delta → `{delta:{},finish_reason}`;
/// - message_stop → `finished()`; with `include_usage`, one last chunk `{choices:[],usage}`.
/// - `ping`, thinking blocks and unknown events are ignored; an `error` event (or a data
///   payload that is not a JSON object) sets `error()`; events after message_stop are ignored.
/// Every chunk has `id` (the upstream message id once message_start was seen), `object`,
/// `created`, `model`; with `include_usage` every other chunk carries `usage: null` (the
/// OpenAI shape). Not thread-safe; one instance per stream.
class MessagesStreamToChat {
 public:
  /// `model`: the name reported to the caller; `include_usage`: emit the final usage chunk
  /// (OpenAI `stream_options.include_usage`); `created`: Unix seconds for `created` (0 = now).
  explicit MessagesStreamToChat(std::string model, bool include_usage = false, std::int64_t created = 0);
  /// Neither copyable nor movable (it owns a parse arena): keep it in the stream's frame.
  MessagesStreamToChat(const MessagesStreamToChat&) = delete;
  MessagesStreamToChat& operator=(const MessagesStreamToChat&) = delete;

  /// Processes one upstream SSE event (parsed once); see the class comment for the output.
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out_chunks);

  /// Usage so far: input (+cache) from message_start, output from the last message_delta
  /// (cumulative counts: the last value wins). `reported` once either carried usage.
  [[nodiscard]] Usage usage() const noexcept { return usage_; }
  /// True once the usage is the whole bill: message_start's counts were read and a message_delta
  /// reported the (cumulative) output tokens.
  [[nodiscard]] bool usage_final() const noexcept { return usage_.reported && output_seen_; }
  /// True once message_stop was seen (the stream completed normally), or end_without_stop()
  /// accepted its end.
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The upstream closed cleanly without message_stop: when a message_delta gave the stop reason
  /// and the usage is final, the answer is whole — handled as message_stop (appends the usage
  /// chunk when asked) and true; else false (the stream was cut).
  bool end_without_stop(std::vector<std::string>& out_chunks);
  /// The Anthropic error object (`{"type":..,"message":..}`) of an `error` event, if any.
  [[nodiscard]] const std::optional<boost::json::object>& error() const noexcept { return error_; }
  /// The OpenAI finish_reason from message_delta, if seen.
  [[nodiscard]] const std::optional<std::string>& finish_reason() const noexcept { return finish_reason_; }

 private:
  void begin_chunk(std::string& s) const;
  void emit_delta(std::string_view delta_json, std::string_view finish_reason, std::vector<std::string>& out);
  void rebuild_prefix();
  /// message_stop: finished, and the usage chunk when asked.
  void finish(std::vector<std::string>& out);

  std::string model_;
  std::string id_;
  std::int64_t created_;
  bool include_usage_;
  bool started_ = false;
  bool finished_ = false;
  std::string prefix_;  // `{"id":..,"object":..,"created":..,"model":..,` shared by all chunks
  std::vector<std::int64_t> tool_index_by_block_;  // Anthropic block index → OpenAI tool index (-1: not a tool)
  std::int64_t next_tool_index_ = 0;
  Usage usage_;
  bool output_seen_ = false;  // a message_delta reported the (cumulative) output tokens
  std::optional<std::string> finish_reason_;
  std::optional<boost::json::object> error_;
  // Per-event parse arena: a stack-sized first block, so typical events parse without heap
  // allocation; released at the start of each event. The parser keeps its buffers across events.
  alignas(std::max_align_t) unsigned char arena_[4096];
  boost::json::monotonic_resource mr_{arena_, sizeof arena_};
  boost::json::parser parser_;
};

// ---------------------------------------------------------------------------------------------
// Anthropic → OpenAI (a client speaking /v1/messages, served through the OpenAI pipeline)
// ---------------------------------------------------------------------------------------------

/// Anthropic Messages request (client → `/v1/messages`) → OpenAI chat request.
///
/// Validation (errors are Anthropic-style `invalid_request_error` messages, e.g.
/// "max_tokens: Field required"): `model` must be a string, `messages` an array of objects with
/// role "user"/"assistant" and string or array content, `max_tokens` a positive integer.
/// Mapping: `system` (string or text blocks, joined with "\n") → leading system message; text
/// blocks → text parts (a single text becomes plain string content); image blocks → image_url
/// parts (base64 → data: URL); base64 document blocks → file parts; assistant `tool_use` →
/// `tool_calls` (input serialized); user `tool_result` blocks → `tool` messages placed before
/// the rest of that user turn (content texts joined with "\n"; `is_error` has no OpenAI
/// equivalent and is dropped); thinking blocks dropped. `max_tokens`, `temperature`, `top_p` copied; `stop_sequences` → `stop`; `tools`
/// (custom tools with input_schema) → function tools; `tool_choice` back (any→"required",
/// tool→named function; `disable_parallel_tool_use` → `parallel_tool_calls:false`);
/// `stream` → `stream` plus `stream_options.include_usage: true`; `metadata.user_id` → `user`.
std::expected<boost::json::object, std::string> messages_request_to_chat(const boost::json::object& req);

/// OpenAI `chat.completion` → Anthropic message. `id` = "msg_" + id unless it already starts
/// with "msg_"; `model` := `model`; content = a text block (message.content, or message.refusal
/// when there is no content) followed by tool_use blocks (arguments parsed; unparsable → {});
/// `stop_reason` per `stop_reason_from_finish_reason`; `stop_sequence` null; usage:
/// input_tokens = prompt_tokens − cached_tokens, cache_read_input_tokens = cached_tokens,
/// cache_creation_input_tokens = 0, output_tokens = completion_tokens (so the sum rule of
/// `usage_from_anthropic` round-trips).
boost::json::object chat_response_to_messages(const boost::json::object& chat, std::string_view model);

/// OpenAI `finish_reason` → Anthropic `stop_reason`: stop → end_turn, length → max_tokens,
/// tool_calls/function_call → tool_use, content_filter → refusal, other strings → end_turn,
/// null/absent → nullopt.
std::optional<std::string_view> stop_reason_from_finish_reason(const boost::json::value* finish_reason) noexcept;

/// One Anthropic SSE event to write: (event name, data JSON).
using AnthropicSseEvent = std::pair<std::string, std::string>;

/// Converts an OpenAI chunk stream into Anthropic Messages stream events.
///
/// `on_chunk` for every parsed `chat.completion.chunk` (not for `[DONE]`), then `finish` once
/// at the end of the upstream stream. Output follows "Streaming Messages": message_start (on
/// the first chunk; usage input_tokens 0 — unknown until the usage chunk), then per content
/// block content_block_start / content_block_delta (text_delta or input_json_delta) /
/// content_block_stop, then message_delta (stop_reason; usage.output_tokens, plus input_tokens
/// and cache_read_input_tokens when the OpenAI usage chunk arrived) and message_stop. The
/// final pair is emitted as soon as both finish_reason and usage are known, else by `finish`.
/// Not thread-safe; one instance per stream.
class ChatStreamToMessages {
 public:
  /// `model`: the model name written into message_start.
  explicit ChatStreamToMessages(std::string model);

  /// Processes one OpenAI chunk; appends Anthropic events to `out`. Chunks after the final
  /// message_stop are ignored.
  void on_chunk(const boost::json::object& chunk, std::vector<AnthropicSseEvent>& out);

  /// End of the upstream stream: closes any open block and emits message_delta (stop_reason
  /// null when no finish_reason ever arrived) and message_stop, unless already emitted.
  /// Emits message_start first if no chunk was seen.
  void finish(std::vector<AnthropicSseEvent>& out);

  /// Usage the upstream reported before its usage chunk (an Anthropic upstream's message_start
  /// gives input tokens first): used for message_start.usage when no usage is known yet.
  void note_usage(const Usage& u) noexcept {
    if (u.reported && !started_) early_usage_ = u;
  }

  /// Usage from the OpenAI usage chunk, `reported == false` when none arrived.
  [[nodiscard]] Usage usage() const noexcept { return usage_; }
  /// True once message_stop was emitted.
  [[nodiscard]] bool finished() const noexcept { return stopped_; }

 private:
  enum class Block { none, text, tool };
  void start(std::string_view chunk_id, std::vector<AnthropicSseEvent>& out);
  void close_block(std::vector<AnthropicSseEvent>& out);
  void emit_final(std::vector<AnthropicSseEvent>& out);

  std::string model_;
  bool started_ = false;
  bool stopped_ = false;
  Block open_ = Block::none;
  std::int64_t block_index_ = -1;       // index of the open (or last) Anthropic block
  std::int64_t open_tool_index_ = -1;   // OpenAI tool_calls[].index of the open tool block
  std::string open_tool_id_;            // OpenAI tool_calls[].id of the open tool block
  bool tool_delivered_ = false;         // a tool_use block was streamed (stop_reason tool_use)
  std::optional<std::string> stop_reason_;
  bool finish_seen_ = false;
  Usage usage_;
  Usage early_usage_;  // input tokens known before the usage chunk (note_usage)
};

// ---------------------------------------------------------------------------------------------
// Errors ("Errors" page of the Anthropic API docs)
// ---------------------------------------------------------------------------------------------

/// `{"type":"error","error":{"type":<type>,"message":<message>}}`.
boost::json::object anthropic_error_body(std::string_view type, std::string_view message);

/// Anthropic error type for an HTTP status: 400 invalid_request_error, 401
/// authentication_error, 402 billing_error, 403 permission_error, 404 not_found_error, 413
/// request_too_large, 429 rate_limit_error, 504 timeout_error, 503/529 overloaded_error, other
/// 5xx (and anything below 400) api_error, other 4xx invalid_request_error.
std::string anthropic_error_type_for_status(int status);

/// Fields of an Anthropic error: `type` (e.g. "overloaded_error"), `code` (Anthropic sends
/// none; filled from `error.code` when a proxy adds one, else empty), `message`.
struct ErrorFields {
  std::string type;
  std::string code;
  std::string message;
};

/// Reads an Anthropic error body `{"type":"error","error":{"type","message"}}`, the bare inner
/// object `{"type","message"}`, or a stream `error` event payload. Missing fields are empty.
ErrorFields parse_anthropic_error(const boost::json::value& body);

}  // namespace tollgate::providers::anthropic
