// Google's generateContent wire format, on both of its hosts: the Gemini API
// (/v1beta/models/{model}:generateContent, key in x-goog-api-key) and Vertex AI
// (/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent, an OAuth
// bearer token from POST /token). Requests are translated into the chat body the mock's engine
// answers (so behaviours, faults and billing are the same); answers are written in Google's shape.
// Shapes: https://ai.google.dev/api/generate-content ; Google AIP-193 errors; RFC 7523 / Google
// "OAuth 2.0 for Server to Server Applications" for the token endpoint.
#include "mock.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

#include <boost/json.hpp>
#include <boost/url/parse_query.hpp>

namespace tollgate::mock {

namespace json = boost::json;

namespace {

std::string_view str_or(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

/// `s` with %XX escapes decoded (a model name's `?directives` arrive as %3F).
std::string percent_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// ---------------------------------------------------------------- OAuth tokens

struct TokenState {
  std::mutex mu;
  std::map<std::string, std::int64_t> live;  // token → expiry (unix seconds)
  std::int64_t minted = 0;
  std::int64_t rejected = 0;
};

TokenState& tokens() {
  static TokenState t;
  return t;
}

struct GoogleError {
  int status = 500;
  const char* name = "INTERNAL";
  std::string message;
  const char* reason = nullptr;  // ErrorInfo reason, when Google gives one
};

GoogleError describe(const ErrorSpec& e, bool vertex) {
  const std::string& n = e.name;
  GoogleError g;
  if (n == "rate_limit_exceeded") {
    g = {429, "RESOURCE_EXHAUSTED",
         vertex ? "Resource exhausted. Please try again later. Please refer to "
                  "https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."
                : "You exceeded your current quota, please check your plan and billing details.",
         nullptr};
  } else if (n == "context_length_exceeded") {
    g = {400, "INVALID_ARGUMENT",
         "The input token count (" + std::to_string(e.prompt_tokens > 1048576 ? e.prompt_tokens : 1048577) +
             ") exceeds the maximum number of tokens allowed (1048576).",
         nullptr};
  } else if (n == "invalid_api_key") {
    if (vertex)
      g = {401, "UNAUTHENTICATED",
           "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
           "valid authentication credential.",
           nullptr};
    else
      g = {400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "API_KEY_INVALID"};
  } else if (n == "permission") {
    g = {403, "PERMISSION_DENIED", "Permission denied on resource project (or it may not exist).", nullptr};
  } else if (n == "not_found") {
    g = {404, "NOT_FOUND", "models/" + e.model + " is not found for API version v1beta.", nullptr};
  } else if (n == "invalid_request") {
    g = {400, "INVALID_ARGUMENT", "Invalid request: the mock was told to reject this request.", nullptr};
  } else if (n == "server_error") {
    g = {500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", nullptr};
  } else if (n == "overloaded") {
    g = {503, "UNAVAILABLE", "The model is overloaded. Please try again later.", nullptr};
  } else if (n == "timeout") {
    g = {504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete.", nullptr};
  } else if (n.empty()) {
    const int s = e.status ? e.status : 500;
    g.status = s;
    g.name = s == 429 ? "RESOURCE_EXHAUSTED" : s == 401 ? "UNAUTHENTICATED" : s == 403 ? "PERMISSION_DENIED"
             : s == 404 ? "NOT_FOUND" : s == 503 ? "UNAVAILABLE" : s == 504 ? "DEADLINE_EXCEEDED"
             : s >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
    g.message = "The mock returned status " + std::to_string(s) + ".";
  } else {
    g = {400, "INVALID_ARGUMENT", "Mock error '" + n + "'.", nullptr};
  }
  if (e.status) g.status = e.status;
  if (!e.message.empty()) g.message = e.message;
  return g;
}

Reply google_error(int status, std::string_view name, std::string_view message, const char* reason = nullptr) {
  Reply r;
  r.status = status;
  r.content_type = "application/json; charset=UTF-8";
  json::object err{{"code", status}, {"message", message}, {"status", name}};
  if (reason)
    err["details"] = json::array{json::object{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                                              {"reason", reason},
                                              {"domain", "googleapis.com"}}};
  r.body = json::serialize(json::object{{"error", std::move(err)}});
  return r;
}

class Google final : public Api {
 public:
  Google(bool vertex, std::string tool) : vertex_(vertex), tool_(std::move(tool)) {}

  std::string new_request_id() const override { return random_token(24); }
  std::string new_completion_id() const override { return random_token(22); }
  std::string base_headers(std::string_view) const override { return "server: scaffolding on HTTPServer2\r\nvary: Origin\r\n"; }
  std::string success_headers(const Completion&, std::string_view rid) const override { return base_headers(rid); }

  std::string body(const Completion& c) const override {
    if (!c.block_reason.empty()) return json::serialize(blocked(c));
    json::array cands;
    for (int k = 0; k < c.n; ++k) cands.push_back(candidate(c, k, c.text(c.tokens), true));
    json::object o{{"candidates", std::move(cands)}};
    add_usage(o, c, c.tokens);
    o["modelVersion"] = c.model;
    o["responseId"] = c.id;
    return json::serialize(o);
  }
  std::string stream_open(const Completion&) const override { return {}; }
  std::string stream_token(const Completion& c, std::int64_t i) const override {
    if (!tool_.empty()) return {};  // a function call is sent whole, with the finish
    json::array cands;
    for (int k = 0; k < c.n; ++k) cands.push_back(candidate(c, k, c.piece(i), false));
    json::object o{{"candidates", std::move(cands)}};
    add_usage(o, c, i + 1);
    o["modelVersion"] = c.model;
    o["responseId"] = c.id;
    return "data: " + json::serialize(o) + "\r\n\r\n";
  }
  std::string stream_finish(const Completion& c) const override {
    if (!c.block_reason.empty()) return "data: " + json::serialize(blocked(c)) + "\r\n\r\n";
    json::array cands;
    for (int k = 0; k < c.n; ++k) cands.push_back(candidate(c, k, tool_.empty() ? std::string() : c.text(c.tokens), true));
    json::object o{{"candidates", std::move(cands)}};
    add_usage(o, c, c.tokens);
    o["modelVersion"] = c.model;
    o["responseId"] = c.id;
    return "data: " + json::serialize(o) + "\r\n\r\n";
  }
  std::string stream_usage(const Completion&) const override { return {}; }
  std::string stream_done(const Completion&) const override { return {}; }
  std::string stream_malformed() const override { return "data: {not json\r\n\r\n"; }

  Reply error(const ErrorSpec& e) const override {
    if (e.name == "bad_gateway_html") {
      Reply r = bad_gateway_html(base_headers(e.request_id));
      if (e.status) r.status = e.status;
      return r;
    }
    const GoogleError g = describe(e, vertex_);
    Reply r = google_error(g.status, g.name, g.message, g.reason);
    r.headers = base_headers(e.request_id);
    if (e.retry_after || e.retry_after_ms) r.headers += "retry-after: " + retry_after_value(e.retry_after) + "\r\n";
    return r;
  }

 private:
  // A prompt blocked before generation: promptFeedback.blockReason, no candidates, the prompt's usage.
  json::object blocked(const Completion& c) const {
    json::object o{{"promptFeedback", json::object{{"blockReason", c.block_reason}}}};
    add_usage(o, c, 0);
    o["modelVersion"] = c.model;
    o["responseId"] = c.id;
    return o;
  }

  // One candidate: `text` (or the function call, whose arguments carry it) and, when `last`,
  // its finish reason.
  json::object candidate(const Completion& c, int k, const std::string& text, bool last) const {
    json::array parts;
    if (!tool_.empty() && last) {
      parts.push_back(json::object{{"functionCall", json::object{{"name", tool_}, {"args", json::object{{"text", text}}}}}});
    } else if (!text.empty()) {
      parts.push_back(json::object{{"text", text}});
    }
    json::object cand{{"content", json::object{{"parts", std::move(parts)}, {"role", "model"}}}, {"index", k}};
    if (last) cand["finishReason"] = c.capped ? "MAX_TOKENS" : "STOP";
    return cand;
  }
  void add_usage(json::object& o, const Completion& c, std::int64_t visible) const {
    if (c.usage_style == UsageStyle::omit || c.usage_style == UsageStyle::null) return;
    const Counts k = c.counts(visible);
    const std::int64_t thoughts = k.reasoning;
    const std::int64_t candidates = k.billed_output() - thoughts;
    json::object u{{"promptTokenCount", k.prompt}, {"candidatesTokenCount", candidates},
                   {"totalTokenCount", k.prompt + candidates + thoughts}};
    if (k.cached > 0) u["cachedContentTokenCount"] = k.cached;
    if (thoughts > 0) u["thoughtsTokenCount"] = thoughts;
    o["usageMetadata"] = std::move(u);
  }

  bool vertex_;
  std::string tool_;
};

/// A Gemini content's parts as OpenAI content parts (text; inline images as data URLs; calls and
/// results as their JSON text, so they count as prompt tokens).
json::array openai_parts(const json::array& parts) {
  json::array out;
  for (const auto& pv : parts) {
    const auto* p = pv.if_object();
    if (!p) continue;
    if (auto t = str_or(*p, "text"); !t.empty()) {
      out.push_back(json::object{{"type", "text"}, {"text", t}});
    } else if (const auto* id = p->if_contains("inlineData"); id && id->is_object()) {
      const auto& d = id->get_object();
      out.push_back(json::object{
          {"type", "image_url"},
          {"image_url", json::object{{"url", "data:" + std::string(str_or(d, "mimeType")) + ";base64," + std::string(str_or(d, "data"))}}}});
    } else if (const auto* fc = p->if_contains("functionCall")) {
      out.push_back(json::object{{"type", "text"}, {"text", json::serialize(*fc)}});
    } else if (const auto* fr = p->if_contains("functionResponse")) {
      out.push_back(json::object{{"type", "text"}, {"text", json::serialize(*fr)}});
    }
  }
  return out;
}

}  // namespace

std::optional<GoogleRoute> google_route(std::string_view path) {
  GoogleRoute r;
  std::string_view rest;
  if (path.starts_with("/v1beta/models/")) {
    rest = path.substr(15);
  } else if (path.starts_with("/v1/projects/") || path.starts_with("/v1beta1/projects/")) {
    const auto m = path.find("/publishers/google/models/");
    if (m == std::string_view::npos) return std::nullopt;
    r.vertex = true;
    rest = path.substr(m + 26);
  } else {
    return std::nullopt;
  }
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || rest.find('/') != std::string_view::npos) return std::nullopt;
  const auto method = rest.substr(colon + 1);
  if (method == "streamGenerateContent") r.stream = true;
  else if (method == "embedContent" && !r.vertex) r.embed = EmbedWire::gemini;
  else if (method == "batchEmbedContents" && !r.vertex) r.embed = EmbedWire::gemini_batch;
  else if (method == "predict" && r.vertex) r.embed = EmbedWire::vertex;
  else if (method != "generateContent") return std::nullopt;
  r.model = percent_decode(rest.substr(0, colon));
  if (r.model.empty()) return std::nullopt;
  return r;
}

std::expected<GoogleCall, Reply> google_prepare(const GoogleRoute& route, std::string_view body,
                                                std::string_view api_key, std::string_view authorization) {
  if (route.vertex) {
    if (!google_token_valid(authorization))
      return std::unexpected(google_error(401, "UNAUTHENTICATED",
                                          "Request had invalid authentication credentials. Expected OAuth 2 access "
                                          "token, login cookie or other valid authentication credential."));
  } else if (api_key.empty()) {
    return std::unexpected(google_error(403, "PERMISSION_DENIED",
                                        "Method doesn't allow unregistered callers (callers without established "
                                        "identity). Please use API Key or other form of API consumer identity to call "
                                        "this API."));
  }
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object())
    return std::unexpected(google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received."));
  if (route.embed) {  // read by the embeddings engine (embeddings.cpp), answered in Google's shape
    GoogleCall call;
    call.chat_body = std::string(body);
    call.api = std::make_unique<Google>(route.vertex, "");
    return call;
  }
  const auto& g = v.get_object();
  json::array messages;
  if (const auto* si = g.if_contains("systemInstruction"); si && si->is_object())
    if (const auto* parts = si->get_object().if_contains("parts"); parts && parts->is_array())
      messages.push_back(json::object{{"role", "system"}, {"content", openai_parts(parts->get_array())}});
  const auto* contents = g.if_contains("contents");
  if (!contents || !contents->is_array() || contents->get_array().empty())
    return std::unexpected(google_error(400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified"));
  for (const auto& cv : contents->get_array()) {
    const auto* c = cv.if_object();
    const auto* parts = c ? c->if_contains("parts") : nullptr;
    if (!parts || !parts->is_array()) continue;
    messages.push_back(json::object{{"role", str_or(*c, "role") == "model" ? "assistant" : "user"},
                                    {"content", openai_parts(parts->get_array())}});
  }
  json::object chat{{"model", route.model}, {"messages", std::move(messages)}, {"stream", route.stream}};
  if (const auto* gc = g.if_contains("generationConfig"); gc && gc->is_object()) {
    const auto& cfg = gc->get_object();
    if (const auto* m = cfg.if_contains("maxOutputTokens")) chat["max_tokens"] = *m;
    if (const auto* n = cfg.if_contains("candidateCount")) chat["n"] = *n;
    for (auto [from, to] : {std::pair{"temperature", "temperature"}, {"topP", "top_p"}, {"seed", "seed"},
                            {"stopSequences", "stop"}, {"presencePenalty", "presence_penalty"},
                            {"frequencyPenalty", "frequency_penalty"}})
      if (const auto* x = cfg.if_contains(from)) chat[to] = *x;
  }
  GoogleCall call;
  // A forced function call (mode ANY) is answered with a call of the first allowed function.
  const auto* tc = g.if_contains("toolConfig");
  const auto* fcc = tc && tc->is_object() ? tc->get_object().if_contains("functionCallingConfig") : nullptr;
  if (fcc && fcc->is_object() && str_or(fcc->get_object(), "mode") == "ANY") {
    const auto* allowed = fcc->get_object().if_contains("allowedFunctionNames");
    if (allowed && allowed->is_array() && !allowed->get_array().empty() && allowed->get_array()[0].is_string())
      call.tool = std::string(allowed->get_array()[0].get_string());
    const auto* tools = g.if_contains("tools");
    if (call.tool.empty() && tools && tools->is_array())
      for (const auto& t : tools->get_array()) {
        const auto* decls = t.is_object() ? t.get_object().if_contains("functionDeclarations") : nullptr;
        if (decls && decls->is_array() && !decls->get_array().empty() && decls->get_array()[0].is_object()) {
          call.tool = std::string(str_or(decls->get_array()[0].get_object(), "name"));
          break;
        }
      }
  }
  call.chat_body = json::serialize(chat);
  call.api = std::make_unique<Google>(route.vertex, call.tool);
  return call;
}

Reply google_token(std::string_view query, std::string_view form) {
  std::string grant, assertion;
  std::int64_t expires_in = 3600;
  auto read = [&](std::string_view text) {
    if (text.empty()) return;
    // Boost.URL 1.81's parse_query runs strlen over its argument: it must end with a NUL
    // (AddressSanitizer found the over-read on a form body).
    const std::string owned(text);
    auto params = boost::urls::parse_query(owned);
    if (!params) return;
    for (auto p : *params) {
      const std::string key = p.key.decode();
      const std::string value = p.has_value ? p.value.decode() : std::string();
      if (key == "grant_type") grant = value;
      else if (key == "assertion") assertion = value;
      else if (key == "expires_in") expires_in = std::atoll(value.c_str());
    }
  };
  read(form);
  read(query);  // the query wins: a test's token_uri can set expires_in, or spoil the grant
  auto reject = [&](std::string why) {
    std::lock_guard lock(tokens().mu);
    ++tokens().rejected;
    Reply r;
    r.status = 400;
    r.body = json::serialize(json::object{{"error", "invalid_grant"}, {"error_description", why}});
    return r;
  };
  if (grant != "urn:ietf:params:oauth:grant-type:jwt-bearer") return reject("Invalid grant_type");
  const auto d1 = assertion.find('.');
  const auto d2 = d1 == std::string::npos ? std::string::npos : assertion.find('.', d1 + 1);
  if (d2 == std::string::npos) return reject("Invalid JWT: not header.claims.signature");
  auto header = base64_decode(std::string_view(assertion).substr(0, d1));
  auto claims = base64_decode(std::string_view(assertion).substr(d1 + 1, d2 - d1 - 1));
  auto sig = base64_decode(std::string_view(assertion).substr(d2 + 1));
  boost::system::error_code ec1, ec2;
  auto h = header ? json::parse(*header, ec1) : json::value();
  auto c = claims ? json::parse(*claims, ec2) : json::value();
  if (!header || !claims || ec1 || ec2 || !h.is_object() || !c.is_object()) return reject("Invalid JWT encoding");
  if (str_or(h.get_object(), "alg") != "RS256" || str_or(h.get_object(), "typ") != "JWT")
    return reject("Invalid JWT header: alg must be RS256, typ JWT");
  if (!sig || sig->size() < 128) return reject("Invalid JWT Signature.");
  const auto& co = c.get_object();
  const auto* iat = co.if_contains("iat");
  const auto* exp = co.if_contains("exp");
  const std::int64_t now = unix_now();
  if (str_or(co, "iss").empty() || str_or(co, "scope").find("https://www.googleapis.com/auth/cloud-platform") == std::string_view::npos ||
      str_or(co, "aud").empty() || !iat || !exp || !iat->is_int64() || !exp->is_int64() ||
      exp->get_int64() - iat->get_int64() > 3600 || iat->get_int64() > now + 300 || exp->get_int64() < now)
    return reject("Invalid JWT claims (iss, scope, aud, iat, exp)");
  std::string token = "ya29.mock-" + random_token(40);
  {
    std::lock_guard lock(tokens().mu);
    ++tokens().minted;
    tokens().live[token] = now + expires_in;
  }
  Reply r;
  r.body = json::serialize(json::object{{"access_token", token}, {"expires_in", expires_in}, {"token_type", "Bearer"}});
  return r;
}

bool google_token_valid(std::string_view authorization) {
  if (!authorization.starts_with("Bearer ")) return false;
  std::lock_guard lock(tokens().mu);
  auto it = tokens().live.find(std::string(authorization.substr(7)));
  return it != tokens().live.end() && it->second > unix_now();
}

std::string google_token_stats() {
  std::lock_guard lock(tokens().mu);
  return json::serialize(json::object{{"minted", tokens().minted}, {"rejected", tokens().rejected}});
}

void google_reset() {
  std::lock_guard lock(tokens().mu);
  tokens().minted = 0;
  tokens().rejected = 0;
  tokens().live.clear();
}

}  // namespace tollgate::mock
