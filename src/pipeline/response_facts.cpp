#include "pipeline/response_facts.hpp"

#include <boost/json/parse.hpp>

#include "core/json_out.hpp"

namespace tollgate::pipeline {
namespace {

namespace json = boost::json;

std::string_view str(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->as_string()) : std::string_view();
}

bool capturing(const RunState& st) { return st.cfg.tollgate_settings.otel.capture_content; }

/// At most `n` bytes of `s`, never ending inside a UTF-8 sequence (a strict OTLP receiver
/// refuses a request holding invalid UTF-8).
std::string_view utf8_prefix(std::string_view s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // s[n] continues a sequence
  return s.substr(0, n);
}

/// Names and ids the caller or the upstream chose (roles, part types, tool names and ids):
/// kept short, whatever they send.
constexpr std::size_t kShortField = 256;
/// One per choice; a request asks for few (`n`), an upstream may send any number.
constexpr std::size_t kMaxFinishReasons = 16;
std::string_view short_field(std::string_view s) { return utf8_prefix(s, kShortField); }

/// Appends at most what is left of `budget` bytes of `text`.
void append_bounded(std::string& out, std::string_view text, std::size_t budget) {
  if (out.size() >= budget) return;
  out.append(utf8_prefix(text, budget - out.size()));
}

/// Whether `chunk` holds a `"finish_reason"` member whose value is a string (chunks carry
/// `"finish_reason":null` until the last one of each choice).
bool has_finish_reason(std::string_view chunk) {
  for (auto pos = chunk.find("\"finish_reason\""); pos != std::string_view::npos;
       pos = chunk.find("\"finish_reason\"", pos + 15)) {
    auto i = pos + 15;
    auto skip = [&] {
      while (i < chunk.size() && (chunk[i] == ' ' || chunk[i] == '\t' || chunk[i] == '\n' || chunk[i] == '\r')) ++i;
    };
    skip();
    if (i >= chunk.size() || chunk[i] != ':') continue;
    ++i;
    skip();
    if (i < chunk.size() && chunk[i] == '"') return true;
  }
  return false;
}

/// The text of an OpenAI message `content`: a string, or the text parts of an array.
void content_parts(core::JsonOut& j, const json::value* content, std::size_t& left) {
  auto text_part = [&](std::string_view t) {
    const auto n = std::min(t.size(), left);
    left -= n;
    j.begin_object().key("type").value("text").key("content").value(utf8_prefix(t, n)).end_object();
  };
  if (content == nullptr) return;
  if (content->is_string()) {
    text_part(content->as_string());
    return;
  }
  if (!content->is_array()) return;
  for (const auto& p : content->as_array()) {
    const auto* po = p.if_object();
    if (po == nullptr) continue;
    const auto type = str(*po, "type");
    if (type == "text") text_part(str(*po, "text"));
    else j.begin_object().key("type").value(short_field(type)).end_object();  // images, audio, files: no payload
  }
}

void tool_call_parts(core::JsonOut& j, const json::value* calls, std::size_t& left) {
  if (calls == nullptr || !calls->is_array()) return;
  for (const auto& c : calls->as_array()) {
    const auto* co = c.if_object();
    if (co == nullptr) continue;
    const auto* fn = co->if_contains("function");
    const auto* fo = fn ? fn->if_object() : nullptr;
    const auto args = fo ? str(*fo, "arguments") : std::string_view();
    const auto n = std::min(args.size(), left);
    left -= n;
    j.begin_object().key("type").value("tool_call").key("id").value(short_field(str(*co, "id")));
    j.key("name").value(short_field(fo ? str(*fo, "name") : std::string_view()));
    j.key("arguments").value(utf8_prefix(args, n)).end_object();
  }
}

}  // namespace

void reset_response_facts(RunState& st) {
  st.response_id.clear();
  st.first_chunk_read = false;
  st.finish_reasons.clear();
  st.captured_output_json.clear();
  st.captured_stream_text.clear();
}

