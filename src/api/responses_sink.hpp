#pragma once
/// The response sink of `/v1/responses`. A translated deployment's OpenAI chat answer is rendered
/// as a Responses API response object, its chunk stream as the Responses API's typed events
/// (providers/responses/stream.hpp); a native (OpenAI / Azure) answer — a response object, or
/// events whose data has a `type` — is relayed unchanged. Errors keep OpenAI's error body.

#include <string>

#include "api/sinks.hpp"
#include "providers/responses/stream.hpp"

namespace tollgate::api {

/// Responses API answers (https://platform.openai.com/docs/api-reference/responses).
class ResponsesSink final : public OpenAiSink {
 public:
  /// `echo`: providers::responses::response_echo of the request; `model`: the name the caller asked for.
  ResponsesSink(http::ResponseWriter& w, boost::json::object echo, std::string model)
      : OpenAiSink(w), echo_(echo), model_(model), conv_(std::move(echo), std::move(model)) {}
  boost::asio::awaitable<bool> send_completion(const boost::json::object& completion, std::string raw,
                                               const pipeline::Headers& headers) override;
  boost::asio::awaitable<bool> stream_chunks(const std::vector<std::string>& chunks,
                                             const providers::Usage& usage) override;
  boost::asio::awaitable<bool> end_stream(const std::optional<core::Error>& error) override;

 private:
  boost::json::object echo_;
  std::string model_;
  providers::responses::ChatStreamToResponses conv_;
  bool native_ = false;        // the stream is a native one's events (relayed), not chat chunks
  std::int64_t last_seq_ = 0;  // the last relayed event's sequence_number
};

}  // namespace tollgate::api
