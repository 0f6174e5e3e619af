// OpenAI legacy completions wire format (POST /v1/completions, Azure
// /openai/deployments/{d}/completions): the request's prompt side and output, `text_completion`
// bodies and stream chunks. Shapes: https://platform.openai.com/docs/api-reference/completions
// (the completion object; streamed, each chunk is a completion object with `text` deltas and,
// with stream_options.include_usage, a last chunk with empty choices and the usage). Errors,
// headers and ids follow the chat wire format (openai.cpp).
#include "operations.hpp"

#include <algorithm>

namespace tollgate::mock {

namespace json = boost::json;

namespace {

/// Most prompts in one request (each is answered on its own).
constexpr std::size_t kMaxPrompts = 2048;

/// One prompt of `prompt`: its token count and, for a string, its text (echo).
struct PromptItem {
  std::int64_t tokens = 0;
  std::string text;
};

bool is_token_array(const json::array& a) {
  for (const auto& v : a)
    if (!v.is_number()) return false;
  return true;
}

/// The prompts of a `prompt` value: a string, a token array, an array of strings or of token
/// arrays. False when it is none of those.
bool prompts_of(const json::value& v, std::vector<PromptItem>& out) {
  if (v.is_string()) {
    out.push_back({text_tokens(v.get_string()), std::string(v.get_string())});
    return true;
  }
  if (!v.is_array()) return false;
  const auto& a = v.get_array();
  if (a.empty()) return false;
  if (is_token_array(a)) {
    out.push_back({static_cast<std::int64_t>(a.size()), {}});
    return true;
  }
  for (const auto& e : a) {
    if (e.is_string()) out.push_back({text_tokens(e.get_string()), std::string(e.get_string())});
    else if (e.is_array() && !e.get_array().empty() && is_token_array(e.get_array()))
      out.push_back({static_cast<std::int64_t>(e.get_array().size()), {}});
    else
      return false;
  }
  return out.size() <= kMaxPrompts;
}

std::string usage_object(const Completion& c, std::int64_t visible) {
  const Counts k = c.counts(visible);
  const bool q = c.usage_style == UsageStyle::string_counts;
  return R"({"prompt_tokens":)" + count_json(k.prompt, q) + R"(,"completion_tokens":)" + count_json(k.completion, q) +
         R"(,"total_tokens":)" + count_json(k.total(), q) + "}";
}

std::string chunk_prefix(const Completion& c) {
  return R"(data: {"id":")" + c.id + R"(","object":"text_completion","created":)" + std::to_string(c.created) +
         R"(,"model":)" + json_quote(c.model) + R"(,"system_fingerprint":"fp_mock","choices":[)";
}

/// The end of a chunk `visible` tokens into the answer (usage styles as on chat).
std::string chunk_suffix(const Completion& c, std::int64_t visible) {
  switch (c.usage_style) {
    case UsageStyle::omit: return "]}\n\n";
    case UsageStyle::null: return "],\"usage\":null}\n\n";
    case UsageStyle::every_chunk: return "],\"usage\":" + usage_object(c, visible) + "}\n\n";
    default: return c.include_usage ? std::string("],\"usage\":null}\n\n") : std::string("]}\n\n");
  }
}

/// One legacy completions request: `shown_` choices are returned (c.n, the completions
/// generated and billed, counts best_of); with `echo`, each text starts with its prompt.
class TextCompletionApi final : public OperationApi {
 public:
  bool build(const json::object& body, const Behavior& b, Completion& c, std::string& err) override;
  std::string new_completion_id() const override { return "cmpl-" + random_token(29); }

  std::string body(const Completion& c) const override {
    const std::string text = c.text(c.tokens);
    const char* finish = c.capped ? "length" : "stop";
    const int per_prompt = echo_prompts_.empty() ? 0 : shown(c) / static_cast<int>(echo_prompts_.size());
    std::string out = R"({"id":")" + c.id + R"(","object":"text_completion","created":)" + std::to_string(c.created) +
                      R"(,"model":)" + json_quote(c.model) + R"(,"system_fingerprint":"fp_mock","choices":[)";
    for (int k = 0; k < shown(c); ++k) {
      if (k) out += ',';
      const std::string echoed = per_prompt > 0 ? echo_prompts_[static_cast<std::size_t>(k / per_prompt)] : std::string();
      out += R"({"text":)" + json_quote(echoed + text) + R"(,"index":)" + std::to_string(k) +
             R"(,"logprobs":null,"finish_reason":")" + finish + "\"}";
    }
    out += "]";
    if (c.usage_style == UsageStyle::null) out += R"(,"usage":null)";
    else if (c.usage_style != UsageStyle::omit) out += R"(,"usage":)" + usage_object(c, c.tokens);
    return out + "}";
  }

