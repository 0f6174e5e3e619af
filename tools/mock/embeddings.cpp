// OpenAI embeddings wire format (POST /v1/embeddings, Azure /openai/deployments/{d}/embeddings):
// the request's inputs, and a `list` of `embedding` objects with deterministic vectors.
// Shapes: https://platform.openai.com/docs/api-reference/embeddings (create; the embedding
// object: `embedding` an array of floats, or with encoding_format "base64" the little-endian
// float32 bytes in base64, as the official SDKs decode them; usage {prompt_tokens, total_tokens}).
// Errors, headers and ids follow the chat wire format (openai.cpp).
// The same engine (inputs, vectors, token counts, bill, behaviours) answers the native embeddings
// endpoints of other providers, each read into the OpenAI request (request_view) and answered in
// its own shape with its chat family's errors and headers: Gemini API :embedContent /
// :batchEmbedContents (ai.google.dev/api/embeddings; no usage reported), Vertex AI :predict
// (statistics.token_count per input), Ollama /api/embed (prompt_eval_count), Cohere /v2/embed
// (meta.billed_units.input_tokens); and Bedrock InvokeModel of Titan / Cohere embed models
// (Operation::titan_embeddings / cohere_embeddings, the body read by bedrock_invoke_to_embeddings).
#include "operations.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>

namespace tollgate::mock {

namespace json = boost::json;

namespace {

/// OpenAI's embedding models' input limit, tokens per input.
constexpr std::int64_t kMaxInputTokens = 8192;
constexpr std::size_t kMaxInputs = 2048;
constexpr std::int64_t kMaxDimensions = 65536;

/// A model's vector size when the request sets none (OpenAI text-embedding-3-large 3072, else
/// 1536; Gemini gemini-embedding-001 3072, else 768 (text-embedding-004/005); Ollama 768
/// (nomic-embed-text); Cohere embed-v4.0 1536, v3 1024).
std::int64_t default_dimensions(EmbedWire wire, std::string_view model) {
  switch (wire) {
    case EmbedWire::openai: return model.find("3-large") != std::string_view::npos ? 3072 : 1536;
    case EmbedWire::gemini:
    case EmbedWire::gemini_batch:
    case EmbedWire::vertex: return model.find("gemini-embedding") != std::string_view::npos ? 3072 : 768;
    case EmbedWire::ollama: return 768;
    case EmbedWire::cohere: return model.find("v4") != std::string_view::npos ? 1536 : 1024;
  }
  return 1536;
}

bool is_token_array(const json::array& a) {
  for (const auto& v : a)
    if (!v.is_number()) return false;
  return true;
}

std::string token_seed(const json::array& a) {
  std::string s;
  for (const auto& v : a) {
    if (!s.empty()) s += ',';
    s += json::serialize(v);
  }
  return s;
}

/// Reads one input item into `seeds` / `tokens`. False when it is not a non-empty string or
/// token array.
bool add_input(const json::value& v, std::vector<std::string>& seeds, std::vector<std::int64_t>& tokens) {
  if (v.is_string()) {
    if (v.get_string().empty()) return false;
    seeds.emplace_back(v.get_string());
    tokens.push_back(text_tokens(v.get_string()));
    return true;
  }
  if (v.is_array() && !v.get_array().empty() && is_token_array(v.get_array())) {
    seeds.push_back(token_seed(v.get_array()));
    tokens.push_back(static_cast<std::int64_t>(v.get_array().size()));
    return true;
  }
  return false;
}

/// FNV-1a, the seed of an input's vector.
std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

/// The vector of `seed`: `dims` components in [-1, 1), from xorshift64* (same input, same vector).
std::vector<float> vector_of(std::string_view seed, std::int64_t dims) {
  std::uint64_t x = fnv1a(seed) | 1;
  std::vector<float> v(static_cast<std::size_t>(dims));
  for (auto& f : v) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const std::uint64_t r = x * 2685821657736338717ull;
    f = static_cast<float>(static_cast<double>(r >> 40) / 8388608.0 - 1.0);  // 24 bits → [-1, 1)
  }
  return v;
}

std::string float_json(const std::vector<float>& v) {
  std::string out = "[";
  char buf[32];
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v[i]);
    (void)ec;
    out.append(buf, end);
  }
  return out + "]";
}

std::string float_base64(const std::vector<float>& v) {
  std::string bytes(v.size() * 4, '\0');
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto u = std::bit_cast<std::uint32_t>(v[i]);
    for (int k = 0; k < 4; ++k) bytes[i * 4 + static_cast<std::size_t>(k)] = static_cast<char>((u >> (8 * k)) & 0xFF);
  }
  return base64_encode(bytes);
}

