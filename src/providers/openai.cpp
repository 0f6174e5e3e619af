// OpenAI Chat Completions and OpenAI-compatible servers (vLLM, Ollama, Groq, Together...), and
// Azure OpenAI, which speaks the same body at a deployment URL with `api-key` auth.
// Source: https://platform.openai.com/docs/api-reference/chat ;
// https://learn.microsoft.com/azure/ai-services/openai/reference
#include <boost/json.hpp>
#include <cctype>

#include "providers/anthropic/adapter.hpp"
#include "core/json_parse.hpp"
#include "providers/gemini/adapter.hpp"
#include "providers/bedrock/adapter.hpp"
#include "providers/sagemaker/adapter.hpp"
#include "providers/cohere/adapter.hpp"
#include "providers/ollama/adapter.hpp"
#include "providers/openai_errors.hpp"
#include "providers/responses/native.hpp"
#include "providers/tool_call_index.hpp"
#include "providers/path_segment.hpp"
#include "providers/unsupported.hpp"
#include "providers/provider.hpp"

namespace tollgate::providers {
namespace json = boost::json;

namespace {

class OpenAiStreamDecoder final : public StreamDecoder {
 public:
  explicit OpenAiStreamDecoder(bool include_usage) : include_usage_(include_usage) {}

  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override {
    std::string_view data = ev.data;
    if (data == "[DONE]") {
      finished_ = true;
      return;
    }
    if (has_finish_reason(data)) finish_seen_ = true;
    // Most chunks are relayed byte for byte; only those that may carry a usage object, an error
    // or tool calls (whose indexes may need repair: providers/tool_call_index.hpp) are parsed
    // (a `"usage":null` elsewhere in the chunk does not hide a real one).
    const bool maybe_usage = has_usage_object(data);
    const bool maybe_error = data.find("\"error\"") != std::string_view::npos;
    const bool maybe_tools = data.find("\"tool_calls\"") != std::string_view::npos;
    // The first delta of the stream must say who speaks (OpenAI's "role":"assistant"; the SDKs'
    // stream helpers refuse a choice without one): some servers never send it.
    const bool first_delta = !role_checked_ && data.find("\"delta\"") != std::string_view::npos;
    if (!maybe_usage && !maybe_error && !maybe_tools && !first_delta) {
      after_usage_ = true;
      out.emplace_back(data);
      return;
    }
    boost::system::error_code ec;
    auto v = json::parse(data, ec);  // read for usage and errors; written back only when finite
    if (ec || !v.is_object()) {
      after_usage_ = true;
      out.emplace_back(data);
      return;
    }
    auto& o = v.as_object();
    if (auto* err = o.if_contains("error"); err && err->is_object()) {
      policy::Outcome oc = outcome_from_openai_error(0, err->as_object());
      oc.status = oc.status ? oc.status : 500;
      error_ = oc;
      return;
    }
    if (auto* u = o.if_contains("usage"); !u || !u->is_object()) after_usage_ = true;  // emitted below, no usage in it
    if (auto* u = o.if_contains("usage"); u && u->is_object()) {
      usage_ = usage_from_openai_response(o);  // cumulative where servers repeat it: the last one wins
      after_usage_ = false;
      const auto* choices = o.if_contains("choices");
      const bool usage_only = !choices || (choices->is_array() && choices->as_array().empty());
      if (usage_only && !include_usage_) return;  // Tollgate asked for it; the client did not.
    }
    bool changed = maybe_tools && tools_.repair(o);
    if (first_delta) changed = give_role(o) || changed;
    if (changed && !core::has_non_finite(v)) {
      out.emplace_back(json::serialize(o));
      return;
    }
    out.emplace_back(data);
  }
  bool finished() const override { return finished_; }
  // A server that never sends [DONE] (TGI before 2.1.1, llama.cpp before b3750): a stream that
  // delivered its finish reason and then its final usage, and ended cleanly, is whole.
  bool accept_end_without_terminator(std::vector<std::string>&) override {
    if (finish_seen_ && usage_.reported && !after_usage_) finished_ = true;
    return finished_;
  }
  Usage usage() const override { return usage_; }
  // The bill is the last usage object, and only when no chunk came after it (a usage reported
  // early, then more tokens, is not the whole bill).
  bool usage_final() const override { return usage_.reported && !after_usage_; }
  std::optional<policy::Outcome> error() const override { return error_; }

