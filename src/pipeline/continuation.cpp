#include "pipeline/continuation.hpp"
#include "core/json_parse.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "providers/prefill.hpp"

namespace tollgate::pipeline {

namespace json = boost::json;

namespace {

std::optional<std::int64_t> int_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->get_uint64());
  return std::nullopt;
}

std::string_view str_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

bool present(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && !v->is_null();
}

/// A chat chunk that carries nothing once its repeated preamble is removed: no delta member
/// with a value, no finish reason, no usage.
bool empty_chunk(const json::object& o) {
  if (present(o, "usage")) return false;
  const auto* choices = o.if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return false;
  for (const auto& c : choices->get_array()) {
    if (!c.is_object()) return false;
    const auto& co = c.get_object();
    if (present(co, "finish_reason") || present(co, "logprobs")) return false;
    if (const auto* d = co.if_contains("delta"); d && d->is_object())
      for (const auto& [k, v] : d->get_object()) {
        if (v.is_null()) continue;
        if (v.is_string() && v.get_string().empty()) continue;
        return false;
      }
  }
  return true;
}

}  // namespace

std::string_view ClientStream::prefill() const { return providers::prefill_text(text_); }

void ClientStream::cut(core::Error cut) {
  cut_error_ = std::move(cut);
  continuing_ = true;
  // The prefill loses the trailing whitespace the client already has: where the continuation
  // repeats it (a model continuing "Hello" writes " world"), that much is not relayed again.
  lead_ = text_.substr(prefill().size());
  joins_open_block_ = open_text_block_ >= 0;
  block_base_ = joins_open_block_ ? open_text_block_ : next_block_;
}

bool ClientStream::strip_lead(json::value& text) {
  if (lead_.empty() || !text.is_string()) return false;
  const auto& t = text.get_string();
  std::size_t i = 0;
  while (i < t.size() && i < lead_.size() && t[i] == lead_[i]) ++i;
  if (i < t.size()) lead_.clear();  // the continuation's text goes its own way from here
  else lead_.erase(0, i);           // all of it repeated the dropped whitespace: more may follow
  if (i == 0) return false;
  text = json::string(std::string_view(t).substr(i));
  return true;
}

void ClientStream::add_text(std::string_view t) {
  if (t.empty()) return;
  text_ += t;
  ++text_events_;
}

bool ClientStream::relay(std::string& chunk) { return native_ ? relay_native(chunk) : relay_chat(chunk); }

void ClientStream::relay_all(std::vector<std::string>& chunks) {
  std::vector<std::string> out;
  out.reserve(chunks.size());
  for (auto& c : chunks) {
    const bool keep = relay(c);
    for (auto& extra : take_inserted()) out.push_back(std::move(extra));
    if (keep) out.push_back(std::move(c));
  }
  chunks = std::move(out);
}

bool ClientStream::relay_chat(std::string& chunk) {
  boost::system::error_code ec;
  auto v = json::parse(chunk, ec);  // written back only when changed and finite (core/json_parse.hpp)
  if (ec || !v.is_object()) return true;
  auto& o = v.as_object();
  bool changed = false;
  if (!id_ && !str_of(o, "id").empty()) id_ = std::string(str_of(o, "id"));
  if (!created_) created_ = int_of(o, "created");
  if (continuing_ || continued > 0) {
    // A continuation's chunks carry the client stream's identity.
    if (id_ && o.contains("id") && str_of(o, "id") != *id_) {
      o["id"] = *id_;
      changed = true;
    }
    if (created_ && o.contains("created") && int_of(o, "created") != created_) {
      o["created"] = *created_;
      changed = true;
    }
  }
  if (auto* choices = o.if_contains("choices"); choices && choices->is_array()) {
    for (auto& c : choices->get_array()) {
      if (!c.is_object()) continue;
      auto& co = c.get_object();
      if (int_of(co, "index").value_or(0) != 0) {
        multi_choice_ = true;
        continue;
      }
      if (present(co, "finish_reason")) finished_ = true;
      auto* delta = co.if_contains("delta");
      if (delta == nullptr || !delta->is_object()) continue;
      auto& d = delta->get_object();
      if ((continuing_ || continued > 0) && d.erase("role") > 0) changed = true;
      if (const auto* tc = d.if_contains("tool_calls"); tc && tc->is_array() && !tc->get_array().empty())
        other_output_ = true;
      if (auto* ct = d.if_contains("content"); ct && ct->is_string()) {
        if (continuing_ && strip_lead(*ct)) changed = true;
        add_text(ct->get_string());
      }
    }
  }
  if (!changed) return true;
  if (empty_chunk(o)) return false;  // only the continuation's repeated preamble
  if (core::has_non_finite(v)) return true;  // as it came: written back it would read `Infinity`
  chunk = json::serialize(o);
  return true;
}

bool ClientStream::relay_native(std::string& chunk) {
  boost::system::error_code ec;
  auto v = json::parse(chunk, ec);  // written back only when changed and finite (core/json_parse.hpp)
  if (ec || !v.is_object()) return true;
  auto& o = v.as_object();
  const auto type = str_of(o, "type");
  const bool rewriting = continuing_ || continued > 0;
  if (type == "message_start" || type == "ping") return !rewriting;  // the client has its own
  if (type == "message_stop") finished_ = true;
  if (type == "message_delta") {
    if (const auto* d = o.if_contains("delta"); d && d->is_object() && present(d->get_object(), "stop_reason"))
      finished_ = true;
    // A continuation that never went on in the client's open text block: closed before the end.
    if (rewriting && open_text_block_ >= 0) close_open_block();
  }
  const auto index = int_of(o, "index");
  if (!index) return true;  // message_delta, message_stop, error: as they are
  std::int64_t ci = *index;
  if (rewriting) ci = block_base_ + *index;
  bool changed = ci != *index;
  if (type == "content_block_start") {
    const auto* block = o.if_contains("content_block");
    const auto block_type = block && block->is_object() ? str_of(block->get_object(), "type") : std::string_view();
    if (rewriting && joins_open_block_ && *index == 0) {
      if (block_type == "text") return false;  // the client's text block goes on
      // Not text: the client's text block is closed, the continuation's blocks go after it.
      close_open_block();
      block_base_ = next_block_;
      ci = block_base_;
      changed = ci != *index;
    }
    if (block_type == "text") open_text_block_ = ci;
    else other_output_ = true;
    if (ci + 1 > next_block_) next_block_ = ci + 1;
  } else if (type == "content_block_delta") {
    auto* delta = o.if_contains("delta");
    if (delta && delta->is_object()) {
      auto& d = delta->get_object();
      if (str_of(d, "type") == "text_delta") {
        if (auto* t = d.if_contains("text"); t && t->is_string()) {
          if (rewriting && strip_lead(*t)) changed = true;
          if (ci == open_text_block_) add_text(t->get_string());
        }
      } else {
        other_output_ = true;
      }
    }
  } else if (type == "content_block_stop") {
    if (ci == open_text_block_) open_text_block_ = -1;
  }
  if (!changed || core::has_non_finite(v)) return true;
  o["index"] = ci;
  chunk = json::serialize(o);
  return true;
}

void ClientStream::close_open_block() {
  inserted_.push_back(json::serialize(json::object{{"type", "content_block_stop"}, {"index", open_text_block_}}));
  open_text_block_ = -1;
  joins_open_block_ = false;
}

}  // namespace tollgate::pipeline
