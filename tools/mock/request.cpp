// What a chat request asks for, and the answer the behaviour makes of it: prompt counting
// (text, media, cache_control prefixes), output length, token kinds, service tier, usage.
#include "mock.hpp"
#include "operations.hpp"

#include <cmath>

#include <boost/json/serialize.hpp>

namespace tollgate::mock {

namespace json = boost::json;

namespace {

constexpr int kMaxDepth = 8;

std::int64_t ceil_div4(std::int64_t b) { return (b + 3) / 4; }

// Text bytes and media of one part of a prompt.
struct Tally {
  std::int64_t bytes = 0;
  MediaTally media;

  // A message's tokens: ceil(text bytes / 4) + 4, plus its images and PDFs.
  std::int64_t tokens() const { return ceil_div4(bytes) + 4 + media.image_tokens + media.pdf_tokens; }
};

// Text is a string, or the `text` fields of content parts (nested `content`, e.g. tool results,
// included); image and PDF parts add their media tokens.
void tally(const json::value& v, const MediaRules& rules, Tally& t, int depth = 0) {
  if (depth > kMaxDepth) return;
  if (v.is_string()) {
    t.bytes += static_cast<std::int64_t>(v.get_string().size());
  } else if (v.is_array()) {
    for (const auto& part : v.get_array()) tally(part, rules, t, depth + 1);
  } else if (v.is_object()) {
    const auto& o = v.get_object();
    if (auto* text = o.if_contains("text"); text && text->is_string())
      t.bytes += static_cast<std::int64_t>(text->get_string().size());
    tally_media_part(o, rules, t.media);
    if (auto* c = o.if_contains("content"); c && !c->is_null()) tally(*c, rules, t, depth + 1);
  }
}

// The prompt of a request: its tokens, media, and the prefix up to the last cache_control mark.
struct Prompt {
  std::int64_t tokens = 0;
  MediaTally media;
  bool marked = false;          ///< some content block carries cache_control
  bool marked_1h = false;       ///< the last mark has ttl "1h"
  std::int64_t prefix_tokens = 0;  ///< tokens up to and including the last marked block
};

// The contents counted as messages, in prompt order: Anthropic's system first, then messages.
std::vector<const json::value*> prompt_units(const json::object& body, bool anthropic) {
  static const json::value kEmpty;
  std::vector<const json::value*> units;
  if (anthropic) {
    if (auto* sys = body.if_contains("system"); sys && !sys->is_null()) units.push_back(sys);
  }
  if (auto* msgs = body.if_contains("messages"); msgs && msgs->is_array()) {
    for (const auto& m : msgs->get_array()) {
      const json::value* content = m.is_object() ? m.get_object().if_contains("content") : nullptr;
      units.push_back(content ? content : &kEmpty);
    }
  }
  return units;
}

Prompt measure_prompt(const json::object& body, const MediaRules& rules) {
  Prompt p;
  auto units = prompt_units(body, rules.anthropic);
  std::size_t mark_unit = 0, mark_block = 0;
  std::vector<std::int64_t> unit_tokens;
  unit_tokens.reserve(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) {
    Tally t;
    tally(*units[u], rules, t);
    unit_tokens.push_back(t.tokens());
    p.tokens += t.tokens();
    p.media.image_tokens += t.media.image_tokens;
    p.media.pdf_pages += t.media.pdf_pages;
    p.media.pdf_tokens += t.media.pdf_tokens;
    if (!rules.anthropic || !units[u]->is_array()) continue;
    const auto& blocks = units[u]->get_array();
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (!blocks[k].is_object()) continue;
      auto* cc = blocks[k].get_object().if_contains("cache_control");
      if (!cc || !cc->is_object()) continue;
      p.marked = true;
      mark_unit = u;
      mark_block = k;
      auto* ttl = cc->get_object().if_contains("ttl");
      p.marked_1h = ttl && ttl->is_string() && ttl->get_string() == "1h";
    }
  }
  if (!p.marked) return p;
  for (std::size_t u = 0; u < mark_unit; ++u) p.prefix_tokens += unit_tokens[u];
  Tally partial;
  const auto& blocks = units[mark_unit]->get_array();
  for (std::size_t k = 0; k <= mark_block; ++k) tally(blocks[k], rules, partial, 1);
  p.prefix_tokens += partial.tokens();
  return p;
}

}  // namespace

