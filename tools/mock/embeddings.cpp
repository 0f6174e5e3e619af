// OpenAI embeddings wire format (POST /v1/embeddings, Azure /openai/deployments/{d}/embeddings):
// the request's inputs, and a `list` of `embedding` objects with deterministic vectors.
// Shapes: https://platform.openai.com/docs/api-reference/embeddings (create; the embedding
// object: `embedding` an array of floats, or with encoding_format "base64" the little-endian
// float32 bytes in base64, as the official SDKs decode them; usage {prompt_tokens, total_tokens}).
// Errors, headers and ids follow the chat wire format (openai.cpp).
#include "operations.hpp"

#include <boost/json/serialize.hpp>

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

/// One embeddings request: its inputs (seed texts), vector size and encoding; answered in
/// OpenAI's wire format, or Titan's / Cohere-on-Bedrock's (`op_`).
class EmbeddingsApi final : public OperationApi {
 public:
  explicit EmbeddingsApi(Operation op) : op_(op) {}
  bool build(const json::object& body, const Behavior& b, Completion& c, std::string& err) override;
  std::string new_completion_id() const override { return (bedrock() ? "" : "emb-") + random_token(bedrock() ? 32 : 29); }

  // Bedrock's answers carry its request id header and errors (bedrock.cpp).
  std::string new_request_id() const override {
    return bedrock() ? bedrock_api().new_request_id() : OperationApi::new_request_id();
  }
  std::string success_headers(const Completion& c, std::string_view rid) const override {
    return bedrock() ? bedrock_api().success_headers(c, rid) : OperationApi::success_headers(c, rid);
  }
  std::string base_headers(std::string_view rid) const override {
    return bedrock() ? bedrock_api().base_headers(rid) : OperationApi::base_headers(rid);
  }
  Reply error(const ErrorSpec& e) const override { return bedrock() ? bedrock_api().error(e) : OperationApi::error(e); }
  std::string_view family() const override { return bedrock() ? "bedrock" : ""; }

  std::string body(const Completion& c) const override {
    if (op_ == Operation::titan_embeddings) return titan_body(c);
    if (op_ == Operation::cohere_embeddings) return cohere_body(c);
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

  // Never streamed (the endpoint has no stream mode): a stream request is answered whole.
  std::string stream_open(const Completion&) const override { return {}; }
  std::string stream_token(const Completion&, std::int64_t) const override { return {}; }
  std::string stream_finish(const Completion&) const override { return {}; }
  std::string stream_usage(const Completion&) const override { return {}; }
  std::string stream_done(const Completion&) const override { return {}; }

 private:
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
  std::string cohere_body(const Completion& c) const {
    std::string out = R"({"embeddings":[)";
    std::string texts;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (i) out += ',', texts += ',';
      out += float_json(vector_of(inputs_[i], dimensions_));
      texts += json_quote(inputs_[i]);
    }
    return out + R"(],"id":)" + json_quote(c.id) + R"(,"response_type":"embeddings_floats","texts":[)" + texts + "]}";
  }

  Operation op_;
  std::vector<std::string> inputs_;  ///< one seed per input: its text, or its token ids joined by commas
  std::int64_t dimensions_ = 0;
  bool base64_ = false;
};

bool EmbeddingsApi::build(const json::object& body, const Behavior& b, Completion& c, std::string& err) {
  const auto* input = body.if_contains("input");
  std::vector<std::int64_t> tokens;
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
  dimensions_ = dims.value_or(c.model.find("3-large") != std::string::npos ? 3072 : 1536);
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
  if (b.prompt_tokens) c.prompt_tokens = *b.prompt_tokens;
  c.n = 1;
  c.tokens = 0;
  c.service_tier = "default";
  c.usage_style = b.usage_style.value_or(UsageStyle::normal);
  return true;
}

}  // namespace

std::unique_ptr<OperationApi> embeddings_api(Operation op) { return std::make_unique<EmbeddingsApi>(op); }

}  // namespace tollgate::mock
