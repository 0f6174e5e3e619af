#pragma once
/// Where the attempt loop writes its answer. The API layer implements one sink per client
/// format (OpenAI, Anthropic messages); the pipeline hands over the answer in the shape of the
/// call's API (pipeline::ChatCall::api: OpenAI chat for chat and translated /v1/messages calls,
/// an OpenAI embeddings `list`, a `text_completion` and its chunks for completions) and never
/// knows which client format is on the other side. The OpenAI sink writes any OpenAI-shaped
/// answer as it is (JSON, or SSE `data:` events ending in `[DONE]`).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "providers/usage.hpp"

namespace tollgate::pipeline {

using Headers = std::vector<std::pair<std::string, std::string>>;

class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  /// A complete non-streaming success: an OpenAI `chat.completion` object (or the answer object
  /// of the call's API: `list` of embeddings, `text_completion`). `raw` is the upstream's own
  /// serialisation of it when it may be relayed unchanged (else empty).
  virtual boost::asio::awaitable<bool> send_completion(const boost::json::object& completion, std::string raw,
                                                       const Headers& headers) = 0;
  /// A JSON answer the gateway makes itself, not a completion (202 for a deferred job).
  virtual boost::asio::awaitable<bool> send_json(int status, std::string body, const Headers& headers) = 0;
  /// A failure before anything was sent.
  virtual boost::asio::awaitable<bool> send_error(const core::Error& error, const Headers& headers) = 0;
  /// Starts a 200 event stream.
  virtual boost::asio::awaitable<bool> begin_stream(const Headers& headers) = 0;
  /// Relays OpenAI `chat.completion.chunk` payloads (JSON text, no framing; `text_completion`
  /// chunks for completions), in order.
  /// `usage` is what the upstream reported so far (input tokens may be known before the end).
  virtual boost::asio::awaitable<bool> stream_chunks(const std::vector<std::string>& chunks,
                                                     const providers::Usage& usage) = 0;
  /// Ends the stream; `error` set when the upstream failed mid-stream.
  virtual boost::asio::awaitable<bool> end_stream(const std::optional<core::Error>& error) = 0;
  /// Header fields known only at a stream's end (`x-tollgate-continued-by`), sent as HTTP
  /// trailers by end_stream where the sink writes HTTP. Default: dropped.
  virtual void set_trailers(Headers trailers) { (void)trailers; }
  /// Registers (or, with nullptr, clears) the callback run when the client disconnects.
  virtual void on_client_gone(std::function<void()> fn) = 0;
  virtual bool client_gone() const = 0;
  /// Registers (or, with nullptr, clears) the callback run when the gateway is shutting down
  /// and this request may not run any longer (the drain's time is over, docs/operations.md):
  /// the run then starts no new attempt, cancels the one in flight and ends its answer with an
  /// error. Runs on the request's thread. Default: never called (no server behind the sink).
  virtual void on_shutdown(std::function<void()> fn) { (void)fn; }
};

}  // namespace tollgate::pipeline
