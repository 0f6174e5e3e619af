#include "budget/token_bounds.hpp"

#include "budget/inline_data.hpp"
#include "budget/media_size.hpp"
#include "budget/media_tokens.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <limits>

namespace tollgate::budget {
namespace {

__extension__ typedef unsigned __int128 u128;

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Saturating helpers over non-negative int64 token counts.
std::int64_t sat_add(std::int64_t a, std::int64_t b) { return a > kInt64Max - b ? kInt64Max : a + b; }
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kInt64Max / b ? kInt64Max : a * b;
}

std::int64_t utf8_bytes_of_strings(const boost::json::value& v) {
  if (const auto* s = v.if_string()) return static_cast<std::int64_t>(s->size());
  std::int64_t total = 0;
  if (const auto* a = v.if_array()) {
    for (const auto& e : *a) total = sat_add(total, utf8_bytes_of_strings(e));
  } else if (const auto* o = v.if_object()) {
    for (const auto& kv : *o) total = sat_add(total, utf8_bytes_of_strings(kv.value()));
  }
  return total;
}

bool is_image_part(const boost::json::object& part) {
  const auto* type = part.if_contains("type");
  if (type == nullptr || !type->is_string()) return part.contains("image_url");
  const auto& t = type->get_string();
  return t == "image_url" || t == "image" || t == "input_image";
}

std::int64_t message_bound(const boost::json::value& message, std::int64_t tokens_per_image) {
  std::int64_t total = kPerMessageTokenOverhead;
  const auto* m = message.if_object();
  if (m == nullptr) return sat_add(total, utf8_bytes_of_strings(message));
  for (const auto& kv : *m) {
    const auto& v = kv.value();
    if (kv.key() == "content" && v.is_array()) {
      for (const auto& part : v.get_array()) {
        total = sat_add(total, kPerMessageTokenOverhead);
        const auto* po = part.if_object();
        if (po != nullptr && is_image_part(*po)) {
          total = sat_add(total, tokens_per_image);
        } else {
          total = sat_add(total, utf8_bytes_of_strings(part));
        }
      }
    } else if (kv.key() == "tool_calls" && v.is_array()) {
      for (const auto& call : v.get_array()) {
        total = sat_add(total, sat_add(kPerMessageTokenOverhead, utf8_bytes_of_strings(call)));
      }
    } else {
      total = sat_add(total, utf8_bytes_of_strings(v));
    }
  }
  return total;
}

}  // namespace

std::int64_t string_bytes(const boost::json::value& v) noexcept { return utf8_bytes_of_strings(v); }

std::int64_t input_token_upper_bound(const boost::json::object& chat, std::int64_t tokens_per_image) {
  tokens_per_image = std::max<std::int64_t>(tokens_per_image, 0);
  std::int64_t total = kPerRequestTokenOverhead;
  if (const auto* messages = chat.if_contains("messages")) {
    if (const auto* a = messages->if_array()) {
      for (const auto& m : *a) total = sat_add(total, message_bound(m, tokens_per_image));
    } else {
      total = sat_add(total, utf8_bytes_of_strings(*messages));
    }
  }
  for (std::string_view key : {"system", "prompt", "input"}) {
    if (const auto* v = chat.if_contains(key)) {
      // Anthropic `system` may be an array of text blocks: same per-part overhead as content; a
      // string is one more message.
      if (v->is_array()) total = sat_add(total, sat_mul(kPerMessageTokenOverhead, static_cast<std::int64_t>(v->get_array().size())));
      else total = sat_add(total, kPerMessageTokenOverhead);
      total = sat_add(total, utf8_bytes_of_strings(*v));
    }
  }
  for (std::string_view key : {"tools", "functions", "response_format", "tool_choice"}) {
    const auto* v = chat.if_contains(key);
    if (v == nullptr || v->is_null()) continue;
    total = sat_add(total, static_cast<std::int64_t>(boost::json::serialize(*v).size()));
    if (const auto* a = v->if_array()) {
      total = sat_add(total, sat_mul(kPerToolTokenOverhead, static_cast<std::int64_t>(a->size())));
    }
  }
  return total;
}