/// The text of a Gemini `Content` (its parts' texts, concatenated); nullopt when it has none.
std::optional<std::string> content_text(const json::value* content) {
  const auto* o = content ? content->if_object() : nullptr;
  const auto* parts = o ? o->if_contains("parts") : nullptr;
  if (!parts || !parts->is_array()) return std::nullopt;
  std::string text;
  bool any = false;
  for (const auto& p : parts->get_array())
    if (const auto* t = p.is_object() ? p.get_object().if_contains("text") : nullptr; t && t->is_string()) {
      text += t->get_string();
      any = true;
    }
  return any ? std::optional<std::string>(std::move(text)) : std::nullopt;
}

/// Marks a native request the mock refuses (read by build as its 400 message).
constexpr std::string_view kViewError = "_mock_error";

json::object view_error(std::string message) { return json::object{{kViewError, std::move(message)}}; }

/// One embeddings request: its inputs (seed texts), vector size and encoding, in one wire format:
/// OpenAI's or a provider's native one (`wire_`), or Titan's / Cohere-on-Bedrock's (`op_`).
class EmbeddingsApi final : public OperationApi {
 public:
  EmbeddingsApi(Operation op, EmbedWire wire, const Api* family) : op_(op), wire_(wire), family_(family) {}

  bool build(const json::object& body, const Behavior& b, Completion& c, std::string& err) override;
  std::string new_completion_id() const override { return (bedrock() ? "" : "emb-") + random_token(bedrock() ? 32 : 29); }
  std::optional<json::object> request_view(const json::object& body) const override;

  std::string new_request_id() const override { return fam().new_request_id(); }
  std::string success_headers(const Completion& c, std::string_view rid) const override {
    return fam().success_headers(c, rid);
  }
  std::string base_headers(std::string_view rid) const override { return fam().base_headers(rid); }
  Reply error(const ErrorSpec& e) const override { return fam().error(e); }
  std::string_view family() const override { return bedrock() ? "bedrock" : fam().family(); }

  std::string body(const Completion& c) const override {
    if (op_ == Operation::titan_embeddings) return titan_body(c);
    if (op_ == Operation::cohere_embeddings) return bedrock_cohere_body(c);
    switch (wire_) {
      case EmbedWire::openai: return openai_body(c);
      case EmbedWire::gemini: return R"({"embedding":{"values":)" + float_json(vector_of(inputs_[0], dimensions_)) + "}}";
      case EmbedWire::gemini_batch: {
        std::string out = R"({"embeddings":[)";
        for (std::size_t i = 0; i < inputs_.size(); ++i)
          out += std::string(i ? "," : "") + R"({"values":)" + float_json(vector_of(inputs_[i], dimensions_)) + "}";
        return out + "]}";
      }
      case EmbedWire::vertex: return vertex_body(c);
      case EmbedWire::ollama: {
        std::string out = R"({"model":)" + json_quote(c.model) + R"(,"embeddings":)" + vectors_json();
        out += R"(,"total_duration":14143917,"load_duration":1019500)";
        if (c.usage_style != UsageStyle::omit && c.usage_style != UsageStyle::null)
          out += R"(,"prompt_eval_count":)" + count_json(c.prompt_tokens, c.usage_style == UsageStyle::string_counts);
        return out + "}";
      }
      case EmbedWire::cohere: {
        std::string out = R"({"id":)" + json_quote(c.id) + R"(,"embeddings":{"float":)" + vectors_json() + R"(},"texts":[)";
        for (std::size_t i = 0; i < inputs_.size(); ++i) out += (i ? "," : "") + json_quote(inputs_[i]);
        out += R"(],"meta":{"api_version":{"version":"2"})";
        if (c.usage_style != UsageStyle::omit && c.usage_style != UsageStyle::null)
          out += R"(,"billed_units":{"input_tokens":)" + count_json(c.prompt_tokens, c.usage_style == UsageStyle::string_counts) + "}";
        return out + R"(},"response_type":"embeddings_by_type"})";
      }
    }
    return {};
  }

  // Never streamed (the endpoint has no stream mode): a stream request is answered whole.
  std::string stream_open(const Completion&) const override { return {}; }
  std::string stream_token(const Completion&, std::int64_t) const override { return {}; }
  std::string stream_finish(const Completion&) const override { return {}; }
  std::string stream_usage(const Completion&) const override { return {}; }
  std::string stream_done(const Completion&) const override { return {}; }

 private:
  /// Bedrock's answers carry its request id header and errors (bedrock.cpp); the native wires
  /// their chat family's; OpenAI's its own.
  const Api& fam() const { return bedrock() ? bedrock_api() : family_ ? *family_ : openai_api(); }
  bool bedrock() const { return op_ != Operation::embeddings; }