std::optional<std::int64_t> int_field(const json::object& o, std::string_view key, bool& bad) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) {
    auto u = v->get_uint64();
    return u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
  }
  if (v->is_double() && std::isfinite(v->get_double()) && v->get_double() == std::floor(v->get_double()) &&
      std::fabs(v->get_double()) < 9e18)
    return static_cast<std::int64_t>(v->get_double());
  bad = true;
  return std::nullopt;
}

namespace {

std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) words.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

// The input side: prompt, its parts, cache reads and writes. False with `err` on a behaviour
// whose parts do not fit the prompt.
bool set_input(const json::object& body, const Behavior& b, Completion& c, std::string& err) {
  MediaRules rules;
  rules.anthropic = c.anthropic;
  rules.image_tokens = b.image_tokens;
  rules.pdf_tokens_per_page = b.pdf_tokens_per_page.value_or(kDefaultPdfTokensPerPage);
  Prompt p = measure_prompt(body, rules);
  if (b.prompt_tokens) {
    c.prompt_tokens = *b.prompt_tokens;  // replaces the whole measurement, media included
  } else {
    c.prompt_tokens = p.tokens;
    c.image_input_tokens = p.media.image_tokens;
    c.pdf_pages = p.media.pdf_pages;
    c.pdf_input_tokens = p.media.pdf_tokens;
  }
  if (!c.anthropic) {
    c.audio_input_tokens = b.audio_input_tokens.value_or(0);
    if (!b.prompt_tokens) {
      c.prompt_tokens += c.audio_input_tokens;
    } else if (c.audio_input_tokens > c.prompt_tokens) {
      err = "tollgate-mock: behavior field 'audio_input_tokens' (" + std::to_string(c.audio_input_tokens) +
            ") exceeds the prompt (" + std::to_string(c.prompt_tokens) + " tokens)";
      return false;
    }
  }
  std::int64_t cached = b.cached_tokens.value_or(0);
  c.cached_tokens = cached < c.prompt_tokens ? cached : c.prompt_tokens;
  if (!c.anthropic) return true;  // the OpenAI family reports no cache writes
  if (b.cache_write_tokens || b.cache_write_1h_tokens) {
    std::int64_t w5 = b.cache_write_tokens.value_or(0), w1h = b.cache_write_1h_tokens.value_or(0);
    if (cached + w5 + w1h > c.prompt_tokens) {
      err = "tollgate-mock: behavior fields cached_tokens + cache_write_tokens + cache_write_1h_tokens (" +
            std::to_string(cached + w5 + w1h) + ") exceed the prompt (" + std::to_string(c.prompt_tokens) +
            " tokens)";
      return false;
    }
    c.cache_write_tokens = w5;
    c.cache_write_1h_tokens = w1h;
  } else if (p.marked) {
    std::int64_t room = c.prompt_tokens - c.cached_tokens;
    std::int64_t written = p.prefix_tokens < room ? p.prefix_tokens : room;
    (p.marked_1h ? c.cache_write_1h_tokens : c.cache_write_tokens) = written;
  }
  c.web_search_calls = b.web_search_calls.value_or(0);
  return true;
}

// The output side per choice: visible tokens, reasoning, finish reason and the extra kinds.
}  // namespace