namespace {

// ------------------------------------------------------------------ model-aware bound

// Bytes of the compact JSON serialization of `v`, streamed through a stack buffer (no output
// string is built).
std::int64_t serialized_size(const boost::json::value& v) {
  boost::json::serializer sr;
  sr.reset(&v);
  char buf[2048];
  std::int64_t n = 0;
  while (!sr.done()) n = sat_add(n, static_cast<std::int64_t>(sr.read(buf, sizeof buf).size()));
  return n;
}

const boost::json::string* string_at(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr ? v->if_string() : nullptr;
}

const boost::json::object* object_at(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr ? v->if_object() : nullptr;
}

std::string_view view(const boost::json::string& s) { return {s.data(), s.size()}; }

enum class PartKind : std::uint8_t { text, image, document, audio };

PartKind kind_of(const boost::json::object& part) {
  if (const auto* t = string_at(part, "type")) {
    const std::string_view type = view(*t);
    if (type == "image_url" || type == "image" || type == "input_image") return PartKind::image;
    if (type == "document" || type == "file" || type == "input_file") return PartKind::document;
    if (type == "input_audio") return PartKind::audio;
    return PartKind::text;
  }
  if (part.contains("image_url")) return PartKind::image;
  if (part.contains("input_audio")) return PartKind::audio;
  return PartKind::text;
}

// Keys holding a media payload (never counted as text) rather than metadata.
bool is_payload_key(std::string_view key) {
  return key == "source" || key == "image_url" || key == "file_data" || key == "data" || key == "url" ||
         key == "input_audio" || key == "file_url";
}

bool is_text_media_type(std::string_view mt) {
  return mt.starts_with("text/") || mt == "application/json" || mt == "application/xml" ||
         mt == "application/x-yaml" || mt == "application/csv";
}

class InputBounder {
 public:
  explicit InputBounder(const InputBoundContext& ctx) : family_(media_family_for(ctx.model)) {
    const bool known = ctx.max_input_tokens.has_value() && *ctx.max_input_tokens > 0;
    context_ = known ? *ctx.max_input_tokens : kUnknownMediaTokenBound;
  }

  std::int64_t request(const boost::json::object& req) {
    std::int64_t total = kPerRequestTokenOverhead;
    if (const auto* messages = req.if_contains("messages")) {
      if (const auto* a = messages->if_array()) {
        for (const auto& m : *a) total = sat_add(total, message(m));
      } else {
        total = sat_add(total, generic(*messages));
      }
    }
    for (std::string_view key : {"system", "prompt", "input", "instructions", "suffix"}) {
      const auto* v = req.if_contains(key);
      if (v == nullptr) continue;
      if (const auto* a = v->if_array()) {
        // Anthropic system blocks, Responses input items: the per-part overhead of content parts.
        for (const auto& e : *a) total = sat_add(total, sat_add(kPerMessageTokenOverhead, part(e)));
      } else {
        total = sat_add(total, sat_add(kPerMessageTokenOverhead, generic(*v)));  // one more message
      }
    }
    bool has_tools = false;
    for (std::string_view key : {"tools", "functions", "response_format", "tool_choice"}) {
      const auto* v = req.if_contains(key);
      if (v == nullptr || v->is_null()) continue;
      total = sat_add(total, serialized_size(*v));
      const auto* a = v->if_array();
      if (a == nullptr || (key != "tools" && key != "functions")) continue;
      total = sat_add(total, sat_mul(kPerToolTokenOverhead, static_cast<std::int64_t>(a->size())));
      has_tools = has_tools || !a->empty();
      for (const auto& tool : *a) {
        const auto* o = tool.if_object();
        const auto* type = o != nullptr ? string_at(*o, "type") : nullptr;
        if (type != nullptr && *type != "function" && *type != "custom") total = sat_add(total, kBuiltinToolTokens);
      }
    }
    if (has_tools) total = sat_add(total, family_.tool_prompt_tokens);
    return total;
  }

 private:
  std::int64_t unknown_size() const { return context_; }
  std::int64_t cap(std::int64_t tokens) const { return std::min(tokens, context_); }

