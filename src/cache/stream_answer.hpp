#pragma once
/// A streamed answer put back together, so that a completed stream can be cached and replayed
/// (issue 11 §4): OpenAI `chat.completion.chunk` payloads (the Chat Completions streaming format,
/// which the pipeline relays whatever provider answered) folded into the `chat.completion` a
/// non-streaming request would have got: per choice the role, the concatenated content (and
/// refusal), tool calls merged by index (id, type, function name, arguments concatenated) and the
/// finish reason; the id, created, model and system_fingerprint of the chunks; the last usage.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace tollgate::cache {

class StreamAnswer {
 public:
  /// Folds one chunk in. A chunk that is not a JSON object is remembered as a defect.
  void add(std::string_view chunk);
  /// The whole answer, or nullopt when it is not complete: no choice, a choice without a finish
  /// reason, or a malformed chunk. Only complete answers are cached.
  std::optional<boost::json::object> completion() const;

 private:
  struct ToolCall {
    std::string id, type, name, arguments;
  };
  struct Choice {
    std::string role = "assistant";
    std::string content;
    bool has_content = false;
    std::string refusal;
    std::map<std::int64_t, ToolCall> tool_calls;
    std::optional<std::string> finish_reason;
  };
  boost::json::object head_;  ///< id, created, model, system_fingerprint
  std::map<std::int64_t, Choice> choices_;
  std::optional<boost::json::object> usage_;
  bool malformed_ = false;
};

}  // namespace tollgate::cache
