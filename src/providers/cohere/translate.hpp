#pragma once
/// Translation between OpenAI Chat Completions (Tollgate's internal format) and Cohere's v2 Chat
/// API (POST https://api.cohere.com/v2/chat; docs.cohere.com/reference/chat and
/// /reference/chat-stream), whole bodies and its typed SSE stream.
///
/// Pure functions; inputs are trusted to be JSON objects but not to follow the schema.

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "http/sse.hpp"
#include "providers/chat_chunks.hpp"
#include "providers/usage.hpp"

namespace tollgate::providers::cohere {

/// OpenAI chat request → Cohere v2 chat body. messages: system/developer → system (text), user
/// → text and image_url parts (Cohere's own part shapes), assistant → content text plus
/// `tool_calls` (id, type, function {name, arguments: JSON string}, as OpenAI), tool →
/// {role: tool, tool_call_id, content}; tools copied (same function shape); `max_tokens` (else
/// `max_completion_tokens`), temperature, seed, frequency_penalty, presence_penalty copied;
/// top_p → p; stop → stop_sequences (array); response_format json_object → {type: json_object},
/// json_schema → {type: json_object, json_schema: <schema>}; tool_choice "required" →
/// "REQUIRED", "none" → "NONE" (auto: omitted); `stream` copied.
boost::json::object chat_to_cohere(const boost::json::object& chat, std::string_view model, bool stream);

/// Cohere `usage` → Usage: the bill is `billed_units` (prompt = input_tokens, completion =
/// output_tokens); `tokens` (the model's own counts, including the prompt template) is not
/// what Cohere charges. `reported` false unless billed_units has both counts.
Usage usage_from_cohere(const boost::json::value* usage) noexcept;

/// Cohere finish_reason → OpenAI: COMPLETE, STOP_SEQUENCE → "stop"; MAX_TOKENS → "length";
/// TOOL_CALL, or any call delivered → "tool_calls"; anything else → "stop".
std::string_view finish_reason(std::string_view cohere_reason, bool delivered_tool_calls) noexcept;

/// A 2xx Cohere chat body → OpenAI `chat.completion` (text parts joined into content,
/// tool_calls kept, tool_plan dropped), its usage in `usage`. Error: not a Cohere chat answer.
std::expected<boost::json::object, std::string> response_to_chat(std::string_view body, std::string_view model,
                                                                  Usage& usage);

/// Converts Cohere's v2 chat stream into OpenAI chunk payloads: message-start → role chunk (the
/// message id becomes the chunk id); content-delta → content; tool-call-start → a tool call
/// with its id and name; tool-call-delta → argument fragments; message-end → finish chunk,
/// usage (with `include_usage`: the usage chunk) and finished(). tool-plan-delta, content-start
/// /-end, tool-call-end, citation events are not relayed. A message-end with finish_reason
/// ERROR (or a `delta.error`), or data that is not a JSON object, sets error().
class StreamToChat {
 public:
  StreamToChat(std::string model, bool include_usage);
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out);
  bool finished() const { return done_; }
  Usage usage() const { return usage_; }
  bool usage_final() const { return done_ && usage_.reported; }
  const std::optional<std::string>& error() const { return error_; }

 private:
  ChunkWriter w_;
  bool include_usage_;
  bool started_ = false;
  bool done_ = false;
  std::int64_t tool_calls_ = 0;
  Usage usage_;
  std::optional<std::string> error_;
};

}  // namespace tollgate::providers::cohere
