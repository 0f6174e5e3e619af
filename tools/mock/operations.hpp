#pragma once
// tollgate-mock: the OpenAI operations other than chat (legacy completions, embeddings) and the
// request-reading helpers they share with chat (request.cpp). README "Legacy completions",
// "Embeddings".

#include <memory>

#include "mock.hpp"

namespace tollgate::mock {

/// Which operation of the OpenAI API a request asks for (the route it came in on).
enum class Operation { chat, completions, embeddings };

/// An integer member of a request body (integral doubles too); nullopt when absent or null,
/// `bad` set when it is something else.
std::optional<std::int64_t> int_field(const boost::json::object& o, std::string_view key, bool& bad);
/// The output side of an answer from the behaviour and the request's cap (README "Token
/// counting"): tokens per choice, capped (finish reason length), reasoning/audio/predictions.
void set_output(const Behavior& b, std::optional<std::int64_t> cap, Completion& c);
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
/// Embeddings (never streamed; embeddings.cpp): a `list` of `embedding` objects for the OpenAI
/// wire; a provider's native request and answer for the others, with the errors and headers of
/// `family` (that provider's chat family: Google, Ollama, Cohere; null: OpenAI's).
std::unique_ptr<OperationApi> embeddings_api(EmbedWire wire = EmbedWire::openai, const Api* family = nullptr);

}  // namespace tollgate::mock