  // Titan: {"embedding": [..], "inputTextTokenCount": n} (one input).
  std::string titan_body(const Completion& c) const {
    std::string out = R"({"embedding":)" + float_json(vector_of(inputs_.front(), dimensions_));
    const bool q = c.usage_style == UsageStyle::string_counts;
    if (c.usage_style == UsageStyle::null) out += R"(,"inputTextTokenCount":null)";
    else if (c.usage_style != UsageStyle::omit) out += R"(,"inputTextTokenCount":)" + count_json(c.prompt_tokens, q);
    return out + "}";
  }

  // Cohere Embed on Bedrock: {"embeddings": [[..]], "id", "response_type", "texts"}; no usage.
  std::string bedrock_cohere_body(const Completion& c) const {
    std::string out = R"({"embeddings":[)";
    std::string texts;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (i) out += ',', texts += ',';
      out += float_json(vector_of(inputs_[i], dimensions_));
      texts += json_quote(inputs_[i]);
    }
    return out + R"(],"id":)" + json_quote(c.id) + R"(,"response_type":"embeddings_floats","texts":[)" + texts + "]}";
  }

  std::string openai_body(const Completion& c) const {
    std::string out = R"({"object":"list","data":[)";
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (i) out += ',';
      const auto v = vector_of(inputs_[i], dimensions_);
      out += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":)" +
             (base64_ ? json_quote(float_base64(v)) : float_json(v)) + "}";
    }
    out += R"(],"model":)" + json_quote(c.model);
    const bool q = c.usage_style == UsageStyle::string_counts;
    if (c.usage_style == UsageStyle::null) out += R"(,"usage":null)";
    else if (c.usage_style != UsageStyle::omit)
      out += R"(,"usage":{"prompt_tokens":)" + count_json(c.prompt_tokens, q) + R"(,"total_tokens":)" +
             count_json(c.prompt_tokens, q) + "}";
    return out + "}";
  }

  std::string vertex_body(const Completion& c) const {
    std::string out = R"({"predictions":[)";
    std::int64_t chars = 0;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      out += std::string(i ? "," : "") + R"({"embeddings":{)";
      if (c.usage_style == UsageStyle::null) out += R"("statistics":null,)";
      else if (c.usage_style != UsageStyle::omit)
        out += R"("statistics":{"truncated":false,"token_count":)" +
               count_json(tokens_[i], c.usage_style == UsageStyle::string_counts) + "},";
      out += R"("values":)" + float_json(vector_of(inputs_[i], dimensions_)) + "}}";
      chars += static_cast<std::int64_t>(inputs_[i].size());
    }
    return out + R"(],"metadata":{"billableCharacterCount":)" + std::to_string(chars) + "}}";
  }

  std::string vectors_json() const {
    std::string out = "[";
    for (std::size_t i = 0; i < inputs_.size(); ++i) out += (i ? "," : "") + float_json(vector_of(inputs_[i], dimensions_));
    return out + "]";
  }

  Operation op_;
  EmbedWire wire_;
  const Api* family_;
  std::vector<std::string> inputs_;  ///< one seed per input: its text, or its token ids joined by commas
  std::vector<std::int64_t> tokens_;  ///< the tokens billed per input (their sum is the bill)
  std::int64_t dimensions_ = 0;
  bool base64_ = false;
};