 private:
  /// A `"usage":` member whose value is an object (whitespace allowed after the colon).
  static bool has_usage_object(std::string_view data) {
    for (auto pos = data.find("\"usage\""); pos != std::string_view::npos; pos = data.find("\"usage\"", pos + 7)) {
      auto i = pos + 7;
      while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
      if (i < data.size() && data[i] == ':') {
        ++i;
        while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
        if (i < data.size() && data[i] == '{') return true;
      }
    }
    return false;
  }

  /// A `"finish_reason":` member whose value is a string (not null).
  static bool has_finish_reason(std::string_view data) {
    for (auto pos = data.find("\"finish_reason\""); pos != std::string_view::npos;
         pos = data.find("\"finish_reason\"", pos + 15)) {
      auto i = pos + 15;
      while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
      if (i < data.size() && data[i] == ':') {
        ++i;
        while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
        if (i < data.size() && data[i] == '"') return true;
      }
    }
    return false;
  }

  /// The stream's first chunk with deltas: each delta without `role` gets "assistant" (servers
  /// that omit it: langchain-ai/langchainjs#11157; llama.cpp's `"role": null`,
  /// lemonade-sdk/lemonade#350). True when `chunk` changed.
  bool give_role(json::object& chunk) {
    auto* choices = chunk.if_contains("choices");
    if (choices == nullptr || !choices->is_array() || choices->as_array().empty()) return false;
    role_checked_ = true;
    bool changed = false;
    for (auto& c : choices->as_array()) {
      auto* delta = c.is_object() ? c.as_object().if_contains("delta") : nullptr;
      if (delta == nullptr || !delta->is_object()) continue;
      auto* role = delta->as_object().if_contains("role");
      if (role != nullptr && role->is_string() && !role->as_string().empty()) continue;
      delta->as_object()["role"] = "assistant";
      changed = true;
    }
    return changed;
  }

  bool include_usage_;
  bool finished_ = false;
  bool role_checked_ = false;  // the first chunk with deltas was looked at (give_role)
  bool finish_seen_ = false;  // a chunk carried a finish reason
  ToolCallIndexer tools_;
  bool after_usage_ = false;  // a chunk arrived after the last usage object
  Usage usage_;
  std::optional<policy::Outcome> error_;
};

std::string trim_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

/// OpenAI's embeddings usage (https://platform.openai.com/docs/api-reference/embeddings/object):
/// `{"prompt_tokens", "total_tokens"}`, no completion tokens. `reported` false when absent or
/// when `prompt_tokens` is not a non-negative integer.
Usage usage_from_openai_embeddings(const json::object& response) {
  Usage u;
  const auto* uv = response.if_contains("usage");
  const auto* o = uv ? uv->if_object() : nullptr;
  if (o == nullptr) return u;
  const auto prompt = detail::json_count(*o, "prompt_tokens");
  if (!prompt) return u;
  u.reported = true;
  u.prompt_tokens = *prompt;
  return u;
}

/// The upstream path of `api` under an OpenAI base URL (and an Azure deployment URL).
std::string_view api_path(CallApi api) {
  switch (api) {
    case CallApi::embeddings: return "/embeddings";
    case CallApi::completions: return "/completions";
    case CallApi::responses: return "/responses";
    default: return "/chat/completions";
  }
}

/// One OpenAI (or Azure OpenAI) endpoint: chat completions, embeddings or legacy completions.
class OpenAiProvider : public Provider {
 public:
  constexpr explicit OpenAiProvider(bool azure, CallApi api = CallApi::chat) : azure_(azure), api_(api) {}

  bool relays_openai_body() const override { return true; }

  const Provider* for_api(const config::Deployment& d, CallApi api) const override;

  static bool is_openai_itself(const config::Deployment& d) {
    return d.api_base.empty() || d.api_base.find("api.openai.com") != std::string::npos;
  }

