#pragma once
/// Response sinks for each client format, writing through the HTTP server's ResponseWriter.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/server.hpp"
#include "pipeline/sink.hpp"
#include "providers/anthropic/translate.hpp"

namespace tollgate::api {

/// OpenAI Chat Completions responses: JSON, or SSE `data: <chunk>` events ending in `data: [DONE]`.
class OpenAiSink : public pipeline::ResponseSink {
 public:
  explicit OpenAiSink(http::ResponseWriter& w) : w_(w) {}
  boost::asio::awaitable<bool> send_completion(const boost::json::object& completion, std::string raw,
                                               const pipeline::Headers& headers) override;
  boost::asio::awaitable<bool> send_error(const core::Error& error, const pipeline::Headers& headers) override;
  boost::asio::awaitable<bool> send_json(int status, std::string body, const pipeline::Headers& headers) override;
  boost::asio::awaitable<bool> begin_stream(const pipeline::Headers& headers) override;
  boost::asio::awaitable<bool> stream_chunks(const std::vector<std::string>& chunks,
                                             const providers::Usage& usage) override;
  boost::asio::awaitable<bool> end_stream(const std::optional<core::Error>& error) override;
  void on_client_gone(std::function<void()> fn) override;
  bool client_gone() const override { return w_.client_gone(); }
  void on_shutdown(std::function<void()> fn) override { w_.on_shutdown(std::move(fn)); }
  void set_trailers(pipeline::Headers trailers) override { trailers_ = std::move(trailers); }

 protected:
  http::ResponseWriter& w_;
  bool watching_ = false;
  pipeline::Headers trailers_;  ///< written with the stream's last chunk
};

/// Anthropic Messages responses (`/v1/messages`): the pipeline's OpenAI output translated back,
/// or, from a native attempt (providers::anthropic::native_adapter), the Anthropic message or
/// events (data with a `type`, no `choices`) relayed unchanged.
class AnthropicSink final : public OpenAiSink {
 public:
  AnthropicSink(http::ResponseWriter& w, std::string model) : OpenAiSink(w), model_(std::move(model)), conv_(model_) {}
  boost::asio::awaitable<bool> send_completion(const boost::json::object& completion, std::string raw,
                                               const pipeline::Headers& headers) override;
  boost::asio::awaitable<bool> send_error(const core::Error& error, const pipeline::Headers& headers) override;
  boost::asio::awaitable<bool> stream_chunks(const std::vector<std::string>& chunks,
                                             const providers::Usage& usage) override;
  boost::asio::awaitable<bool> end_stream(const std::optional<core::Error>& error) override;

 private:
  std::string model_;
  providers::anthropic::ChatStreamToMessages conv_;
  bool native_ = false;  // the stream is an Anthropic deployment's own events (relayed)
};

/// A complete JSON response with `headers` added, each as `set` puts it (in order; a name given
/// twice keeps its last value), every value made one safe line.
http::Response json_response(int status, std::string body, const pipeline::Headers& headers = {});

/// The fields json_response() puts on a response (Content-Type first unless `headers` set it,
/// then each header as set() leaves it), as views of `headers` or, for a value that had to be
/// made safe, of a string in `safe` (cleared first; keep it while the views are used). nullopt
/// when `headers` name Connection, Content-Length or Transfer-Encoding.
std::optional<std::vector<http::FieldView>> json_response_fields(const pipeline::Headers& headers,
                                                                 std::vector<std::string>& safe);

/// Sends json_response(status, body, headers) on `w`: the same bytes, written from views of the
/// headers instead of a Response's fields (the run's headers on every answer). Headers naming a
/// field the writer sets (Connection, Content-Length, Transfer-Encoding) go through
/// json_response, as does a status without a body (1xx, 204, 304).
boost::asio::awaitable<bool> send_json_response(http::ResponseWriter& w, int status, std::string body,
                                                const pipeline::Headers& headers);

}  // namespace tollgate::api
