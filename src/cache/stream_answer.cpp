#include "cache/stream_answer.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

namespace tollgate::cache {
namespace json = boost::json;

namespace {

std::int64_t index_of(const json::object& o) {
  const auto* i = o.if_contains("index");
  return i && i->is_int64() ? i->as_int64() : 0;
}

void append_string(const json::object& o, const char* k, std::string& out, bool* seen = nullptr) {
  if (const auto* v = o.if_contains(k); v && v->is_string()) {
    out += std::string_view(v->as_string());
    if (seen) *seen = true;
  }
}

}  // namespace

void StreamAnswer::add(std::string_view chunk) {
  boost::system::error_code ec;
  auto v = core::parse_json(chunk, ec);
  if (ec || !v.is_object()) {
    malformed_ = true;
    return;
  }
  const auto& o = v.get_object();
  for (const char* k : {"id", "created", "model", "system_fingerprint"})
    if (const auto* x = o.if_contains(k); x && !x->is_null()) head_[k] = *x;
  if (const auto* u = o.if_contains("usage"); u && u->is_object()) usage_ = u->get_object();
  const auto* cs = o.if_contains("choices");
  if (!cs || !cs->is_array()) return;
  for (const auto& cv : cs->get_array()) {
    if (!cv.is_object()) continue;
    const auto& c = cv.get_object();
    Choice& ch = choices_[index_of(c)];
    if (const auto* d = c.if_contains("delta"); d && d->is_object()) {
      const auto& delta = d->get_object();
      if (const auto* r = delta.if_contains("role"); r && r->is_string()) ch.role = std::string(r->as_string());
      append_string(delta, "content", ch.content, &ch.has_content);
      append_string(delta, "refusal", ch.refusal);
      if (const auto* tcs = delta.if_contains("tool_calls"); tcs && tcs->is_array())
        for (const auto& tv : tcs->get_array()) {
          if (!tv.is_object()) continue;
          const auto& t = tv.get_object();
          ToolCall& tc = ch.tool_calls[index_of(t)];
          if (const auto* id = t.if_contains("id"); id && id->is_string()) tc.id = std::string(id->as_string());
          if (const auto* ty = t.if_contains("type"); ty && ty->is_string()) tc.type = std::string(ty->as_string());
          if (const auto* f = t.if_contains("function"); f && f->is_object()) {
            if (const auto* n = f->get_object().if_contains("name"); n && n->is_string()) tc.name += std::string_view(n->as_string());
            append_string(f->get_object(), "arguments", tc.arguments);
          }
        }
    }
    if (const auto* fr = c.if_contains("finish_reason"); fr && fr->is_string())
      ch.finish_reason = std::string(fr->as_string());
  }
}

std::optional<json::object> StreamAnswer::completion() const {
  if (malformed_ || choices_.empty()) return std::nullopt;
  json::object out = head_;
  out["object"] = "chat.completion";
  json::array choices;
  for (const auto& [i, ch] : choices_) {
    if (!ch.finish_reason) return std::nullopt;
    json::object msg;
    msg["role"] = ch.role;
    msg["content"] = ch.has_content || ch.tool_calls.empty() ? json::value(ch.content) : json::value(nullptr);
    if (!ch.refusal.empty()) msg["refusal"] = ch.refusal;
    if (!ch.tool_calls.empty()) {
      json::array tcs;
      for (const auto& [ti, tc] : ch.tool_calls)
        tcs.push_back(json::object{{"id", tc.id},
                                   {"type", tc.type.empty() ? std::string("function") : tc.type},
                                   {"function", json::object{{"name", tc.name}, {"arguments", tc.arguments}}}});
      msg["tool_calls"] = std::move(tcs);
    }
    choices.push_back(json::object{{"index", i}, {"message", std::move(msg)}, {"finish_reason", *ch.finish_reason}});
  }
  out["choices"] = std::move(choices);
  if (usage_) out["usage"] = *usage_;
  return out;
}

}  // namespace tollgate::cache
