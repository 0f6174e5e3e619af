// OpenAI Chat Completions and OpenAI-compatible servers (vLLM, Ollama, Groq, Together...), and
// Azure OpenAI, which speaks the same body at a deployment URL with `api-key` auth.
// Source: https://platform.openai.com/docs/api-reference/chat ;
// https://learn.microsoft.com/azure/ai-services/openai/reference
#include <boost/json.hpp>
#include <cctype>

#include "providers/anthropic/adapter.hpp"
#include "providers/cohere/adapter.hpp"
#include "providers/ollama/adapter.hpp"
#include "providers/openai_errors.hpp"
#include "providers/unsupported.hpp"
#include "providers/provider.hpp"

namespace tollgate::providers {
namespace json = boost::json;

namespace {

/// `s` percent-encoded as one URL path segment: every byte but RFC 3986's unreserved ones
/// (ALPHA / DIGIT / "-" / "." / "_" / "~") is written %XX; "." and ".." become %2E segments.
std::string path_segment(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  const bool dots = s == "." || s == "..";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (!dots && (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

class OpenAiStreamDecoder final : public StreamDecoder {
 public:
  explicit OpenAiStreamDecoder(bool include_usage) : include_usage_(include_usage) {}

  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override {
    std::string_view data = ev.data;
    if (data == "[DONE]") {
      finished_ = true;
      return;
    }
    // Most chunks are relayed byte for byte; only those that may carry a usage object or an
    // error are parsed (a `"usage":null` elsewhere in the chunk does not hide a real one).
    const bool maybe_usage = has_usage_object(data);
    const bool maybe_error = data.find("\"error\"") != std::string_view::npos;
    if (!maybe_usage && !maybe_error) {
      after_usage_ = true;
      out.emplace_back(data);
      return;
    }
    boost::system::error_code ec;
    auto v = json::parse(data, ec);
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
    out.emplace_back(data);
  }
  bool finished() const override { return finished_; }
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

  bool include_usage_;
  bool finished_ = false;
  bool after_usage_ = false;  // a chunk arrived after the last usage object
  Usage usage_;
  std::optional<policy::Outcome> error_;
};

std::string trim_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

class OpenAiProvider : public Provider {
 public:
  explicit OpenAiProvider(bool azure) : azure_(azure) {}

  bool relays_openai_body() const override { return true; }

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
            "/chat/completions?api-version=" + version;
    } else {
      url = (d.api_base.empty() ? std::string("https://api.openai.com/v1") : trim_slash(d.api_base)) + "/chat/completions";
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
    const bool strip = (azure_ || is_openai_itself(d)) && has_cache_control(chat);
    if (stream) {
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
    auto v = json::parse(body, ec);
    if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
    auto& o = v.as_object();
    auto* choices = o.if_contains("choices");
    if (!choices || !choices->is_array()) return std::unexpected("upstream response has no choices");
    Parsed p;
    p.usage = usage_from_openai_response(o);
    p.completion = std::move(o);
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_openai_body(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment&, bool include_usage) const override {
    return std::make_unique<OpenAiStreamDecoder>(include_usage);
  }

 private:
  bool azure_;
};

}  // namespace

const Provider& provider_for(config::ProviderKind kind) {
  static const OpenAiProvider openai(false);
  static const OpenAiProvider azure(true);
  switch (kind) {
    case config::ProviderKind::openai: return openai;
    case config::ProviderKind::azure: return azure;
    case config::ProviderKind::anthropic: return anthropic::adapter();
    case config::ProviderKind::gemini:
    case config::ProviderKind::vertex_ai:
    case config::ProviderKind::bedrock:
    case config::ProviderKind::sagemaker:
    case config::ProviderKind::ollama: return ollama::generate_adapter();
    case config::ProviderKind::ollama_chat: return ollama::chat_adapter();
    case config::ProviderKind::cohere: return cohere::adapter();
    case config::ProviderKind::unsupported: return unsupported_provider();
  }
  return openai;
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