  std::string stream_open(const Completion&) const override { return {}; }  // no role chunk on this endpoint

  std::string stream_token(const Completion& c, std::int64_t i) const override {
    const std::string prefix = chunk_prefix(c), suffix = chunk_suffix(c, i + 1), piece = json_quote(c.piece(i));
    std::string out;
    for (int k = 0; k < shown(c); ++k)
      out += prefix + R"({"text":)" + piece + R"(,"index":)" + std::to_string(k) +
             R"(,"logprobs":null,"finish_reason":null})" + suffix;
    return out;
  }

  std::string stream_finish(const Completion& c) const override {
    const std::string prefix = chunk_prefix(c), suffix = chunk_suffix(c, c.tokens);
    const char* finish = c.capped ? "length" : "stop";
    std::string out;
    for (int k = 0; k < shown(c); ++k) {
      const bool last = k + 1 == shown(c);
      out += prefix + R"({"text":"","index":)" + std::to_string(k) + R"(,"logprobs":null,"finish_reason":")" + finish +
             "\"" +
             (last && c.usage_style == UsageStyle::with_finish ? "}],\"usage\":" + usage_object(c, c.tokens) + "}\n\n"
                                                                : "}" + suffix);
    }
    return out;
  }

  std::string stream_usage(const Completion& c) const override {
    const bool due = c.include_usage && (c.usage_style == UsageStyle::normal || c.usage_style == UsageStyle::every_chunk ||
                                         c.usage_style == UsageStyle::string_counts);
    if (!due) return {};
    return chunk_prefix(c) + "],\"usage\":" + usage_object(c, c.tokens) + "}\n\n";
  }

  std::string stream_done(const Completion& c) const override { return openai_api().stream_done(c); }

 private:
  int shown(const Completion& c) const { return shown_ > 0 ? shown_ : c.n; }
  int shown_ = 0;
  std::vector<std::string> echo_prompts_;  ///< per prompt, when `echo` is true
};

bool TextCompletionApi::build(const json::object& body, const Behavior& b, Completion& c, std::string& err) {
  const auto* prompt = body.if_contains("prompt");
  std::vector<PromptItem> prompts;
  if (prompt == nullptr || !prompts_of(*prompt, prompts)) {
    err = "Invalid 'prompt': expected a string, an array of strings, a token array or an array of token arrays "
          "(at most 2048 prompts).";
    return false;
  }
  bool bad = false;
  const auto max_tokens = int_field(body, "max_tokens", bad).value_or(16);  // OpenAI's default on this endpoint
  const auto n = int_field(body, "n", bad).value_or(1);
  const auto best_of = int_field(body, "best_of", bad).value_or(n);
  if (bad || max_tokens < 0 || n < 1 || n > kMaxChoices || best_of < n || best_of > 20) {
    err = bad ? "Invalid type for an integer parameter (max_tokens, n or best_of)."
              : "Invalid value: max_tokens must be >= 0, n between 1 and 128, best_of between n and 20.";
    return false;
  }
  if (b.ignore_max_tokens.value_or(false) && b.fill_max_tokens.value_or(false)) {
    err = "tollgate-mock: behavior fields 'ignore_max_tokens' and 'fill_max_tokens' exclude each other";
    return false;
  }
  const auto count = static_cast<std::int64_t>(prompts.size());
  // Every completion generated is billed: best_of per prompt (n of them are returned).
  c.n = static_cast<int>(best_of * count);
  shown_ = static_cast<int>(n * count);
  std::int64_t suffix_tokens = 0;
  if (const auto* sfx = body.if_contains("suffix"); sfx && sfx->is_string()) suffix_tokens = text_tokens(sfx->get_string());
  if (b.prompt_tokens) {
    c.prompt_tokens = *b.prompt_tokens;
  } else {
    for (const auto& p : prompts) c.prompt_tokens += p.tokens + suffix_tokens;
  }
  c.cached_tokens = std::min(b.cached_tokens.value_or(0), c.prompt_tokens);
  if (const auto* e = body.if_contains("echo"); e && e->is_bool() && e->get_bool())
    for (const auto& p : prompts) echo_prompts_.push_back(p.text);
  set_output(b, max_tokens, c);
  if (const auto* st = body.if_contains("stream"); st && st->is_bool() && st->get_bool())
    if (const auto* so = body.if_contains("stream_options"); so && so->is_object())
      if (const auto* iu = so->get_object().if_contains("include_usage"); iu && iu->is_bool()) c.include_usage = iu->get_bool();
  c.service_tier = service_tier_of(body, b, false);
  c.usage_style = b.usage_style.value_or(UsageStyle::normal);
  return true;
}

}  // namespace

std::unique_ptr<OperationApi> text_completion_api() { return std::make_unique<TextCompletionApi>(); }

}  // namespace tollgate::mock
