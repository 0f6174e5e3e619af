#pragma once
/// Provider adapters: how one deployment's upstream API is called and read. Tollgate's internal
/// request and response format is OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat);
/// adapters translate where the upstream speaks something else (Anthropic Messages).

#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "config/config.hpp"
#include "http/client.hpp"
#include "http/sse.hpp"
#include "http/stream_frames.hpp"
#include "policy/failure.hpp"
#include "providers/usage.hpp"

namespace tollgate::providers {

/// Turns upstream SSE events into OpenAI `chat.completion.chunk` JSON payloads (without the
/// `data: ` framing) for the client. One per stream; not thread-safe.
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  /// Handles one upstream event; appends zero or more chunk payloads to `out`.
  virtual void on_event(const http::SseEvent& ev, std::vector<std::string>& out) = 0;
  /// True once the upstream's terminal event arrived (`[DONE]` / `message_stop`).
  virtual bool finished() const = 0;
  /// Usage reported in the stream so far (`reported` false if none).
  virtual Usage usage() const = 0;
  /// True when usage() is the whole bill of the stream (its final usage report was read in full).
  virtual bool usage_final() const = 0;
  /// An error the upstream reported inside the stream, classified.
  virtual std::optional<policy::Outcome> error() const = 0;
};

/// Which output-limit field the caller used in its request (the bound is written in the same
/// field where the deployment's API accepts it).
enum class OutputField { none, max_tokens, max_completion_tokens };

/// One upstream API family. Stateless and thread-safe.
class Provider {
 public:
  virtual ~Provider() = default;
  /// Builds the HTTP request for `chat` (an OpenAI chat request, the client's body with
  /// Tollgate-only fields removed) to deployment `d`. When `stream`, the upstream is asked for
  /// usage in the stream. `chat` may be rewritten in place (its `model`, `stream_options`) so
  /// that no per-attempt copy is made. Errors: a deployment URL that does not parse.
  virtual std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d,
                                                                          boost::json::object& chat,
                                                                          bool stream) const = 0;
  /// Writes the attempt's output bound (`tokens` per choice, what its reservation pays for) into
  /// `chat` in the one field this deployment's API enforces, and removes the other, so that the
  /// upstream is never sent two disagreeing limits. OpenAI-style servers: the caller's own field
  /// (`max_completion_tokens` or `max_tokens`); when the caller used none, `max_completion_tokens`
  /// for OpenAI's and Azure's own APIs (the field their reasoning models require) and `max_tokens`
  /// for other OpenAI-compatible servers. Anthropic: `max_tokens` (which its translation sends).
  virtual void set_output_limit(const config::Deployment& d, boost::json::object& chat, std::int64_t tokens,
                                OutputField caller_field) const = 0;
  /// Whether a 2xx body of this API is already an OpenAI `chat.completion` that may be relayed
  /// byte for byte (no re-serialisation).
  virtual bool relays_openai_body() const { return false; }
  /// A 2xx non-streaming answer: the OpenAI `chat.completion` the client gets, and the usage
  /// read from the provider's own body (every token kind its API reports; `reported` false when
  /// the usage is absent or malformed: the bill is then unknown).
  struct Parsed {
    boost::json::object completion;
    Usage usage;
  };
  /// Parses a 2xx non-streaming body; an error string when the body is not a valid response of
  /// this API (a transient, malformed-body failure).
  virtual std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view body) const = 0;
  /// Reads an error response into the classifier's terms (status, provider type/code/message).
  virtual policy::Outcome parse_error(int status, std::string_view body) const = 0;
  /// The response header that names the error type, for APIs that put it there (AWS:
  /// `x-amzn-ErrorType`); empty: none (the default).
  virtual std::string_view error_type_header() const { return {}; }
  /// parse_error, given the value of error_type_header() (empty when absent). Default: parse_error.
  virtual policy::Outcome parse_typed_error(int status, std::string_view body, std::string_view /*type_header*/) const {
    return parse_error(status, body);
  }
  /// Why deployment `d` cannot be called for want of credentials (no AWS key or region, no
  /// service account), checked before anything is built or sent; nullopt when it can be (the
  /// default). The attempt then fails 401 `deployment_misconfigured`.
  virtual std::optional<std::string> credentials_error(const config::Deployment&) const { return std::nullopt; }
  /// A decoder for this API's stream. `include_usage`: the client asked for the usage chunk.
  virtual std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment& d, bool include_usage) const = 0;
  /// How this API frames its stream (the relay splits the bytes into events with it and checks
  /// the response's content-type against it). Default: SSE.
  virtual http::StreamFraming stream_framing(const config::Deployment&) const { return http::StreamFraming::sse; }
};

/// The decoder of an OpenAI Chat Completions chunk stream (SSE `data:` payloads, `[DONE]`),
/// for adapters whose upstream streams OpenAI chunks inside another framing (SageMaker).
std::unique_ptr<StreamDecoder> openai_stream_decoder(bool include_usage);

/// The adapter for a provider kind (static instances).
const Provider& provider_for(config::ProviderKind kind);

/// "openai", "anthropic", "azure.ai.openai"-style names (OpenTelemetry `gen_ai.provider.name`).
std::string_view provider_name(config::ProviderKind kind);

}  // namespace tollgate::providers
