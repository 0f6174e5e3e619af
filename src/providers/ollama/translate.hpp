#pragma once
/// Translation between OpenAI Chat Completions (Tollgate's internal format) and Ollama's native
/// API: POST /api/chat and POST /api/generate, whole bodies and NDJSON streams.
///
/// Contracts: Ollama docs/api.md (https://github.com/ollama/ollama/blob/main/docs/api.md,
/// "Generate a chat completion", "Generate a completion"): requests {model, messages | prompt,
/// images (base64, no data: prefix), tools, format ("json" or a JSON schema), options {num_predict,
/// temperature, top_p, stop, seed, ...}, stream (default true)}; answers {message {role,
/// content, tool_calls [{function {name, arguments: OBJECT}}]} | response, done, done_reason,
/// prompt_eval_count, eval_count}; a stream is one such object per line, the last with
/// done: true and the counts; errors {"error": "..."}. `ollama/` prompts are flattened from the
/// messages as LiteLLM does (litellm_core_utils/prompt_templates/factory.py `ollama_pt`), and
/// its tools are asked for as JSON output (LiteLLM's `format: json` function calling for
/// /api/generate).
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

namespace tollgate::providers::ollama {

/// OpenAI chat request → /api/chat body. `max_tokens` (else `max_completion_tokens`) →
/// options.num_predict; temperature, top_p, seed, frequency_penalty, presence_penalty → options;
/// `stop` (string or array) → options.stop (array); response_format json_object → format "json",
/// json_schema → format = its schema; tools copied (same function shape); messages: system and
/// developer → system, text parts joined, `image_url` data: URLs → `images` (base64 payloads),
/// assistant tool_calls with their JSON-string arguments parsed into objects, tool messages
/// keep their content and get `tool_name` from the call they answer. `stream` always written
/// (Ollama streams unless told not to). Error: an image given by a non-data URL (Ollama takes
/// images inline only).
std::expected<boost::json::object, std::string> chat_to_ollama_chat(const boost::json::object& chat,
                                                                    std::string_view model, bool stream);

/// OpenAI chat request → /api/generate body: the same options and format; `prompt` flattened
/// from the messages (LiteLLM's `ollama_pt`: consecutive user/tool texts → "### User:\n…\n\n",
/// system → "### System:\n…\n\n", assistant texts and tool calls → "### Assistant:\n…\n\n");
/// inline images → `images`. With tools, format "json" and the tool list with LiteLLM's
/// instruction appended to the prompt (the answer is then read as a call: tool_call_from_json).
std::expected<boost::json::object, std::string> chat_to_ollama_generate(const boost::json::object& chat,
                                                                        std::string_view model, bool stream);

/// Usage of a final Ollama object: prompt = prompt_eval_count, completion = eval_count.
/// `reported` false unless both are non-negative integers: Ollama omits prompt_eval_count when
/// the prompt was served from its cache (ollama/ollama#2068, #3427), and an absent count is an
/// unknown bill, never an invented 0.
Usage usage_from_ollama(const boost::json::object& o) noexcept;

/// Ollama `done_reason` → OpenAI finish_reason: "length" → "length"; any call delivered →
/// "tool_calls" (Ollama reports "stop" for them); otherwise "stop" ("stop", "load", "unload",
/// absent).
std::string_view finish_reason(const boost::json::object& o, bool delivered_tool_calls) noexcept;

/// A JSON text `{"name": ..., "arguments" (or "parameters"): {...}}` read as a function call
/// (name, serialized arguments), as LiteLLM reads /api/generate answers to tool requests;
/// nullopt when the text is not such an object.
struct ToolCall {
  std::string name;
  std::string arguments;
};
std::optional<ToolCall> tool_call_from_json(std::string_view text);

/// A 2xx /api/chat (`generate` false) or /api/generate body → OpenAI `chat.completion`, its usage
/// in `usage`. A generate answer whose whole text reads as a call (tool_call_from_json) is a
/// tool call (finish_reason tool_calls), as LiteLLM reads answers to its JSON tool prompt.
/// Error: not an Ollama answer.
std::expected<boost::json::object, std::string> response_to_chat(std::string_view body, std::string_view model,
                                                                  bool generate, Usage& usage);

/// Converts an Ollama NDJSON stream (/api/chat or /api/generate) into OpenAI chunk payloads:
/// the role chunk first, text deltas as they come, each tool call as one complete chunk (Ollama
/// sends a call whole), the finish chunk when `done`, then (with `include_usage`) the usage
/// chunk. /api/generate text that opens with `{` is held until `done` and sent as a call when it
/// reads as one (else as text). A `{"error": ...}` line, or a line that is not a JSON object,
/// sets error(). Not thread-safe; one per stream.
class NdjsonToChat {
 public:
  NdjsonToChat(std::string model, bool include_usage, bool generate);
  /// One line of the stream (`ev.data`).
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out);
  bool finished() const { return done_; }
  Usage usage() const { return usage_; }
  bool usage_final() const { return done_ && usage_.reported; }
  /// The stream's error message (empty: none).
  const std::optional<std::string>& error() const { return error_; }

 private:
  void start(std::vector<std::string>& out);
  ChunkWriter w_;
  bool include_usage_;
  bool generate_;
  enum class Text { undecided, streamed, held } text_ = Text::undecided;
  bool started_ = false;
  bool done_ = false;
  std::int64_t tool_calls_ = 0;
  std::string held_;  ///< generate text held back (Text::held)
  Usage usage_;
  std::optional<std::string> error_;
};

}  // namespace tollgate::providers::ollama