void note_completion(RunState& st, const json::object& completion) {
  st.response_id = short_field(str(completion, "id"));
  st.finish_reasons.clear();
  const auto* choices = completion.if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return;
  for (const auto& c : choices->as_array())
    if (const auto* co = c.if_object())
      if (auto fr = str(*co, "finish_reason"); !fr.empty() && st.finish_reasons.size() < kMaxFinishReasons)
        st.finish_reasons.emplace_back(short_field(fr));
  if (!capturing(st)) return;
  std::string out;
  std::size_t left = kCapturedBytes;
  core::JsonOut j(out);
  j.begin_array();
  for (const auto& c : choices->as_array()) {
    if (out.size() > 2 * kCapturedBytes) break;  // the text budget is spent: no more empty shells
    const auto* co = c.if_object();
    const auto* m = co ? co->if_contains("message") : nullptr;
    const auto* mo = m ? m->if_object() : nullptr;
    if (mo == nullptr) continue;
    j.begin_object().key("role").value("assistant").key("parts").begin_array();
    content_parts(j, mo->if_contains("content"), left);
    tool_call_parts(j, mo->if_contains("tool_calls"), left);
    j.end_array();
    if (auto fr = str(*co, "finish_reason"); !fr.empty()) j.key("finish_reason").value(fr);
    j.end_object();
  }
  j.end_array();
  st.captured_output_json = std::move(out);
}

void note_stream_chunk(RunState& st, std::string_view chunk) {
  const bool capture = capturing(st);
  const bool first = !st.first_chunk_read;  // once per stream, even when it has no id
  st.first_chunk_read = true;
  const bool finish = has_finish_reason(chunk);
  if (!first && !finish && !capture) return;  // the common case: nothing to read
  boost::system::error_code ec;
  auto v = boost::json::parse(chunk, ec);  // only read, never written back
  if (ec || !v.is_object()) return;
  const auto& o = v.as_object();
  if (first) st.response_id = short_field(str(o, "id"));
  const auto* choices = o.if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return;
  for (const auto& c : choices->as_array()) {
    const auto* co = c.if_object();
    if (co == nullptr) continue;
    if (auto fr = str(*co, "finish_reason"); !fr.empty() && st.finish_reasons.size() < kMaxFinishReasons)
      st.finish_reasons.emplace_back(short_field(fr));
    if (!capture) continue;
    // The captured answer of a stream: the first choice's text as it arrived.
    if (const auto* idx = co->if_contains("index"); idx && idx->is_int64() && idx->as_int64() != 0) continue;
    const auto* delta = co->if_contains("delta");
    const auto* d = delta ? delta->if_object() : nullptr;
    if (d != nullptr) append_bounded(st.captured_stream_text, str(*d, "content"), kCapturedBytes);
  }
}

std::string output_messages_json(const RunState& st) {
  if (!st.captured_output_json.empty() || !st.call.stream) return st.captured_output_json;
  std::string out;
  core::JsonOut j(out);
  j.begin_array().begin_object().key("role").value("assistant").key("parts").begin_array();
  j.begin_object().key("type").value("text").key("content").value(st.captured_stream_text).end_object();
  j.end_array();
  if (!st.finish_reasons.empty()) j.key("finish_reason").value(st.finish_reasons.front());
  j.end_object().end_array();
  return out;
}

std::string input_messages_json(const json::object& request_body) {
  std::string out;
  std::size_t left = kCapturedBytes;
  core::JsonOut j(out);
  j.begin_array();
  const auto* messages = request_body.if_contains("messages");
  if (messages != nullptr && messages->is_array()) {
    for (const auto& m : messages->as_array()) {
      if (out.size() > 2 * kCapturedBytes) break;  // the text budget is spent: no more empty shells
      const auto* mo = m.if_object();
      if (mo == nullptr) continue;
      const auto role = str(*mo, "role");
      j.begin_object().key("role").value(short_field(role)).key("parts").begin_array();
      if (role == "tool") {
        const auto* content = mo->if_contains("content");
        const auto text = content && content->is_string() ? std::string_view(content->as_string()) : std::string_view();
        const auto n = std::min(text.size(), left);
        left -= n;
        j.begin_object().key("type").value("tool_call_response").key("id").value(short_field(str(*mo, "tool_call_id")));
        j.key("response").value(utf8_prefix(text, n)).end_object();
      } else {
        content_parts(j, mo->if_contains("content"), left);
        tool_call_parts(j, mo->if_contains("tool_calls"), left);
      }
      j.end_array().end_object();
    }
  }
  j.end_array();
  return out;
}

}  // namespace tollgate::pipeline