void set_output(const Behavior& b, std::optional<std::int64_t> cap, Completion& c, std::int64_t done) {
  std::int64_t desired = 16;
  if (b.content) {
    c.words = split_words(*b.content);
    desired = static_cast<std::int64_t>(c.words.size());
  }
  if (b.completion_tokens) desired = *b.completion_tokens;
  desired = desired > done ? desired - done : 0;
  // Bound the total output (tokens x choices) so no request can exhaust memory.
  std::int64_t limit = kMaxCompletionTokens / c.n;
  if (desired > limit) desired = limit;
  std::int64_t reasoning = b.reasoning_tokens.value_or(0);
  // Audio output is generated output (OpenAI only): like reasoning it counts against the cap.
  std::int64_t audio = c.anthropic ? 0 : b.audio_output_tokens.value_or(0);
  // Reasoning first, then audio, take what the cap leaves.
  auto fit_hidden = [&](std::int64_t room) {
    if (reasoning > room) reasoning = room;
    room -= reasoning;
    if (audio > room) audio = room;
  };
  if (b.fill_max_tokens.value_or(false)) {
    // A verbose model: it runs into the cap (or, with none, its own limit) every time.
    if (cap) {
      fit_hidden(*cap);
      c.tokens = *cap - reasoning - audio < limit ? *cap - reasoning - audio : limit;
    } else {
      c.tokens = desired;
    }
    c.capped = true;
  } else if (b.ignore_max_tokens.value_or(false) || !cap || desired + reasoning + audio <= *cap) {
    c.tokens = desired;
  } else {
    // The cap bounds visible + reasoning + audio tokens; the hidden ones come first.
    c.capped = true;
    fit_hidden(*cap);
    c.tokens = *cap - reasoning - audio;
  }
  c.reasoning_tokens = reasoning;
  if (c.anthropic) return;  // thinking is part of output_tokens; the rest is OpenAI-only
  c.reasoning_outside = b.reasoning_outside.value_or(false);
  c.audio_output_tokens = audio;
  c.rejected_prediction_tokens = b.rejected_prediction_tokens.value_or(0);
  std::int64_t accepted = b.accepted_prediction_tokens.value_or(0);
  c.accepted_prediction_tokens = accepted < c.tokens ? accepted : c.tokens;
}

std::int64_t text_tokens(std::string_view text) { return ceil_div4(static_cast<std::int64_t>(text.size())); }

std::string service_tier_of(const json::object& body, const Behavior& b, bool anthropic) {
  if (b.service_tier) return *b.service_tier;
  std::string asked;
  if (auto* st = body.if_contains("service_tier"); st && st->is_string()) asked = st->get_string();
  if (anthropic) return asked == "priority" ? "priority" : "standard";
  return asked.empty() || asked == "auto" ? "default" : asked;
}

Counts Completion::counts(std::int64_t visible) const {
  Counts k;
  k.prompt = prompt_tokens;
  k.cached = cached_tokens;
  k.cache_write = cache_write_tokens;
  k.cache_write_1h = cache_write_1h_tokens;
  k.audio_input = audio_input_tokens;
  k.web_search_calls = web_search_calls;
  bool complete = visible >= tokens;
  std::int64_t v = complete ? tokens : (visible > 0 ? visible : 0);
  k.reasoning = reasoning_tokens * n;
  k.reasoning_outside = reasoning_outside;
  k.audio_output = complete ? audio_output_tokens * n : 0;
  k.rejected_prediction = complete ? rejected_prediction_tokens * n : 0;
  k.accepted_prediction = complete ? accepted_prediction_tokens * n : 0;
  k.completion = v * n + k.audio_output + k.rejected_prediction + (reasoning_outside ? 0 : k.reasoning);
  return k;
}