  std::int64_t message(const boost::json::value& message) {
    std::int64_t total = kPerMessageTokenOverhead;
    const auto* m = message.if_object();
    if (m == nullptr) return sat_add(total, generic(message));
    for (const auto& kv : *m) {
      const auto& v = kv.value();
      if (kv.key() == "content") {
        total = sat_add(total, content(v));
      } else if (kv.key() == "tool_calls" && v.is_array()) {
        for (const auto& call : v.get_array()) total = sat_add(total, sat_add(kPerMessageTokenOverhead, generic(call)));
      } else if (kv.key() == "audio" && v.is_object() && v.get_object().contains("id") && !v.get_object().contains("data")) {
        // An assistant turn's earlier audio output, re-sent by id: its length is not in the body.
        total = sat_add(total, unknown_size());
      } else {
        total = sat_add(total, generic(v));
      }
    }
    return total;
  }

  // A `content` value: a string, an array of parts, or (leniently) a single part object.
  std::int64_t content(const boost::json::value& v) {
    if (const auto* a = v.if_array()) {
      std::int64_t total = 0;
      for (const auto& p : *a) total = sat_add(total, sat_add(kPerMessageTokenOverhead, part(p)));
      return total;
    }
    if (v.is_object()) return part(v);
    return generic(v);
  }

  // One content part, without its overhead.
  std::int64_t part(const boost::json::value& p) {
    const auto* o = p.if_object();
    if (o == nullptr) return generic(p);
    switch (kind_of(*o)) {
      case PartKind::image: return sat_add(metadata(*o), image(*o));
      case PartKind::document: return sat_add(metadata(*o), document(*o));
      case PartKind::audio: return sat_add(metadata(*o), audio(*o));
      case PartKind::text: break;
    }
    return object_text(*o);
  }

  // Text anywhere: strings count by bytes; nested `content` arrays are parts; media parts found
  // anywhere (e.g. inside a tool_result) are sized as media.
  std::int64_t generic(const boost::json::value& v) {
    if (const auto* s = v.if_string()) return static_cast<std::int64_t>(s->size());
    std::int64_t total = 0;
    if (const auto* a = v.if_array()) {
      for (const auto& e : *a) total = sat_add(total, generic(e));
    } else if (const auto* o = v.if_object()) {
      if (kind_of(*o) != PartKind::text) return part(v);
      total = object_text(*o);
    }
    return total;
  }

  std::int64_t object_text(const boost::json::object& o) {
    std::int64_t total = 0;
    for (const auto& kv : o) {
      const auto& v = kv.value();
      if (kv.key() == "content") {
        total = sat_add(total, content(v));
      } else if ((kv.key() == "input" || kv.key() == "arguments") && (v.is_object() || v.is_array())) {
        // Tool-call arguments given as JSON (Anthropic tool_use.input): the model reads them as
        // JSON text, keys, numbers and punctuation included.
        total = sat_add(total, serialized_size(v));
      } else {
        total = sat_add(total, generic(v));
      }
    }
    return total;
  }

  // The strings of a media part outside its payload (title, context, filename, detail, ...).
  std::int64_t metadata(const boost::json::object& o) {
    std::int64_t total = 0;
    for (const auto& kv : o) {
      if (is_payload_key(kv.key())) continue;
      if (const auto* nested = kv.value().if_object(); nested != nullptr && kv.key() == "file") {
        total = sat_add(total, metadata(*nested));  // OpenAI {"file": {"file_data", "filename"}}
      } else {
        total = sat_add(total, generic(kv.value()));
      }
    }
    return total;
  }

