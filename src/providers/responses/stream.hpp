#pragma once
/// OpenAI chat chunk stream → OpenAI Responses API stream events (a `/v1/responses` client
/// served by a translated deployment).
///
/// Contract: OpenAI API reference "Streaming events" of the Responses API: every event is
/// `event: <type>` with data `{"type":<type>,"sequence_number":n,...}`; the flow is
/// response.created → response.in_progress → per output item response.output_item.added,
/// (message) response.content_part.added, response.output_text.delta*, response.output_text.done,
/// response.content_part.done / (function_call) response.function_call_arguments.delta*,
/// response.function_call_arguments.done → response.output_item.done, and at the end
/// response.completed (or response.incomplete when the output bound was hit) carrying the whole
/// response with its usage; a failure is an `error` event then response.failed.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "providers/usage.hpp"

namespace tollgate::providers::responses {

/// One SSE event to write: (event name, data JSON).
using ResponsesSseEvent = std::pair<std::string, std::string>;

/// Converts one chat chunk stream. `on_chunk` for every parsed `chat.completion.chunk`, then
/// `finish` (the stream ended normally) or `fail` (it ended with an error). Only choice 0 is
/// read (the Responses API has no `n`). Not thread-safe; one per stream.
class ChatStreamToResponses {
 public:
  /// `echo`: response_echo of the request; `model`: the name reported to the caller.
  ChatStreamToResponses(boost::json::object echo, std::string model);

  /// Processes one chunk; appends events to `out`.
  void on_chunk(const boost::json::object& chunk, std::vector<ResponsesSseEvent>& out);
  /// Closes the open item and emits response.completed / response.incomplete with the usage.
  void finish(std::vector<ResponsesSseEvent>& out);
  /// Emits `error` {code, message} then response.failed.
  void fail(std::string_view code, std::string_view message, std::vector<ResponsesSseEvent>& out);
  /// Usage the stream reported (the last usage chunk; `reported` false when none).
  [[nodiscard]] const Usage& usage() const noexcept { return usage_; }
  /// The response id every event names.
  [[nodiscard]] const std::string& id() const noexcept { return id_; }

 private:
  enum class Item { none, message, function_call };
  void start(std::vector<ResponsesSseEvent>& out);
  void emit(std::string_view type, boost::json::object data, std::vector<ResponsesSseEvent>& out);
  void open_message(std::vector<ResponsesSseEvent>& out);
  void open_call(const boost::json::object& call, std::vector<ResponsesSseEvent>& out);
  void close_item(std::vector<ResponsesSseEvent>& out);
  boost::json::object snapshot(std::string_view status, bool with_usage) const;

  boost::json::object echo_;
  std::string model_;
  std::string id_;
  std::int64_t created_at_;
  std::int64_t seq_ = 0;
  bool started_ = false;
  bool ended_ = false;
  Item open_ = Item::none;
  std::string item_id_;
  std::string text_;          // the open message's text so far
  std::string call_id_;       // the open function call's call_id, name and arguments
  std::string call_name_;
  std::string arguments_;
  std::int64_t tool_index_ = -1;  // chat tool_calls[].index of the open call
  boost::json::array output_;     // closed items, in order
  std::string finish_reason_;
  Usage usage_;
};

}  // namespace tollgate::providers::responses