namespace {

bool blank(char ch) { return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'; }

// The text of a final assistant message the request asks to be continued (nullopt: none):
// Anthropic continues any final assistant message; the OpenAI family only one marked as a
// prefix (Mistral's `prefix: true`, vLLM's `continue_final_message: true`). False with `err`
// when the prefill is refused (behaviour reject_prefill; Anthropic: trailing whitespace).
bool prefill_of(const json::object& body, bool anthropic, const Behavior& b, std::optional<std::string>& out,
                std::string& err) {
  const auto& msgs = body.at("messages").get_array();
  if (msgs.empty() || !msgs.back().is_object()) return true;
  const auto& last = msgs.back().get_object();
  const auto* role = last.if_contains("role");
  if (!role || !role->is_string() || role->get_string() != "assistant") return true;
  if (!anthropic) {
    const auto* cont = body.if_contains("continue_final_message");
    const auto* prefix = last.if_contains("prefix");
    if (!(cont && cont->is_bool() && cont->get_bool()) && !(prefix && prefix->is_bool() && prefix->get_bool()))
      return true;  // a turn of the conversation, answered anew
  }
  if (b.reject_prefill.value_or(false)) {
    err = anthropic ? "Prefilling assistant messages is not supported for this model."
                    : "continue_final_message / prefix is not supported by this model.";
    return false;
  }
  std::string text;
  if (const auto* c = last.if_contains("content")) {
    if (c->is_string()) text = c->get_string();
    else if (c->is_array())
      for (const auto& part : c->get_array())
        if (part.is_object())
          if (const auto* t = part.get_object().if_contains("text"); t && t->is_string()) text += t->get_string();
  }
  if (anthropic && !text.empty() && blank(text.back())) {
    err = "messages: final assistant content cannot end with trailing whitespace";
    return false;
  }
  out = std::move(text);
  return true;
}

// Pieces of the canonical answer (`canon`, its `tokens` the whole answer) the prefill holds:
// the k whose first k pieces, trailing whitespace aside, are the prefill; 0 when none.
std::int64_t prefill_pieces(const Completion& canon, std::string_view prefill) {
  std::string s;
  for (std::int64_t k = 1; k <= canon.tokens && s.size() <= prefill.size(); ++k) {
    s += canon.piece(k - 1);
    std::string_view t(s);
    while (!t.empty() && blank(t.back())) t.remove_suffix(1);
    if (t == prefill) return k;
  }
  return 0;
}

}  // namespace

bool build_completion(const json::object& body, bool anthropic, const Behavior& b, Completion& c,
                      std::string& err) {
  auto* msgs = body.if_contains("messages");
  if (!msgs || !msgs->is_array()) {
    err = anthropic ? "messages: Field required" : "Missing required parameter: 'messages'.";
    return false;
  }
  bool bad = false;
  std::optional<std::int64_t> max_tokens = int_field(body, "max_tokens", bad);
  if (!anthropic) {
    if (auto mct = int_field(body, "max_completion_tokens", bad)) max_tokens = mct;
  }
  std::int64_t n = 1;
  if (!anthropic) {
    if (auto v = int_field(body, "n", bad)) n = *v;
  }
  if (bad || (max_tokens && *max_tokens < 1) || n < 1 || n > kMaxChoices) {
    err = bad ? "Invalid type for an integer parameter (max_tokens, max_completion_tokens or n)."
              : "Invalid value: max_tokens must be at least 1 and n between 1 and 128.";
    return false;
  }
  if (anthropic && !max_tokens) {
    err = "max_tokens: Field required";
    return false;
  }
  if (auto* st = body.if_contains("service_tier"); st && !st->is_null() && !st->is_string()) {
    err = "Invalid type for 'service_tier': expected a string.";
    return false;
  }
  if (b.ignore_max_tokens.value_or(false) && b.fill_max_tokens.value_or(false)) {
    err = "tollgate-mock: behavior fields 'ignore_max_tokens' and 'fill_max_tokens' exclude each other";
    return false;
  }

  c.anthropic = anthropic;
  c.n = static_cast<int>(n);
  if (!set_input(body, b, c, err)) return false;
  if (b.echo_params.value_or(false)) {
    json::object echo;
    for (const char* k : {"temperature", "top_p", "seed", "presence_penalty", "frequency_penalty", "stop", "max_tokens",
                          "max_completion_tokens"})
      if (const auto* v = body.if_contains(k)) echo[k] = *v;
    Behavior with_text = b;
    with_text.content = json::serialize(echo);  // no spaces: one "word", sent back verbatim
    set_output(with_text, max_tokens, c);
  } else {
    std::optional<std::string> prefill;
    if (!prefill_of(body, anthropic, b, prefill, err)) return false;
    std::int64_t done = 0;
    if (prefill && !prefill->empty()) {
      Completion canon;
      set_output(b, std::nullopt, canon);
      done = prefill_pieces(canon, *prefill);
    }
    set_output(b, max_tokens, c, done);
    c.first = done;
    // A prefill that ends inside the text: the continuation opens with the separating space.
    c.lead_space = done > 0 && c.tokens > 0 && !blank(prefill->back());
  }
  bool stream = false;
  if (auto* st = body.if_contains("stream"); st && st->is_bool()) stream = st->get_bool();
  if (!anthropic && stream) {
    if (auto* so = body.if_contains("stream_options"); so && so->is_object()) {
      if (auto* iu = so->get_object().if_contains("include_usage"); iu && iu->is_bool())
        c.include_usage = iu->get_bool();
    }
  }
  c.service_tier = service_tier_of(body, b, anthropic);
  if (b.tool_call) {
    c.tool_name = *b.tool_call;
    c.tool_arguments = b.tool_arguments.value_or("{}");
  }
  c.usage_style = b.usage_style.value_or(UsageStyle::normal);
  c.usage_verbatim = b.usage.value_or("");
  return true;
}

}  // namespace tollgate::mock