  std::int64_t image(const boost::json::object& o) {
    std::string_view url;
    std::string_view base64;
    ImageDetail detail = ImageDetail::automatic;
    if (const auto* iu = o.if_contains("image_url")) {
      if (const auto* s = iu->if_string()) {
        url = view(*s);  // Responses input_image: "image_url": "<url>"
      } else if (const auto* io = iu->if_object()) {
        if (const auto* s = string_at(*io, "url")) url = view(*s);
        if (const auto* d = string_at(*io, "detail")) detail = parse_image_detail(view(*d));
      }
    }
    if (const auto* d = string_at(o, "detail")) detail = parse_image_detail(view(*d));
    if (const auto* src = object_at(o, "source")) {  // Anthropic image block
      const auto* type = string_at(*src, "type");
      const auto* data = string_at(*src, "data");
      if (type != nullptr && *type == "base64" && data != nullptr) base64 = view(*data);
    }
    if (base64.empty() && !url.empty()) {
      if (const auto du = parse_base64_data_url(url)) base64 = du->base64;
    }
    const std::optional<ImageSize> size = base64.empty() ? std::nullopt : read_image_size(base64);
    const std::optional<std::int64_t> tokens = image_token_bound(family_, size, detail);
    return tokens ? cap(*tokens) : unknown_size();
  }

  // Inline document bytes: a PDF → pages × page bound; a text type → its bytes; else unknown.
  std::int64_t inline_document(std::string_view media_type, std::string_view base64) {
    if (sniff_media_kind(base64) == MediaKind::pdf) {
      if (const auto pages = read_pdf_page_count(base64)) return cap(sat_mul(*pages, pdf_page_token_bound(family_)));
      return unknown_size();
    }
    if (is_text_media_type(media_type)) return cap(base64_decoded_size_bound(base64));
    return unknown_size();
  }

  // A base64 payload that may be a data: URL or bare base64.
  std::int64_t inline_payload(std::string_view payload, std::string_view media_type) {
    if (const auto du = parse_base64_data_url(payload)) {
      return inline_document(du->media_type.empty() ? media_type : du->media_type, du->base64);
    }
    if (payload.starts_with("data:")) return unknown_size();  // a non-base64 data URL
    return inline_document(media_type, payload);
  }

  std::int64_t document(const boost::json::object& o) {
    if (const auto* src = object_at(o, "source")) {  // Anthropic document block
      const auto* type = string_at(*src, "type");
      const auto* mt = string_at(*src, "media_type");
      const std::string_view media_type = mt != nullptr ? view(*mt) : std::string_view{};
      if (type != nullptr && *type == "text") {
        return cap(generic(src->contains("data") ? src->at("data") : boost::json::value{}));
      }
      if (type != nullptr && *type == "content") {
        return cap(src->contains("content") ? content(src->at("content")) : 0);
      }
      if (type != nullptr && *type == "base64") {
        if (const auto* data = string_at(*src, "data")) return inline_payload(view(*data), media_type);
      }
      return unknown_size();  // url, file (file_id), or malformed
    }
    // OpenAI Chat {"type":"file","file":{...}} or Responses {"type":"input_file", ...}.
    const auto* f = object_at(o, "file");
    const boost::json::object& fo = f != nullptr ? *f : o;
    if (const auto* data = string_at(fo, "file_data")) return inline_payload(view(*data), {});
    return unknown_size();  // file_id, file_url
  }

  std::int64_t audio(const boost::json::object& o) {
    const auto* ia = object_at(o, "input_audio");
    if (ia == nullptr) return unknown_size();
    const auto* data = string_at(*ia, "data");
    const auto* format = string_at(*ia, "format");
    if (data == nullptr) return unknown_size();
    std::string_view payload = view(*data);
    if (const auto du = parse_base64_data_url(payload)) payload = du->base64;
    const auto ms = read_audio_duration_ms_bound(payload, format != nullptr ? view(*format) : std::string_view{});
    if (!ms) return unknown_size();
    const auto tokens = static_cast<u128>(*ms) * static_cast<u128>(kAudioTokensPerSecond);
    const u128 rounded = (tokens + 999) / 1000;
    return cap(rounded > static_cast<u128>(kInt64Max) ? kInt64Max : static_cast<std::int64_t>(rounded));
  }

  const MediaFamily& family_;
  std::int64_t context_ = kUnknownMediaTokenBound;
};

}  // namespace

std::int64_t input_token_upper_bound(const boost::json::object& request, const InputBoundContext& ctx) {
  InputBounder b(ctx);
  return b.request(request);
}

}  // namespace tollgate::budget