  static bool has_cache_control(const json::object& chat) {
    const auto* messages = chat.if_contains("messages");
    if (messages == nullptr || !messages->is_array()) return false;
    for (const auto& mv : messages->get_array()) {
      const auto* content = mv.is_object() ? mv.get_object().if_contains("content") : nullptr;
      if (content == nullptr || !content->is_array()) continue;
      for (const auto& part : content->get_array())
        if (part.is_object() && part.get_object().contains("cache_control")) return true;
    }
    return false;
  }

  static void strip_cache_control(json::object& chat) {
    auto* messages = chat.if_contains("messages");
    if (messages == nullptr || !messages->is_array()) return;
    for (auto& mv : messages->get_array()) {
      auto* content = mv.is_object() ? mv.get_object().if_contains("content") : nullptr;
      if (content == nullptr || !content->is_array()) continue;
      for (auto& part : content->get_array())
        if (part.is_object()) part.get_object().erase("cache_control");
    }
  }

  void set_output_limit(const config::Deployment& d, json::object& chat, std::int64_t tokens,
                        OutputField caller_field) const override {
    if (api_ == CallApi::embeddings) return;  // no output to bound
    if (api_ == CallApi::completions) {       // the legacy endpoint knows max_tokens only
      chat.erase("max_completion_tokens");
      chat["max_tokens"] = tokens;
      return;
    }
    bool completion_field = caller_field == OutputField::max_completion_tokens;
    if (caller_field == OutputField::none) completion_field = azure_ || is_openai_itself(d);
    chat.erase(completion_field ? "max_tokens" : "max_completion_tokens");
    chat[completion_field ? "max_completion_tokens" : "max_tokens"] = tokens;
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& chat,
                                                                  bool stream) const override {
    std::string url;
    if (azure_) {
      if (d.api_base.empty()) return std::unexpected("azure deployment " + d.id + " has no api_base");
      const std::string version = d.api_version.empty() ? "2024-10-21" : d.api_version;
      // The deployment name is one path segment: percent-encoded (RFC 3986 unreserved kept), so
      // no name (a wildcard passes the caller's through) can add segments, a query or a fragment.
      url = trim_slash(d.api_base) + "/openai/deployments/" + path_segment(d.upstream_model) +
            std::string(api_path(api_)) + "?api-version=" + version;
    } else {
      url = (d.api_base.empty() ? std::string("https://api.openai.com/v1") : trim_slash(d.api_base)) +
            std::string(api_path(api_));
    }
    auto target = http::parse_url(url);
    if (!target) return std::unexpected(target.error());
    http::OutgoingRequest req;
    req.target = std::move(*target);
    if (!d.api_key.empty()) {
      if (azure_) req.headers.emplace_back("api-key", d.api_key);
      else req.headers.emplace_back("Authorization", "Bearer " + d.api_key);
    }
    chat["model"] = d.upstream_model;
    // Anthropic's prompt-cache marks (kept on content parts by the /v1/messages translation) are
    // not OpenAI fields: OpenAI's and Azure's own APIs do not get them; other OpenAI-compatible
    // servers (some route to Anthropic models and use them) do.
    // (On a copy: the body is the request's, and a later attempt may go to an Anthropic deployment.)
    const bool strip = api_ == CallApi::chat && (azure_ || is_openai_itself(d)) && has_cache_control(chat);
    if (stream && api_streams(api_)) {
      chat["stream"] = true;
      auto& so = chat["stream_options"];
      if (!so.is_object()) so = json::object();
      so.as_object()["include_usage"] = true;
    }
    if (strip) {
      json::object copy = chat;
      strip_cache_control(copy);
      req.body = json::serialize(copy);
    } else {
      req.body = json::serialize(chat);
    }
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment&, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec, {}, core::document_arena(body));
    if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
    auto& o = v.as_object();
    Parsed p;
    if (api_ == CallApi::embeddings) {
      auto* data = o.if_contains("data");
      if (!data || !data->is_array()) return std::unexpected("upstream embeddings response has no data");
      p.usage = usage_from_openai_embeddings(o);
      core::adopt(p.completion, std::move(o));
      return p;
    }
    auto* choices = o.if_contains("choices");
    if (!choices || !choices->is_array()) return std::unexpected("upstream response has no choices");
    p.usage = usage_from_openai_response(o);
    core::adopt(p.completion, std::move(o));
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_openai_body(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment&, bool include_usage) const override {
    if (!api_streams(api_)) return nullptr;
    return std::make_unique<OpenAiStreamDecoder>(include_usage);  // text_completion chunks share the shape
  }