std::optional<json::object> EmbeddingsApi::request_view(const json::object& body) const {
  json::object v;
  auto dims_from = [&v](const json::object& o, std::string_view key) {
    if (const auto* d = o.if_contains(key)) v["dimensions"] = *d;
  };
  switch (wire_) {
    case EmbedWire::openai: return std::nullopt;
    case EmbedWire::gemini: {
      auto text = content_text(body.if_contains("content"));
      if (!text) return view_error("* EmbedContentRequest.content: contents is not specified");
      v["input"] = *text;
      dims_from(body, "outputDimensionality");
      return v;
    }
    case EmbedWire::gemini_batch: {
      const auto* reqs = body.if_contains("requests");
      if (!reqs || !reqs->is_array() || reqs->get_array().empty())
        return view_error("* BatchEmbedContentsRequest.requests: requests is not specified");
      json::array input;
      for (const auto& r : reqs->get_array()) {
        auto text = r.is_object() ? content_text(r.get_object().if_contains("content")) : std::nullopt;
        if (!text) return view_error("* BatchEmbedContentsRequest.requests[].content: contents is not specified");
        input.emplace_back(*text);
        if (!v.contains("dimensions")) dims_from(r.get_object(), "outputDimensionality");
      }
      v["input"] = std::move(input);
      return v;
    }
    case EmbedWire::vertex: {
      const auto* inst = body.if_contains("instances");
      if (!inst || !inst->is_array() || inst->get_array().empty()) return view_error("instances is not specified");
      json::array input;
      for (const auto& i : inst->get_array()) {
        const auto* t = i.is_object() ? i.get_object().if_contains("content") : nullptr;
        if (!t || !t->is_string()) return view_error("Invalid instance: each instance needs a string 'content'.");
        input.emplace_back(t->get_string());
      }
      v["input"] = std::move(input);
      if (const auto* p = body.if_contains("parameters"); p && p->is_object()) dims_from(p->get_object(), "outputDimensionality");
      return v;
    }
    case EmbedWire::ollama: {
      for (const char* k : {"model", "input", "dimensions"})
        if (const auto* x = body.if_contains(k)) v[k] = *x;
      const auto* in = body.if_contains("input");
      bool text = in && (in->is_string() || (in->is_array() && !in->get_array().empty()));
      if (text && in->is_array())
        for (const auto& x : in->get_array()) text = text && x.is_string();
      if (!text) return view_error("invalid input type");
      return v;
    }
    case EmbedWire::cohere: {
      if (const auto* m = body.if_contains("model")) v["model"] = *m;
      const auto* texts = body.if_contains("texts");
      if (!texts || !texts->is_array() || texts->get_array().empty())
        return view_error("invalid request: texts must be a non-empty list of strings");
      if (texts->get_array().size() > 96)
        return view_error("invalid request: total number of texts must be at most 96 - received " +
                          std::to_string(texts->get_array().size()));
      const auto* it = body.if_contains("input_type");
      if (!it || !it->is_string() || it->get_string().empty())
        return view_error("invalid request: valid input_type must be provided with the provided model");
      const auto* types = body.if_contains("embedding_types");
      bool has_float = !types;
      if (types && types->is_array())
        for (const auto& t : types->get_array()) has_float = has_float || (t.is_string() && t.get_string() == "float");
      if (!has_float) return view_error("invalid request: tollgate-mock answers embedding_types [\"float\"] only");
      v["input"] = *texts;
      dims_from(body, "output_dimension");
      return v;
    }
  }
  return std::nullopt;
}

bool EmbeddingsApi::build(const json::object& body, const Behavior& b, Completion& c, std::string& err) {
  if (const auto* e = body.if_contains(kViewError); e && e->is_string()) {
    err = std::string(e->get_string());
    return false;
  }
  const auto* input = body.if_contains("input");
  std::vector<std::int64_t>& tokens = tokens_;
  bool ok = input != nullptr;
  if (ok && input->is_array() && !input->get_array().empty() && !is_token_array(input->get_array())) {
    ok = input->get_array().size() <= kMaxInputs;
    for (const auto& item : input->get_array()) ok = ok && add_input(item, inputs_, tokens);
  } else if (ok) {
    ok = add_input(*input, inputs_, tokens);
  }
  if (!ok) {
    err = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.";
    return false;
  }
  bool bad = false;
  const auto dims = int_field(body, "dimensions", bad);
  if (bad || (dims && (*dims < 1 || *dims > kMaxDimensions))) {
    err = "Invalid value for 'dimensions': expected an integer between 1 and " + std::to_string(kMaxDimensions) + ".";
    return false;
  }
  dimensions_ = dims.value_or(default_dimensions(wire_, c.model));
  if (const auto* f = body.if_contains("encoding_format"); f && !f->is_null()) {
    if (!f->is_string() || (f->get_string() != "float" && f->get_string() != "base64")) {
      err = "Invalid value for 'encoding_format': expected 'float' or 'base64'.";
      return false;
    }
    base64_ = f->get_string() == "base64";
  }
  // Titan Text Embeddings take 8,192 tokens; Cohere Embed v3 512 (Bedrock's truncate NONE: an error).
  const std::int64_t limit = op_ == Operation::cohere_embeddings ? 512 : kMaxInputTokens;
  for (const auto t : tokens) {
    if (t > limit && bedrock()) {
      err = "Input is too long for requested model. Too many input tokens. Max input tokens: " + std::to_string(limit) +
            ", request input token count: " + std::to_string(t);
      return false;
    }
    if (t > kMaxInputTokens) {
      err = "This model's maximum context length is " + std::to_string(kMaxInputTokens) +
            " tokens, however you requested " + std::to_string(t) + " tokens (" + std::to_string(t) +
            " in your prompt; 0 for the completion). Please reduce your prompt; or completion length.";
      return false;
    }
    c.prompt_tokens += t;
  }
  if (b.prompt_tokens) {  // the behaviour's count is the bill: reported on the first input
    c.prompt_tokens = *b.prompt_tokens;
    std::fill(tokens.begin(), tokens.end(), 0);
    tokens.front() = *b.prompt_tokens;
  }
  c.n = 1;
  c.tokens = 0;
  c.service_tier = "default";
  c.usage_style = b.usage_style.value_or(UsageStyle::normal);
  return true;
}

}  // namespace

std::unique_ptr<OperationApi> embeddings_api(Operation op, EmbedWire wire, const Api* family) {
  return std::make_unique<EmbeddingsApi>(op, wire, family);
}

}  // namespace tollgate::mock
