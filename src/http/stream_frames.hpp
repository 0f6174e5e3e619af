#pragma once
/// Stream framings of upstream APIs, behind one event interface: Server-sent events (OpenAI,
/// Anthropic, Gemini `alt=sse`, Cohere), newline-delimited JSON (Ollama's /api/chat and
/// /api/generate), and the AWS event-stream binary framing (Bedrock ConverseStream,
/// SageMaker InvokeEndpointWithResponseStream). Every framing delivers its frames as SseEvent
/// values so that a provider's StreamDecoder reads them alike.

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "http/sse.hpp"

namespace tollgate::http {

/// How an upstream API frames a stream on the wire.
enum class StreamFraming {
  sse,              ///< text/event-stream (WHATWG HTML §9.2)
  ndjson,           ///< one JSON value per line (application/x-ndjson); `data` = the line
  aws_eventstream,  ///< application/vnd.amazon.eventstream; `event` = `:event-type` (or
                    ///< `:exception-type`), `data` = the payload
};

/// Splits one stream's bytes into events. One per stream; not thread-safe.
class FrameParser {
 public:
  virtual ~FrameParser() = default;
  /// Consumes `bytes` (split anywhere); calls `on_event` once per complete frame, in order.
  /// Returns false once the parser failed (a frame beyond its size limit, a corrupt frame):
  /// the stream is garbage from there on; frames completed before the fault were delivered.
  virtual bool feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) = 0;
};

/// A parser for `framing` (SSE with SseParser's default limits; NDJSON lines up to 1 MiB).
std::unique_ptr<FrameParser> make_frame_parser(StreamFraming framing);

/// Whether a response content-type announces `framing` (the media type found in it, case-insensitively;
/// NDJSON also accepts application/json, which some Ollama versions send).
bool content_type_matches(StreamFraming framing, std::string_view content_type);

/// The media type `framing` is announced with ("text/event-stream", ...), for error messages.
std::string_view media_type(StreamFraming framing);

}  // namespace tollgate::http
