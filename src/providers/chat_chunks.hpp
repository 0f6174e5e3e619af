#pragma once
/// OpenAI `chat.completion.chunk` payloads (https://platform.openai.com/docs/api-reference/chat/streaming)
/// written for a stream translated from another API (Ollama NDJSON, Cohere typed SSE): one
/// choice (index 0), the SSE data text without `data: ` and without `[DONE]`.

#include <cstdint>
#include <string>
#include <string_view>

#include "providers/usage.hpp"

namespace tollgate::providers {

/// Whether a `chat.completion.chunk` payload carries output: a non-empty `content`, `refusal`,
/// `reasoning_content` / `reasoning` string, or `tool_calls` / `function_call` / `audio` value
/// (a role-only or empty first chunk does not). A scan of the text, no parse; a payload that is
/// not a chunk may read as output (the caller only delays on false).
bool chat_chunk_carries_output(std::string_view chunk) noexcept;

/// Renders the chunks of one stream. With `include_usage` every chunk carries `"usage":null`
/// and usage_chunk() gives the final `{"choices":[],"usage":{...}}` (OpenAI's
/// `stream_options.include_usage` shape). Not thread-safe; one per stream.
class ChunkWriter {
 public:
  /// `model`: the name reported to the caller; `created`: Unix seconds (0 = now).
  ChunkWriter(std::string id, std::string model, bool include_usage, std::int64_t created = 0);
  /// Replaces the chunk id (a stream whose id arrives in its first event).
  void set_id(std::string id);
  /// `{"delta":{"role":"assistant","content":""}}`.
  std::string role() const;
  /// `{"delta":{"content":text}}`.
  std::string content(std::string_view text) const;
  /// `{"delta":{"tool_calls":[{index,id,type:"function",function:{name,arguments}}]}}`.
  std::string tool_call_start(std::int64_t index, std::string_view id, std::string_view name,
                              std::string_view arguments) const;
  /// `{"delta":{"tool_calls":[{index,function:{arguments:fragment}}]}}`.
  std::string tool_call_arguments(std::int64_t index, std::string_view fragment) const;
  /// `{"delta":{},"finish_reason":reason}`.
  std::string finish(std::string_view reason) const;
  /// `{"choices":[],"usage":usage_to_openai(u)}`.
  std::string usage_chunk(const Usage& u) const;

 private:
  std::string chunk(std::string_view delta_json, std::string_view finish_reason) const;
  std::string prefix() const;

  std::string id_;
  std::string model_;
  bool include_usage_;
  std::int64_t created_;
};

}  // namespace tollgate::providers
