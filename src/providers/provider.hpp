#pragma once
/// Provider adapters: how one deployment's upstream API is called and read. Tollgate's internal
/// request and response format is OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat);
/// adapters translate where the upstream speaks something else (Anthropic Messages).
///
/// ## Operations (client APIs other than chat)
/// A call says which client API it speaks (providers/call_api.hpp `CallApi`; pipeline::ChatCall::api)
/// and carries its body in that API's own shape. A `Provider` object serves ONE client API: the
/// one returned by provider_for(kind) serves chat. For another API the attempt loop asks
/// `adapter_for(d, api)` (= `provider_for(d.provider).for_api(d, api)`), which returns the adapter
/// serving that API for deployment `d`, or nullptr when it cannot: the deployment is then never
/// sent the call (no admission, no circuit), and when no deployment of the group can serve it
/// the client gets 400 `operation_not_supported` ("deployment X (anthropic) does not support
/// embeddings"). The operation adapter implements the same members with the API's meaning:
///   - build_request: the upstream HTTP request from the call's body (in the client API's shape);
///   - set_output_limit: writes the output bound into the body (embeddings: nothing to write);
///   - parse_response: the answer in the CLIENT API's shape (OpenAI `list` of embeddings, a
///     `text_completion`, ...) in Parsed::completion, and its usage; relays_openai_body() true
///     when the upstream body already is that shape (relayed byte for byte);
///   - parse_error: as for chat;
///   - stream_decoder: chunk payloads in the client API's stream shape (`text_completion`
///     chunks for completions); nullptr for an API that never streams (embeddings).
/// How a provider adds an operation: (1) write a `Provider` subclass for it (one file, e.g.
/// providers/gemini/embeddings.cpp), (2) override `for_api` in the provider's chat adapter to
/// return a static instance of it for that CallApi (and for the deployments it fits), (3) add the
/// simulator's wire format and an e2e test. The API layer (api/) decodes and validates the
/// client's body once; budget/operation_bounds.hpp bounds its input; the sink (pipeline/sink.hpp)
/// writes the answer as given.
/// A client API that has a translation to chat (messages, responses) may, for a provider that
/// does not serve it natively, be run as chat by the API layer or the attempt (h-responses).

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
#include "providers/call_api.hpp"
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
  /// Called once when the upstream ended the stream cleanly (the body's end) before its terminal
  /// event. True when what arrived is a whole answer nonetheless — a finish reason and a final
  /// usage report, from a server that never sends `[DONE]` (tools/mock/README.md "Quirks
  /// catalogue"), or an Anthropic stream whose message_delta gave its stop reason and usage but
  /// whose `message_stop` never came — and finished() is true from then on; `out` then gets
  /// the payloads the terminal event would have produced (the usage chunk a translation emits
  /// at message_stop, a native stream's own `message_stop`). Default: false (the stream was cut).
  virtual bool accept_end_without_terminator(std::vector<std::string>& out) {
    (void)out;
    return false;
  }
  /// Whether `chunk` (one payload this decoder emitted) carries output — text, reasoning or a
  /// tool call — rather than a preamble (role, ids, empty deltas): the relay holds preamble
  /// chunks back until the first output, so that a first-token limit or a failure before it can
  /// still move the request elsewhere unseen (issue 13). Default: an OpenAI chat chunk's rule
  /// (chat_chunk_carries_output); decoders that relay another API's events override it.
  virtual bool carries_output(std::string_view chunk) const;
};

/// Which output-limit field the caller used in its request (the bound is written in the same
/// field where the deployment's API accepts it).
enum class OutputField { none, max_tokens, max_completion_tokens };

/// An asynchronous step between building an upstream request and sending it, for providers
/// whose credentials are minted at call time (Vertex AI: an OAuth access token from a service
/// account). It may make its own HTTP calls through `transport` (never to the deployment's
/// upstream) and adds headers to `req`. A failure means nothing was sent upstream: the returned
/// Outcome (status 401/403 for a credential the provider refuses or that is missing, the token
/// endpoint's 5xx, or a transport event) is classified like an upstream answer.
/// Thread-safe.
class Authorizer {
 public:
  virtual ~Authorizer() = default;
  virtual boost::asio::awaitable<std::expected<void, policy::Outcome>> authorize(const config::Deployment& d,
                                                                                 http::OutgoingRequest& req,
                                                                                 http::Transport& transport,
                                                                                 http::SteadyTime deadline) const = 0;
};

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
    /// Set when the 2xx answer is a failure of the attempt nonetheless (Gemini: a prompt
    /// blocked before generation, `promptFeedback.blockReason` and no candidates): the attempt
    /// fails with this outcome's class (its action runs: content_policy_fallbacks, else the
    /// caller's 400), `completion` is not served, and `usage` is still the bill (the evidence).
    std::optional<policy::Outcome> failure;
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
  /// Why this adapter cannot express the caller's request `body` (in the client API's shape)
  /// for deployment `d` — e.g. Titan embeddings take one text per call, no token ids — checked
  /// before anything is sent (the reservation settles at 0); nullopt when it can (the default). The attempt then
  /// fails as the caller's to fix: 400 `invalid_request_error` with this message, `param` and
  /// code `unsupported_parameter`, nothing sent, recorded in the trace, not counted against the circuit.
  struct Refusal {
    std::string message;
    std::string param;
  };
  virtual std::optional<Refusal> refuse_request(const config::Deployment&, const boost::json::object&) const {
    return std::nullopt;
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
  /// The step the attempt awaits before sending (Authorizer), or nullptr when the request built
  /// by build_request is complete (API keys in headers).
  virtual const Authorizer* authorizer() const { return nullptr; }
  /// The adapter serving calls of client API `api` to deployment `d` (see "Operations" above):
  /// this object for chat (the default), nullptr when this provider cannot serve `api` for `d`.
  /// The returned adapter is a static instance (lives for the process).
  virtual const Provider* for_api(const config::Deployment& d, CallApi api) const {
    (void)d;
    return api == CallApi::chat ? this : nullptr;
  }
};

/// The decoder of an OpenAI Chat Completions chunk stream (SSE `data:` payloads, `[DONE]`),
/// for adapters whose upstream streams OpenAI chunks inside another framing (SageMaker).
std::unique_ptr<StreamDecoder> openai_stream_decoder(bool include_usage);

/// The adapter for a provider kind (static instances).
const Provider& provider_for(config::ProviderKind kind);

/// The adapter serving `api` for deployment `d`: provider_for(d.provider).for_api(d, api), except
/// that a deployment whose `model_info.mode` is `embedding` serves embeddings only (LiteLLM's
/// meaning of the mode), and one whose mode is `chat` or `completion` no embeddings. nullptr =
/// not served (operation_unsupported_message says why). Cheap: no allocation.
const Provider* adapter_for(const config::Deployment& d, CallApi api);

/// "deployment 'X' (anthropic) of model group 'G' does not support embeddings".
std::string operation_unsupported_message(const config::Deployment& d, CallApi api);

/// "openai", "anthropic", "azure.ai.openai"-style names (OpenTelemetry `gen_ai.provider.name`).
std::string_view provider_name(config::ProviderKind kind);

}  // namespace tollgate::providers