 private:
  bool azure_;
  CallApi api_;
};

const OpenAiProvider kOpenAi(false);
const OpenAiProvider kAzure(true);
const OpenAiProvider kOpenAiEmbeddings(false, CallApi::embeddings);
const OpenAiProvider kAzureEmbeddings(true, CallApi::embeddings);
const OpenAiProvider kOpenAiCompletions(false, CallApi::completions);
const OpenAiProvider kAzureCompletions(true, CallApi::completions);

/// LiteLLM's `text-completion-openai/` prefix: the deployment is called on /completions only.
bool text_completion_only(const config::Deployment& d) { return d.provider_prefix == "text-completion-openai"; }

const Provider* OpenAiProvider::for_api(const config::Deployment& d, CallApi api) const {
  if (text_completion_only(d)) return api == CallApi::completions ? &kOpenAiCompletions : nullptr;
  switch (api) {
    case CallApi::chat: return azure_ ? &kAzure : &kOpenAi;
    case CallApi::embeddings: return azure_ ? &kAzureEmbeddings : &kOpenAiEmbeddings;
    case CallApi::completions: return azure_ ? &kAzureCompletions : &kOpenAiCompletions;
    case CallApi::responses: return &responses::native_adapter();  // the caller's body, natively
    default: return nullptr;
  }
}

}  // namespace

std::unique_ptr<StreamDecoder> openai_stream_decoder(bool include_usage) {
  return std::make_unique<OpenAiStreamDecoder>(include_usage);
}

const Provider& provider_for(config::ProviderKind kind) {
  switch (kind) {
    case config::ProviderKind::openai: return kOpenAi;
    case config::ProviderKind::azure: return kAzure;
    case config::ProviderKind::anthropic: return anthropic::adapter();
    case config::ProviderKind::gemini: return gemini::gemini_adapter();
    case config::ProviderKind::vertex_ai: return gemini::vertex_adapter();
    case config::ProviderKind::bedrock: return bedrock::adapter();
    case config::ProviderKind::sagemaker: return sagemaker::adapter();
    case config::ProviderKind::ollama: return ollama::generate_adapter();
    case config::ProviderKind::ollama_chat: return ollama::chat_adapter();
    case config::ProviderKind::cohere: return cohere::adapter();
    case config::ProviderKind::unsupported: return unsupported_provider();
  }
  return kOpenAi;
}

const Provider* adapter_for(const config::Deployment& d, CallApi api) {
  // model_info.mode (LiteLLM): an embedding model serves embeddings only; a chat or completion
  // model no embeddings. Other modes (and none) leave it to the provider.
  if (d.mode == "embedding" && api != CallApi::embeddings) return nullptr;
  if ((d.mode == "chat" || d.mode == "completion") && api == CallApi::embeddings) return nullptr;
  return provider_for(d.provider).for_api(d, api);
}

std::string operation_unsupported_message(const config::Deployment& d, CallApi api) {
  std::string out = "deployment '" + (d.id.empty() ? d.model_name : d.id) + "' (" + d.provider_prefix +
                    ") of model group '" + d.model_name + "' does not support " + std::string(api_name(api));
  if (!d.mode.empty()) out += " (model_info.mode: " + d.mode + ")";
  return out;
}

std::string_view provider_name(config::ProviderKind kind) {
  switch (kind) {
    case config::ProviderKind::openai: return "openai";
    case config::ProviderKind::azure: return "azure.ai.openai";
    case config::ProviderKind::anthropic: return "anthropic";
    case config::ProviderKind::gemini: return "gcp.gemini";
    case config::ProviderKind::vertex_ai: return "gcp.vertex_ai";
    case config::ProviderKind::bedrock: return "aws.bedrock";
    case config::ProviderKind::sagemaker: return "aws.sagemaker";
    case config::ProviderKind::ollama:
    case config::ProviderKind::ollama_chat: return "ollama";
    case config::ProviderKind::cohere: return "cohere";
    case config::ProviderKind::unsupported: return "unsupported";
  }
  return "openai";
}

}  // namespace tollgate::providers
