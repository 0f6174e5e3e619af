#pragma once
// tollgate-mock: the OpenAI operations other than chat (legacy completions, embeddings) and the
// request-reading helpers they share with chat (request.cpp). README "Legacy completions",
// "Embeddings".

#include <memory>

#include "mock.hpp"

namespace tollgate::mock {

/// Which operation of the OpenAI API a request asks for (the route it came in on).
/// titan_embeddings / cohere_embeddings: Bedrock InvokeModel of an embedding model, its body
/// already read into the OpenAI embeddings shape (bedrock_invoke_to_embeddings).
enum class Operation { chat, completions, embeddings, titan_embeddings, cohere_embeddings };

/// Whether `op` is an embeddings operation (never streamed).
constexpr bool is_embeddings(Operation op) {
  return op == Operation::embeddings || op == Operation::titan_embeddings || op == Operation::cohere_embeddings;
}

/// An integer member of a request body (integral doubles too); nullopt when absent or null,
/// `bad` set when it is something else.
std::optional<std::int64_t> int_field(const boost::json::object& o, std::string_view key, bool& bad);
/// The output side of an answer from the behaviour and the request's cap (README "Token
/// counting"): tokens per choice, capped (finish reason length), reasoning/audio/predictions.
/// `done`: pieces of the answer an assistant prefill already holds (Completion::first): the
/// desired count is lowered by them.
void set_output(const Behavior& b, std::optional<std::int64_t> cap, Completion& c, std::int64_t done = 0);
/// The tier an answer reports: the behaviour's, else the one asked ("default" for auto/none;
/// Anthropic: "standard" unless "priority").
std::string service_tier_of(const boost::json::object& body, const Behavior& b, bool anthropic);
/// The mock's token count of a text in a prompt or an input: ceil(UTF-8 bytes / 4).
std::int64_t text_tokens(std::string_view text);
/// Standard base64 with `=` padding.
std::string base64_encode(std::string_view bytes);

/// The wire format of ONE request of a non-chat operation: it reads the request (its prompt
/// side and output into `c`, what only it needs into itself) and then writes the answer like
/// any Api. Errors and headers are OpenAI's (openai_api()). Not shared between requests.
class OperationApi : public Api {
 public:
  /// As build_completion: false with `err` (the whole 400 message) when the request cannot be
  /// answered.
  virtual bool build(const boost::json::object& body, const Behavior& b, Completion& c, std::string& err) = 0;
  std::string new_request_id() const override { return openai_api().new_request_id(); }
  std::string success_headers(const Completion& c, std::string_view rid) const override {
    return openai_api().success_headers(c, rid);
  }
  std::string base_headers(std::string_view rid) const override { return openai_api().base_headers(rid); }
  std::string stream_malformed() const override { return openai_api().stream_malformed(); }
  Reply error(const ErrorSpec& e) const override { return openai_api().error(e); }
};

/// Legacy completions (`text_completion` objects and chunks; completions.cpp).
std::unique_ptr<OperationApi> text_completion_api();
/// Embeddings (never streamed; embeddings.cpp): for Operation::embeddings OpenAI's `list` of
/// `embedding` objects (wire openai), or a provider's native request and answer (the other
/// wires) with the errors and headers of `family` (that provider's chat family: Google, Ollama,
/// Cohere); for titan_embeddings Titan's `{"embedding", "inputTextTokenCount"}`; for
/// cohere_embeddings Cohere-on-Bedrock's `{"embeddings", "id", "texts"}` (no usage). The
/// Bedrock ones answer errors and headers as bedrock_api().
std::unique_ptr<OperationApi> embeddings_api(Operation op = Operation::embeddings, EmbedWire wire = EmbedWire::openai,
                                             const Api* family = nullptr);

/// A Bedrock InvokeModel body for embedding model `model` (Titan v2/v1: `{"inputText",
/// "dimensions"?, "normalize"?}`; Cohere embed: `{"texts", "input_type"}`) → the OpenAI
/// embeddings body the mock answers from (`model`, `input`, `dimensions` explicit: Titan v2
/// 1024 by default, v1 1536, Cohere 1024) in `out`, and which operation in `op`. False with
/// `err` (a ValidationException message, Bedrock's words) when the body is not valid for the model.
bool bedrock_invoke_to_embeddings(std::string_view body, const std::string& model, std::string& out, Operation& op,
                                  std::string& err);

}  // namespace tollgate::mock
