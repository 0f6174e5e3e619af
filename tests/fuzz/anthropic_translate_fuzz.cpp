// Fuzz target: the Anthropic Messages ⇄ OpenAI Chat Completions translation of whole bodies
// (providers/anthropic/translate.hpp), both ways, for responses and for requests.
//
// Input: byte 0 = direction (mod 4), then a JSON object:
//   0: an Anthropic message (response) → chat.completion → Anthropic message;
//   1: an OpenAI chat.completion → Anthropic message → chat.completion;
//   2: an Anthropic request (client → /v1/messages) → chat request → Anthropic request;
//   3: an OpenAI chat request → Anthropic request → chat request.
// Property: a round trip keeps the text (non-empty text blocks / parts, in order), the tool calls
// (id, name, and input/arguments as a JSON object, in order) and, for responses, the usage
// (prompt, completion and cached tokens as usage_from_anthropic / usage_from_openai read them).
#include <boost/json/object.hpp>
#include <vector>

#include "fuzz_support.hpp"
#include "providers/anthropic/translate.hpp"
#include "providers/usage.hpp"

namespace {

namespace json = boost::json;
namespace an = tollgate::providers::anthropic;
using tollgate::providers::Usage;

struct ToolCall {
  std::string id, name;
  json::value input;
  bool operator==(const ToolCall&) const = default;
};

struct Facts {
  std::vector<std::string> text;
  std::vector<ToolCall> tools;
  bool tools_exact = true;  // every tool call had a string id and name and an object input
};

std::string_view str(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

bool is_str(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && v->is_string();
}

/// An arguments string parsed as a JSON object, else nullopt (also when it holds a number beyond a
/// double's range: the translation then sends `{}`, as for any arguments it cannot read).
std::optional<json::value> object_of(const json::value* v) {
  if (!v || !v->is_string()) return std::nullopt;
  auto parsed = tollgate::fuzz::parse_json(v->get_string());
  if (!parsed || !parsed->is_object() || tollgate::fuzz::has_non_finite(*parsed)) return std::nullopt;
  return parsed;
}

/// Anthropic content (a string — requests only — or blocks): text blocks and tool_use blocks.
void read_anthropic_content(const json::value* content, Facts& f, bool string_allowed = true) {
  if (!content) return;
  if (content->is_string()) {
    if (!string_allowed) return;
    if (!content->get_string().empty()) f.text.emplace_back(content->get_string());
    return;
  }
  if (!content->is_array()) return;
  for (const auto& b : content->get_array()) {
    const auto* o = b.if_object();
    if (!o) continue;
    const auto type = str(*o, "type");
    if (type == "text" && is_str(*o, "text") && !str(*o, "text").empty()) f.text.emplace_back(str(*o, "text"));
    if (type == "tool_use") {
      const auto* input = o->if_contains("input");
      if (!is_str(*o, "id") || !is_str(*o, "name") || !input || !input->is_object()) {
        f.tools_exact = false;
        continue;
      }
      f.tools.push_back({std::string(str(*o, "id")), std::string(str(*o, "name")), *input});
    }
  }
}

/// An OpenAI message: content (string or text parts) and tool_calls.
void read_openai_message(const json::object& m, Facts& f) {
  if (const auto* c = m.if_contains("content")) {
    if (c->is_string() && !c->get_string().empty()) f.text.emplace_back(c->get_string());
    if (c->is_array()) {
      for (const auto& p : c->get_array()) {
        const auto* o = p.if_object();
        if (o && str(*o, "type") == "text" && is_str(*o, "text") && !str(*o, "text").empty())
          f.text.emplace_back(str(*o, "text"));
      }
    }
  }
  if (const auto* tc = m.if_contains("tool_calls"); tc && tc->is_array()) {
    for (const auto& c : tc->get_array()) {
      const auto* o = c.if_object();
      const auto* fn = o ? o->if_contains("function") : nullptr;
      const auto* fo = fn ? fn->if_object() : nullptr;
      const auto args = fo ? object_of(fo->if_contains("arguments")) : std::nullopt;
      if (!o || !fo || !is_str(*o, "id") || !is_str(*fo, "name") || !args) {
        f.tools_exact = false;
        continue;
      }
      f.tools.push_back({std::string(str(*o, "id")), std::string(str(*fo, "name")), *args});
    }
  }
}

const json::object* first_message(const json::object& completion) {
  const auto* choices = completion.if_contains("choices");
  if (!choices || !choices->is_array() || choices->get_array().empty()) return nullptr;
  const auto* c = choices->get_array()[0].if_object();
  const auto* m = c ? c->if_contains("message") : nullptr;
  return m ? m->if_object() : nullptr;
}

Facts facts_of_anthropic_message(const json::object& msg) {
  Facts f;
  read_anthropic_content(msg.if_contains("content"), f, false);  // a response's content is blocks
  return f;
}

Facts facts_of_completion(const json::object& completion) {
  Facts f;
  if (const auto* m = first_message(completion)) read_openai_message(*m, f);
  return f;
}

/// Text and tools of the user/assistant turns of a request (Anthropic or OpenAI shape).
Facts facts_of_turns(const json::object& req, bool anthropic) {
  Facts f;
  const auto* msgs = req.if_contains("messages");
  if (!msgs || !msgs->is_array()) return f;
  for (const auto& mv : msgs->get_array()) {
    const auto* m = mv.if_object();
    if (!m) continue;
    const auto role = str(*m, "role");
    if (role != "user" && role != "assistant") continue;
    // Tool calls belong to assistant turns (both APIs); a tool_use block in a user turn, which
    // Anthropic refuses, is not carried over.
    Facts turn;
    if (anthropic)
      read_anthropic_content(m->if_contains("content"), turn);
    else
      read_openai_message(*m, turn);
    f.text.insert(f.text.end(), turn.text.begin(), turn.text.end());
    if (role == "assistant") {
      f.tools.insert(f.tools.end(), turn.tools.begin(), turn.tools.end());
      f.tools_exact = f.tools_exact && turn.tools_exact;
    }
  }
  return f;
}

/// The text, in order (the translation may merge adjacent text blocks or split none: their
/// boundaries are not kept, their content is).
std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s;
  return out;
}

void check_same(const Facts& a, const Facts& b, bool check_tools) {
  TG_FUZZ_CHECK_TEXT(joined(a.text), joined(b.text));
  if (check_tools && a.tools_exact) TG_FUZZ_CHECK(a.tools == b.tools);
}

void check_same_usage(const Usage& a, const Usage& b) {
  if (!a.reported) return;
  TG_FUZZ_CHECK(b.reported);
  TG_FUZZ_CHECK(a.prompt_tokens == b.prompt_tokens);
  TG_FUZZ_CHECK(a.completion_tokens == b.completion_tokens);
  TG_FUZZ_CHECK(a.cached_tokens == b.cached_tokens);
}

json::value usage_or_null(const json::object& o) {
  const auto* u = o.if_contains("usage");
  return u ? *u : json::value(nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = tollgate::fuzz::as_text(data, size);
  const std::uint8_t direction = tollgate::fuzz::take_byte(in) % 4;
  auto parsed = tollgate::fuzz::parse_json(in);
  if (!parsed || !parsed->is_object()) return 0;
  const json::object& body = parsed->get_object();
  if (tollgate::fuzz::has_non_finite(*parsed)) return 0;  // core::parse_json refuses these upstream

  switch (direction) {
    case 0: {  // Anthropic message → chat.completion → Anthropic message
      const auto chat = an::messages_response_to_chat(body, "m");
      const auto back = an::chat_response_to_messages(chat, "m");
      check_same(facts_of_anthropic_message(body), facts_of_completion(chat), true);
      check_same(facts_of_anthropic_message(body), facts_of_anthropic_message(back), true);
      check_same_usage(an::usage_from_anthropic(usage_or_null(body)), an::usage_from_anthropic(usage_or_null(back)));
      break;
    }
    case 1: {  // chat.completion → Anthropic message → chat.completion
      const auto msg = an::chat_response_to_messages(body, "m");
      const auto back = an::messages_response_to_chat(msg, "m");
      const auto* m = first_message(body);
      // message.refusal stands in for a missing content: not a round trip of the text.
      const bool refusal = m && (!m->contains("content") || m->at("content").is_null()) && is_str(*m, "refusal");
      if (!refusal) check_same(facts_of_completion(body), facts_of_completion(back), true);
      check_same_usage(tollgate::providers::usage_from_openai(usage_or_null(body)),
                       tollgate::providers::usage_from_openai(usage_or_null(back)));
      break;
    }
    case 2: {  // Anthropic request → chat request → Anthropic request
      const auto chat = an::messages_request_to_chat(body);
      if (!chat) {
        TG_FUZZ_CHECK(!chat.error().empty());
        break;
      }
      const auto back = an::chat_request_to_messages(*chat, "m", 1024);
      check_same(facts_of_turns(body, true), facts_of_turns(back, true), true);
      break;
    }
    default: {  // chat request → Anthropic request → chat request
      const auto msgs = an::chat_request_to_messages(body, "m", 1024);
      const auto back = an::messages_request_to_chat(msgs);
      if (!back) break;
      check_same(facts_of_turns(body, false), facts_of_turns(*back, false), true);
      break;
    }
  }
  return 0;
}
