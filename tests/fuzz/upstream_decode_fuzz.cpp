// Fuzz target: every provider's reading of what an upstream answers (providers/provider.hpp):
// Provider::parse_response (a 2xx body), parse_typed_error (an error body and its type header),
// and the stream path as the relay runs it (pipeline/stream_relay.cpp): the adapter's framing
// (SSE, NDJSON, AWS event stream; http/stream_frames.hpp) → events whose data is JSON or
// `[DONE]` → StreamDecoder::on_event, then accept_end_without_terminator at a clean end.
//
// Input: byte 0 = deployment (provider kind, prefix and model; table below), byte 1 = client API
// (CallApi, mod 5) and mode (bits 3-4: 0 body, 1 error, 2-3 stream; bit 5: include_usage),
// byte 2 = the error status or the stream's read size; the rest is the upstream's body.
//
// Properties: a usage read from any answer has no negative count (the bill cannot go below
// zero); every stream payload handed to the client is a JSON object; a parsed error keeps the
// status it was given (but Google's invalid key: 400 → 401); a successful chat parse is a `chat.completion` with a `choices` array.
#include <boost/json/object.hpp>
#include <memory>
#include <vector>

#include "config/config.hpp"
#include "core/json_valid.hpp"
#include "fuzz_support.hpp"
#include "http/stream_frames.hpp"
#include "providers/provider.hpp"

namespace {

using tollgate::config::ProviderKind;
using tollgate::providers::CallApi;
using tollgate::providers::Usage;

struct Target {
  ProviderKind kind;
  const char* prefix;
  const char* model;
};

constexpr Target kTargets[] = {
    {ProviderKind::openai, "openai", "gpt-4o"},
    {ProviderKind::azure, "azure", "gpt-4o"},
    {ProviderKind::openai, "groq", "llama-3.1-8b-instant"},
    {ProviderKind::anthropic, "anthropic", "claude-sonnet-4-5"},
    {ProviderKind::gemini, "gemini", "gemini-2.5-flash"},
    {ProviderKind::vertex_ai, "vertex_ai", "gemini-2.5-pro"},
    {ProviderKind::bedrock, "bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0"},
    {ProviderKind::bedrock, "bedrock", "amazon.titan-embed-text-v2:0"},
    {ProviderKind::bedrock, "bedrock", "cohere.embed-english-v3"},
    {ProviderKind::sagemaker, "sagemaker", "tgi-endpoint"},
    {ProviderKind::sagemaker, "sagemaker_chat", "chat-endpoint"},
    {ProviderKind::ollama, "ollama", "llama3.2"},
    {ProviderKind::ollama_chat, "ollama_chat", "llama3.2"},
    {ProviderKind::cohere, "cohere", "command-r-plus"},
    {ProviderKind::unsupported, "replicate", "some-model"},
};

void check_usage(const Usage& u) {
  TG_FUZZ_CHECK(u.prompt_tokens >= 0 && u.completion_tokens >= 0);
  TG_FUZZ_CHECK(u.cached_tokens >= 0 && u.cache_write_tokens >= 0 && u.cache_write_1h_tokens >= 0);
  TG_FUZZ_CHECK(u.audio_input_tokens >= 0 && u.reasoning_tokens >= 0 && u.audio_output_tokens >= 0);
  TG_FUZZ_CHECK(u.image_output_tokens >= 0 && u.rejected_prediction_tokens >= 0 && u.web_search_calls >= 0);
  TG_FUZZ_CHECK(u.billed_output_tokens() >= 0);
}

void check_payload(std::string_view chunk) {
  const auto v = tollgate::fuzz::parse_json(chunk);
  // Open finding (docs/fuzzing.md): a number beyond a double's range in an upstream answer is
  // written back by the translating decoders as `Infinity`.
  if (!v && chunk.find("Infinity") != std::string_view::npos) return;
  if (!v || !v->is_object()) tollgate::fuzz::texts_differ("a payload is a JSON object", chunk, "{...}", __FILE__, __LINE__);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tollgate;
  std::string_view in = fuzz::as_text(data, size);
  const auto& t = kTargets[fuzz::take_byte(in) % std::size(kTargets)];
  const std::uint8_t mode = fuzz::take_byte(in);
  const std::uint8_t arg = fuzz::take_byte(in);

  config::Deployment d;
  d.id = "fuzz";
  d.model_name = "fuzz-group";
  d.provider = t.kind;
  d.provider_prefix = t.prefix;
  d.upstream_model = t.model;
  const auto api = static_cast<CallApi>((mode & 7) % 5);
  const providers::Provider* p = providers::adapter_for(d, api);
  if (p == nullptr) return 0;

  switch ((mode >> 3) & 3) {
    case 0: {
      auto parsed = p->parse_response(d, in);
      if (!parsed) {
        TG_FUZZ_CHECK(!parsed.error().empty());
        return 0;
      }
      check_usage(parsed->usage);
      if (api == CallApi::chat && !parsed->failure) {
        const auto* choices = parsed->completion.if_contains("choices");
        TG_FUZZ_CHECK(choices != nullptr && choices->is_array());
      }
      check_payload(boost::json::serialize(parsed->completion));
      return 0;
    }
    case 1: {
      const int status = 400 + arg % 200;
      const auto header = in.substr(0, std::min<std::size_t>(in.size(), (arg >> 4) * 4));
      const auto oc = p->parse_typed_error(status, in, header);
      // The status is kept, except Google's invalid API key (400 INVALID_ARGUMENT, reason
      // API_KEY_INVALID), read as the authentication failure it is (providers/gemini/errors.hpp).
      TG_FUZZ_CHECK(oc.status == status || (status == 400 && oc.status == 401));
      return 0;
    }
    default: {
      const bool include_usage = (mode & 0x20) != 0;
      auto decoder = p->stream_decoder(d, include_usage);
      if (!decoder) return 0;
      auto parser = http::make_frame_parser(p->stream_framing(d));
      std::vector<std::string> chunks;
      const std::size_t piece = 1 + arg;
      bool framed = true;
      for (std::size_t pos = 0; pos < in.size() && framed; pos += piece) {
        framed = parser->feed(in.substr(pos, piece), [&](const http::SseEvent& ev) {
          if (ev.data != "[DONE]" && !core::is_json_text(ev.data)) return;  // the relay drops these
          decoder->on_event(ev, chunks);
        });
      }
      if (framed && !decoder->finished() && !decoder->error()) {
        if (decoder->accept_end_without_terminator(chunks)) TG_FUZZ_CHECK(decoder->finished());
      }
      for (const auto& c : chunks) {
        check_payload(c);
        (void)decoder->carries_output(c);
      }
      check_usage(decoder->usage());
      if (decoder->usage_final()) TG_FUZZ_CHECK(decoder->usage().reported);
      return 0;
    }
  }
}
