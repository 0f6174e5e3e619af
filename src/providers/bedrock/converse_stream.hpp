#pragma once
/// Bedrock ConverseStream events → OpenAI `chat.completion.chunk` payloads
/// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html,
/// ConverseStreamOutput). The frames arrive decoded by http::make_frame_parser(aws_eventstream):
/// `event` = the `:event-type` (messageStart, contentBlockStart, contentBlockDelta,
/// contentBlockStop, messageStop, metadata) or, with `id` "exception"/"error", the exception
/// type; `data` = the JSON payload.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "providers/provider.hpp"

namespace tollgate::providers::bedrock {

/// One stream's decoder. Output: messageStart → `{delta:{role:"assistant",content:""}}`;
/// a toolUse contentBlockStart → `{delta:{tool_calls:[{index,id,type:"function",function:{name,
/// arguments:""}}]}}` (index counts tool calls from 0); contentBlockDelta text → `{delta:{content}}`,
/// toolUse.input → `{delta:{tool_calls:[{index,function:{arguments}}]}}`, reasoningContent.text →
/// `{delta:{reasoning_content}}`; messageStop → `{delta:{},finish_reason}`; metadata → the usage
/// (usage_from_converse), one `{choices:[],usage}` chunk when `include_usage`, and `finished()`.
/// An exception event sets error() (status per aws::status_for_exception). Not thread-safe.
class ConverseStreamDecoder final : public StreamDecoder {
 public:
  ConverseStreamDecoder(std::string model, bool include_usage);
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override;
  bool finished() const override { return finished_; }
  Usage usage() const override { return usage_; }
  bool usage_final() const override { return usage_.reported && finished_; }
  std::optional<policy::Outcome> error() const override { return error_; }

 private:
  void emit(boost::json::object delta, const char* finish_reason, std::vector<std::string>& out) const;

  std::string model_;
  std::string id_;
  std::int64_t created_;
  bool include_usage_;
  bool finished_ = false;
  std::vector<std::int64_t> tool_by_block_;  // contentBlockIndex → tool call index (-1: not a tool)
  std::int64_t next_tool_ = 0;
  Usage usage_;
  std::optional<policy::Outcome> error_;
};

}  // namespace tollgate::providers::bedrock
