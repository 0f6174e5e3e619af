// Fuzz target: the streamed Anthropic ⇄ OpenAI translation (providers/anthropic/translate.hpp):
// MessagesStreamToChat (an Anthropic upstream's events → OpenAI chunks) and ChatStreamToMessages
// (OpenAI chunks → Anthropic events for a /v1/messages client).
//
// Input: byte 0 = read size of the SSE bytes, then an Anthropic Messages event stream (SSE). The
// events whose data is JSON (what the relay passes on) go through
//   Anthropic events → (MessagesStreamToChat) → chunks₁ → (ChatStreamToMessages) → events′
//   → (MessagesStreamToChat) → chunks₂.
// Property: chunks₁ and chunks₂ say the same — the text, the tool calls (index, id, name,
// arguments), the finish reason and, when chunks₁ carried a usage chunk, the usage (prompt,
// completion, cached tokens); every chunk and event is a JSON object.
#include <boost/json/object.hpp>
#include <map>
#include <set>
#include <vector>

#include "core/json_valid.hpp"
#include "fuzz_support.hpp"
#include "http/sse.hpp"
#include "providers/anthropic/translate.hpp"
#include "providers/usage.hpp"

namespace {

namespace json = boost::json;
namespace an = tollgate::providers::anthropic;
using tollgate::http::SseEvent;

struct Tool {
  std::string id, name, arguments;
  bool operator==(const Tool&) const = default;
};

struct Said {
  std::string text;
  std::map<std::int64_t, Tool> tools;
  std::optional<std::string> finish;
  std::optional<tollgate::providers::Usage> usage;
  /// A tool call's deltas resumed after another call's or after text: Anthropic's blocks are
  /// sequential, so ChatStreamToMessages cannot reopen the call's block (a known limit).
  bool interleaved = false;
};

json::object object_of(std::string_view text) {
  auto v = tollgate::fuzz::parse_json(text);
  TG_FUZZ_CHECK(v.has_value() && v->is_object());
  return std::move(v->get_object());
}

std::string_view str(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

Said said_by(const std::vector<std::string>& chunks) {
  Said s;
  std::int64_t last_tool = -1;
  for (const auto& c : chunks) {
    const auto o = object_of(c);
    if (const auto* u = o.if_contains("usage"); u && u->is_object())
      s.usage = tollgate::providers::usage_from_openai(*u);
    const auto* choices = o.if_contains("choices");
    if (!choices || !choices->is_array() || choices->get_array().empty()) continue;
    const auto* choice = choices->get_array()[0].if_object();
    if (!choice) continue;
    if (const auto* f = choice->if_contains("finish_reason"); f && f->is_string()) {
      s.finish = std::string(f->get_string());
      last_tool = -1;  // the finish closes the open block too
    }
    const auto* dv = choice->if_contains("delta");
    const auto* delta = dv ? dv->if_object() : nullptr;
    if (!delta) continue;
    s.text += str(*delta, "content");
    if (!str(*delta, "content").empty()) last_tool = -1;
    if (const auto* tc = delta->if_contains("tool_calls"); tc && tc->is_array()) {
      for (const auto& cv : tc->get_array()) {
        const auto* call = cv.if_object();
        const auto* idx = call ? call->if_contains("index") : nullptr;
        TG_FUZZ_CHECK(idx && idx->is_int64());
        if (idx->get_int64() != last_tool && s.tools.count(idx->get_int64())) s.interleaved = true;
        last_tool = idx->get_int64();
        auto& t = s.tools[idx->get_int64()];
        if (call->contains("id")) t.id = str(*call, "id");
        if (const auto* fn = call->if_contains("function"); fn && fn->is_object()) {
          if (fn->get_object().contains("name")) t.name = str(fn->get_object(), "name");
          t.arguments += str(fn->get_object(), "arguments");
        }
      }
    }
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = tollgate::fuzz::as_text(data, size);
  const std::size_t piece = 1 + tollgate::fuzz::take_byte(in);

  // Anthropic events → chunks₁ (the relay's order: JSON events only, in pieces).
  an::MessagesStreamToChat first("m", true, 1);
  std::vector<std::string> chunks1;
  tollgate::http::SseParser sse;
  for (std::size_t pos = 0; pos < in.size(); pos += piece) {
    sse.feed(in.substr(pos, piece), [&](SseEvent&& ev) {
      if (tollgate::core::is_json_text(ev.data)) first.on_event(ev, chunks1);
    });
  }
  if (!first.finished() && !first.error()) first.end_without_stop(chunks1);

  // chunks₁ → Anthropic events (what a /v1/messages client gets).
  an::ChatStreamToMessages to_messages("m");
  std::vector<an::AnthropicSseEvent> events;
  for (const auto& c : chunks1) to_messages.on_chunk(object_of(c), events);
  to_messages.finish(events);
  TG_FUZZ_CHECK(to_messages.finished());

  // … and back: chunks₂.
  an::MessagesStreamToChat second("m", true, 1);
  std::vector<std::string> chunks2;
  for (const auto& [name, payload] : events) {
    (void)object_of(payload);
    SseEvent ev;
    ev.event = name;
    ev.data = payload;
    second.on_event(ev, chunks2);
  }
  TG_FUZZ_CHECK(second.finished());
  TG_FUZZ_CHECK(!second.error());

  if (std::getenv("FUZZ_VERBOSE")) {
    for (const auto& c : chunks1) std::fprintf(stderr, "chunk1 %s\n", c.c_str());
    for (const auto& [n, p] : events) std::fprintf(stderr, "event %s %s\n", n.c_str(), p.c_str());
    for (const auto& c : chunks2) std::fprintf(stderr, "chunk2 %s\n", c.c_str());
  }
  const auto a = said_by(chunks1);
  const auto b = said_by(chunks2);
  TG_FUZZ_CHECK_TEXT(a.text, b.text);
  // Tool calls whose ids repeat (an upstream fault: ids are unique) may be merged on the way.
  std::set<std::string> ids;
  bool unique_ids = true;
  for (const auto& [index, t] : a.tools) unique_ids = ids.insert(t.id).second && unique_ids;
  if (unique_ids && !a.interleaved) TG_FUZZ_CHECK(a.tools == b.tools);
  // A stream that delivered tool calls ends in tool_use for an Anthropic client, whatever the
  // finish reason said (the `finish_stop` quirk, docs/quirks.md): it comes back as tool_calls.
  if (a.finish) TG_FUZZ_CHECK(a.finish == b.finish || (!a.tools.empty() && b.finish == "tool_calls"));
  if (a.usage && a.usage->reported) {
    TG_FUZZ_CHECK(b.usage && b.usage->reported);
    TG_FUZZ_CHECK(a.usage->prompt_tokens == b.usage->prompt_tokens);
    TG_FUZZ_CHECK(a.usage->completion_tokens == b.usage->completion_tokens);
    TG_FUZZ_CHECK(a.usage->cached_tokens == b.usage->cached_tokens);
  }
  return 0;
}
