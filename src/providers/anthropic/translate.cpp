#include "providers/anthropic/translate.hpp"
#include "core/json_parse.hpp"

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <chrono>

#include "core/json_out.hpp"

namespace tollgate::providers::anthropic {

namespace json = boost::json;
using core::append_json_string;

namespace {

// ---- small JSON accessors: a wrongly typed field reads as absent ----------------------------

const json::string* get_str(const json::object& o, std::string_view key) noexcept {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? v->if_string() : nullptr;
}
const json::object* get_obj(const json::object& o, std::string_view key) noexcept {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? v->if_object() : nullptr;
}
const json::array* get_arr(const json::object& o, std::string_view key) noexcept {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? v->if_array() : nullptr;
}
std::string_view sv(const json::string& s) noexcept { return {s.data(), s.size()}; }
std::string_view str_or(const json::object& o, std::string_view key, std::string_view def = {}) noexcept {
  const json::string* s = get_str(o, key);
  return s != nullptr ? sv(*s) : def;
}
// An integer (int64 or uint64 in range) at key.
std::optional<std::int64_t> get_int(const json::object& o, std::string_view key) noexcept {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = v->if_int64()) return *i;
  if (const auto* u = v->if_uint64()) {
    if (*u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(*u);
  }
  return std::nullopt;
}
bool is_number(const json::value& v) noexcept { return v.is_int64() || v.is_uint64() || v.is_double(); }

std::int64_t now_seconds() noexcept {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void append_int(std::string& out, std::int64_t n) { out.append(std::to_string(n)); }

// Parses a tool call's `arguments` (a JSON text in a string) into an object; {} when absent,
// unparsable (also a number beyond a double's range: core::parse_json) or not an object (Anthropic
// requires `input` to be an object).
json::object parse_arguments(const json::value* args) {
  if (args == nullptr) return {};
  if (const auto* o = args->if_object()) return *o;  // some clients send an object already
  const auto* s = args->if_string();
  if (s == nullptr || s->empty()) return {};
  boost::system::error_code ec;
  json::value v = core::parse_json(sv(*s), ec);
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

// "data:<media type>;base64,<payload>" → (media type, payload).
std::optional<std::pair<std::string_view, std::string_view>> parse_data_url(std::string_view url) noexcept {
  constexpr std::string_view scheme = "data:";
  constexpr std::string_view marker = ";base64,";
  if (!url.starts_with(scheme)) return std::nullopt;
  url.remove_prefix(scheme.size());
  const std::size_t m = url.find(marker);
  if (m == std::string_view::npos) return std::nullopt;
  return std::pair{url.substr(0, m), url.substr(m + marker.size())};
}

// Text of an OpenAI content value (string or parts), parts joined with sep.
void append_content_text(std::string& out, const json::value& content, std::string_view sep) {
  if (const auto* s = content.if_string()) {
    out.append(sv(*s));
    return;
  }
  const auto* arr = content.if_array();
  if (arr == nullptr) return;
  bool first = true;
  for (const auto& p : *arr) {
    const auto* part = p.if_object();
    if (part == nullptr) continue;
    const json::string* t = get_str(*part, "text");
    if (t == nullptr) continue;
    if (!first) out.append(sep);
    out.append(sv(*t));
    first = false;
  }
}

// ---- OpenAI → Anthropic request pieces --------------------------------------------------------

json::object text_block(std::string_view text) {
  json::object b;
  b.reserve(2);
  b.emplace("type", "text");
  b.emplace("text", text);
  return b;
}

void copy_cache_control(const json::object& from, json::object& to) {
  if (const json::value* cc = from.if_contains("cache_control"); cc != nullptr && cc->is_object()) {
    to.emplace("cache_control", *cc);
  }
}

std::optional<json::object> image_block_from_url(std::string_view url) {
  json::object source;
  if (auto d = parse_data_url(url)) {
    source.emplace("type", "base64");
    source.emplace("media_type", d->first);
    source.emplace("data", d->second);
  } else if (url.starts_with("http://") || url.starts_with("https://")) {
    source.emplace("type", "url");
    source.emplace("url", url);
  } else {
    return std::nullopt;
  }
  json::object b;
  b.emplace("type", "image");
  b.emplace("source", std::move(source));
  return b;
}

// OpenAI message content (string or parts) → Anthropic content blocks appended to `blocks`.
void content_to_blocks(const json::value& content, json::array& blocks) {
  if (const auto* s = content.if_string()) {
    if (!s->empty()) blocks.emplace_back(text_block(sv(*s)));
    return;
  }
  const auto* arr = content.if_array();
  if (arr == nullptr) return;
  for (const auto& p : *arr) {
    const auto* part = p.if_object();
    if (part == nullptr) continue;
    const std::string_view type = str_or(*part, "type");
    std::optional<json::object> block;
    if (type == "text" || type == "refusal") {
      const std::string_view text = str_or(*part, type == "text" ? "text" : "refusal");
      if (!text.empty()) block = text_block(text);
    } else if (type == "image_url") {
      const json::value* iu = part->if_contains("image_url");
      std::string_view url;
      if (iu != nullptr) {
        if (const auto* o = iu->if_object()) url = str_or(*o, "url");
        else if (const auto* s = iu->if_string()) url = sv(*s);
      }
      block = image_block_from_url(url);
    } else if (type == "file") {
      if (const json::object* f = get_obj(*part, "file")) {
        if (auto d = parse_data_url(str_or(*f, "file_data"))) {
          json::object source;
          source.emplace("type", "base64");
          source.emplace("media_type", d->first);
          source.emplace("data", d->second);
          block.emplace();
          block->emplace("type", "document");
          block->emplace("source", std::move(source));
        }
      }
    }
    if (block) {
      copy_cache_control(*part, *block);
      blocks.emplace_back(std::move(*block));
    }
  }
}

// Appends blocks to the last message when it has the same role, else starts a new message.
void push_blocks(json::array& messages, std::string_view role, json::array&& blocks) {
  if (blocks.empty()) return;
  if (!messages.empty()) {
    json::object& last = messages.back().as_object();
    if (sv(last.at("role").as_string()) == role) {
      json::array& content = last.at("content").as_array();
      content.reserve(content.size() + blocks.size());
      for (auto& b : blocks) content.push_back(std::move(b));
      return;
    }
  }
  json::object m;
  m.reserve(2);
  m.emplace("role", role);
  m.emplace("content", std::move(blocks));
  messages.emplace_back(std::move(m));
}

json::object tool_choice_to_anthropic(const json::value& tc) {
  json::object out;
  if (const auto* s = tc.if_string()) {
    if (*s == "required") out.emplace("type", "any");
    else if (*s == "none") out.emplace("type", "none");
    else out.emplace("type", "auto");
  } else if (const auto* o = tc.if_object()) {
    const json::object* fn = get_obj(*o, "function");
    const std::string_view name = fn != nullptr ? str_or(*fn, "name") : std::string_view{};
    if (!name.empty()) {
      out.emplace("type", "tool");
      out.emplace("name", name);
    } else {
      out.emplace("type", "auto");
    }
  }
  return out;
}

// ---- Anthropic → OpenAI request pieces ---------------------------------------------------------

// Text of an Anthropic content value (string or blocks): text blocks joined with sep.
std::string anthropic_text(const json::value& content, std::string_view sep) {
  std::string out;
  if (const auto* s = content.if_string()) return std::string(sv(*s));
  const auto* arr = content.if_array();
  if (arr == nullptr) return out;
  bool first = true;
  for (const auto& b : *arr) {
    const auto* blk = b.if_object();
    if (blk == nullptr || str_or(*blk, "type") != "text") continue;
    if (!first) out.append(sep);
    out.append(str_or(*blk, "text"));
    first = false;
  }
  return out;
}

std::string data_url(std::string_view media_type, std::string_view data) {
  std::string url;
  url.reserve(5 + media_type.size() + 8 + data.size());
  url.append("data:").append(media_type).append(";base64,").append(data);
  return url;
}

std::optional<json::object> image_part_from_block(const json::object& blk) {
  const json::object* src = get_obj(blk, "source");
  if (src == nullptr) return std::nullopt;
  const std::string_view st = str_or(*src, "type");
  json::object iu;
  if (st == "base64") {
    iu.emplace("url", data_url(str_or(*src, "media_type"), str_or(*src, "data")));
  } else if (st == "url") {
    iu.emplace("url", str_or(*src, "url"));
  } else {
    return std::nullopt;
  }
  json::object part;
  part.emplace("type", "image_url");
  part.emplace("image_url", std::move(iu));
  return part;
}

std::string json_error(std::string_view path, std::string_view what) {
  std::string s(path);
  s.append(": ").append(what);
  return s;
}

std::string usage_delta_json(const Usage& u) {
  std::string s = "{\"output_tokens\":";
  append_int(s, u.completion_tokens);
  if (u.reported) {
    const std::int64_t writes = u.cache_write_tokens + u.cache_write_1h_tokens;
    s.append(",\"input_tokens\":");
    append_int(s, u.prompt_tokens - u.cached_tokens - writes);
    s.append(",\"cache_read_input_tokens\":");
    append_int(s, u.cached_tokens);
    s.append(",\"cache_creation_input_tokens\":");
    append_int(s, writes);
  }
  s.push_back('}');
  return s;
}

}  // namespace

// =================================================================================================
// OpenAI → Anthropic
// =================================================================================================

json::object chat_request_to_messages(const json::object& chat, std::string_view upstream_model,
                                      std::int64_t default_max_tokens) {
  json::object out;
  out.reserve(12);
  out.emplace("model", upstream_model);

  std::string system;
  bool system_marked = false;
  std::vector<const json::value*> system_messages;
  json::array messages;
  if (const json::array* in = get_arr(chat, "messages")) {
    messages.reserve(in->size());
    for (const auto& mv : *in) {
      const auto* m = mv.if_object();
      if (m == nullptr) continue;
      const std::string_view role = str_or(*m, "role");
      const json::value* content = m->if_contains("content");
      if (role == "system" || role == "developer") {
        if (content == nullptr) continue;
        // Parts with a prompt-cache mark keep their own system block (Anthropic caches by block).
        if (const auto* parts = content->if_array())
          for (const auto& pv : *parts)
            if (const auto* part = pv.if_object(); part && part->contains("cache_control")) system_marked = true;
        system_messages.push_back(content);
        if (!system.empty()) system.push_back('\n');
        append_content_text(system, *content, "\n");
      } else if (role == "user") {
        json::array blocks;
        if (content != nullptr) content_to_blocks(*content, blocks);
        push_blocks(messages, "user", std::move(blocks));
      } else if (role == "assistant") {
        json::array blocks;
        if (content != nullptr) content_to_blocks(*content, blocks);
        if (const json::array* calls = get_arr(*m, "tool_calls")) {
          for (const auto& cv : *calls) {
            const auto* call = cv.if_object();
            if (call == nullptr) continue;
            const json::object* fn = get_obj(*call, "function");
            json::object b;
            b.reserve(4);
            b.emplace("type", "tool_use");
            b.emplace("id", str_or(*call, "id"));
            b.emplace("name", fn != nullptr ? str_or(*fn, "name") : std::string_view{});
            b.emplace("input", parse_arguments(fn != nullptr ? fn->if_contains("arguments") : nullptr));
            blocks.emplace_back(std::move(b));
          }
        }
        push_blocks(messages, "assistant", std::move(blocks));
      } else if (role == "tool") {
        json::object b;
        b.reserve(3);
        b.emplace("type", "tool_result");
        b.emplace("tool_use_id", str_or(*m, "tool_call_id"));
        if (content != nullptr) {
          if (const auto* s = content->if_string()) {
            b.emplace("content", *s);
          } else {
            json::array parts;
            content_to_blocks(*content, parts);
            if (!parts.empty()) b.emplace("content", std::move(parts));
          }
        }
        json::array blocks;
        blocks.emplace_back(std::move(b));
        push_blocks(messages, "user", std::move(blocks));
      }
      // Other roles (legacy "function") have no Anthropic equivalent and are dropped.
    }
  }
  if (system_marked) {
    json::array blocks;
    for (const json::value* content : system_messages) {
      if (const auto* s = content->if_string()) {
        if (!s->empty()) blocks.emplace_back(text_block(*s));
        continue;
      }
      if (const auto* parts = content->if_array())
        for (const auto& pv : *parts) {
          const auto* part = pv.if_object();
          if (part == nullptr || str_or(*part, "type") != "text") continue;
          json::object b = text_block(str_or(*part, "text"));
          copy_cache_control(*part, b);
          blocks.emplace_back(std::move(b));
        }
    }
    out.emplace("system", std::move(blocks));
  } else if (!system.empty()) {
    out.emplace("system", std::move(system));
  }
  out.emplace("messages", std::move(messages));

  std::int64_t max_tokens = default_max_tokens;
  if (auto v = get_int(chat, "max_completion_tokens")) max_tokens = *v;
  else if (auto w = get_int(chat, "max_tokens")) max_tokens = *w;
  out.emplace("max_tokens", max_tokens);

  for (std::string_view key : {"temperature", "top_p"}) {
    if (const json::value* v = chat.if_contains(key); v != nullptr && is_number(*v)) out.emplace(key, *v);
  }
  if (const json::value* stop = chat.if_contains("stop")) {
    json::array seqs;
    if (const auto* s = stop->if_string()) {
      seqs.emplace_back(*s);
    } else if (const auto* a = stop->if_array()) {
      for (const auto& e : *a) {
        if (e.is_string()) seqs.push_back(e);
      }
    }
    if (!seqs.empty()) out.emplace("stop_sequences", std::move(seqs));
  }
  if (const json::value* st = chat.if_contains("stream"); st != nullptr && st->is_bool()) {
    out.emplace("stream", st->get_bool());
  }

  bool has_tools = false;
  if (const json::array* tools = get_arr(chat, "tools")) {
    json::array out_tools;
    out_tools.reserve(tools->size());
    for (const auto& tv : *tools) {
      const auto* t = tv.if_object();
      if (t == nullptr) continue;
      if (const json::string* type = get_str(*t, "type"); type != nullptr && *type != "function") continue;
      const json::object* fn = get_obj(*t, "function");
      if (fn == nullptr) continue;
      json::object at;
      at.reserve(3);
      at.emplace("name", str_or(*fn, "name"));
      if (const json::string* d = get_str(*fn, "description")) at.emplace("description", *d);
      if (const json::object* params = get_obj(*fn, "parameters")) {
        at.emplace("input_schema", *params);
      } else {
        json::object schema;
        schema.emplace("type", "object");
        schema.emplace("properties", json::object());
        at.emplace("input_schema", std::move(schema));
      }
      out_tools.emplace_back(std::move(at));
    }
    has_tools = !out_tools.empty();
    if (has_tools) out.emplace("tools", std::move(out_tools));
  }
  std::optional<json::object> choice;
  if (const json::value* tc = chat.if_contains("tool_choice"); tc != nullptr && !tc->is_null()) {
    choice = tool_choice_to_anthropic(*tc);
  }
  if (const json::value* ptc = chat.if_contains("parallel_tool_calls");
      has_tools && ptc != nullptr && ptc->is_bool() && !ptc->get_bool()) {
    if (!choice) {
      choice.emplace();
      choice->emplace("type", "auto");
    }
    if (str_or(*choice, "type") != "none") choice->emplace("disable_parallel_tool_use", true);
  }
  if (choice) out.emplace("tool_choice", std::move(*choice));

  if (const json::string* user = get_str(chat, "user"); user != nullptr && !user->empty()) {
    json::object md;
    md.emplace("user_id", *user);
    out.emplace("metadata", std::move(md));
  }
  return out;
}

std::optional<std::string_view> finish_reason_from_stop_reason(const json::value* stop_reason) noexcept {
  if (stop_reason == nullptr) return std::nullopt;
  const auto* s = stop_reason->if_string();
  if (s == nullptr) return std::nullopt;
  if (*s == "max_tokens") return "length";
  if (*s == "tool_use") return "tool_calls";
  if (*s == "refusal") return "content_filter";
  return "stop";  // end_turn, stop_sequence, pause_turn, and anything newer
}

Usage usage_from_anthropic(const json::value& usage) noexcept {
  Usage u;
  const auto* o = usage.if_object();
  if (o == nullptr) return u;
  const auto input = detail::json_count(*o, "input_tokens");
  const auto output = detail::json_count(*o, "output_tokens");
  if (!input || !output) return u;  // unknown, not zero
  u.reported = true;
  const std::int64_t cache_read = detail::json_count(*o, "cache_read_input_tokens").value_or(0);
  const std::int64_t cache_creation = detail::json_count(*o, "cache_creation_input_tokens").value_or(0);
  u.prompt_tokens = *input + cache_read + cache_creation;
  u.completion_tokens = *output;
  u.cached_tokens = cache_read;
  u.cache_write_tokens = cache_creation;
  // Per TTL when the API says (cache_creation.ephemeral_5m/1h_input_tokens); all 5-minute otherwise.
  if (const auto* cc = o->if_contains("cache_creation"); cc && cc->is_object()) {
    const auto m5 = detail::json_count(cc->get_object(), "ephemeral_5m_input_tokens");
    const auto h1 = detail::json_count(cc->get_object(), "ephemeral_1h_input_tokens");
    if (m5 || h1) {
      u.cache_write_1h_tokens = std::min(h1.value_or(0), cache_creation);
      u.cache_write_tokens = cache_creation - u.cache_write_1h_tokens;
    }
  }
  if (const auto* st = o->if_contains("server_tool_use"); st && st->is_object())
    u.web_search_calls = detail::json_count(st->get_object(), "web_search_requests").value_or(0);
  if (const auto* tier = o->if_contains("service_tier"); tier && tier->is_string())
    u.service_tier = std::string(tier->get_string());
  return u;
}

json::object messages_response_to_chat(const json::object& msg, std::string_view model) {
  std::string text;
  bool has_text = false;
  json::array tool_calls;
  if (const json::array* content = get_arr(msg, "content")) {
    for (const auto& bv : *content) {
      const auto* b = bv.if_object();
      if (b == nullptr) continue;
      const std::string_view type = str_or(*b, "type");
      if (type == "text") {
        text.append(str_or(*b, "text"));
        has_text = true;
      } else if (type == "tool_use") {
        json::object fn;
        fn.emplace("name", str_or(*b, "name"));
        const json::value* input = b->if_contains("input");
        fn.emplace("arguments", input != nullptr ? json::serialize(*input) : std::string("{}"));
        json::object call;
        call.reserve(3);
        call.emplace("id", str_or(*b, "id"));
        call.emplace("type", "function");
        call.emplace("function", std::move(fn));
        tool_calls.emplace_back(std::move(call));
      }
    }
  }
  json::object message;
  message.reserve(3);
  message.emplace("role", "assistant");
  if (has_text || tool_calls.empty()) message.emplace("content", std::move(text));
  else message.emplace("content", nullptr);
  if (!tool_calls.empty()) message.emplace("tool_calls", std::move(tool_calls));

  json::object choice;
  choice.reserve(4);
  choice.emplace("index", 0);
  choice.emplace("message", std::move(message));
  choice.emplace("logprobs", nullptr);
  if (auto fr = finish_reason_from_stop_reason(msg.if_contains("stop_reason"))) choice.emplace("finish_reason", *fr);
  else choice.emplace("finish_reason", nullptr);

  json::object out;
  out.reserve(6);
  out.emplace("id", str_or(msg, "id"));
  out.emplace("object", "chat.completion");
  out.emplace("created", now_seconds());
  out.emplace("model", model);
  json::array choices;
  choices.emplace_back(std::move(choice));
  out.emplace("choices", std::move(choices));
  if (const json::value* u = msg.if_contains("usage"); u != nullptr && u->is_object()) {
    out.emplace("usage", usage_to_openai(usage_from_anthropic(*u)));
  }
  return out;
}

// ---- MessagesStreamToChat ---------------------------------------------------------------------

MessagesStreamToChat::MessagesStreamToChat(std::string model, bool include_usage, std::int64_t created)
    : model_(std::move(model)), created_(created != 0 ? created : now_seconds()), include_usage_(include_usage) {
  rebuild_prefix();
}

void MessagesStreamToChat::rebuild_prefix() {
  prefix_.clear();
  prefix_.append("{\"id\":");
  append_json_string(prefix_, id_);
  prefix_.append(",\"object\":\"chat.completion.chunk\",\"created\":");
  append_int(prefix_, created_);
  prefix_.append(",\"model\":");
  append_json_string(prefix_, model_);
  prefix_.push_back(',');
}

void MessagesStreamToChat::emit_delta(std::string_view delta_json, std::string_view finish_reason,
                                      std::vector<std::string>& out) {
  std::string& s = out.emplace_back();
  s.reserve(prefix_.size() + delta_json.size() + 96);
  s.append(prefix_);
  s.append("\"choices\":[{\"index\":0,\"delta\":");
  s.append(delta_json);
  s.append(",\"logprobs\":null,\"finish_reason\":");
  if (finish_reason.empty()) s.append("null");
  else append_json_string(s, finish_reason);
  s.append("}]");
  if (include_usage_) s.append(",\"usage\":null");
  s.push_back('}');
}

void MessagesStreamToChat::finish(std::vector<std::string>& out_chunks) {
  if (finished_) return;
  finished_ = true;
  if (include_usage_) {
    std::string& s = out_chunks.emplace_back(prefix_);
    s.append("\"choices\":[],\"usage\":");
    s.append(json::serialize(usage_to_openai(usage_)));
    s.push_back('}');
  }
}

bool MessagesStreamToChat::end_without_stop(std::vector<std::string>& out_chunks) {
  if (finished_) return true;
  if (!finish_reason_ || !usage_final() || error_) return false;
  finish(out_chunks);
  return true;
}

void MessagesStreamToChat::on_event(const http::SseEvent& ev, std::vector<std::string>& out_chunks) {
  // message_stop ended the answer (its usage chunk, when asked, is the last chunk): whatever an
  // upstream sends after it is not relayed, as ChatStreamToMessages ignores chunks after its own.
  if (finished_) return;
  if (ev.data.empty() || ev.data == "[DONE]") return;
  // Parse into a stack-backed monotonic arena: a typical event allocates nothing on the heap.
  mr_.release();
  parser_.reset(json::storage_ptr(&mr_));
  boost::system::error_code ec;
  parser_.write(ev.data, ec);
  if (ec) {
    parser_.reset();
    if (!error_) error_ = json::object{{"type", "api_error"}, {"message", "malformed upstream stream event"}};
    return;
  }
  const json::value jv = parser_.release();
  const json::object* o = jv.if_object();
  if (o == nullptr) {
    if (!error_) error_ = json::object{{"type", "api_error"}, {"message", "malformed upstream stream event"}};
    return;
  }
  std::string_view type = str_or(*o, "type");
  if (type.empty()) type = ev.event;
  std::string delta;

  if (type == "content_block_delta") {
    const json::object* d = get_obj(*o, "delta");
    if (d == nullptr) return;
    const std::string_view dt = str_or(*d, "type");
    if (dt == "text_delta") {
      const std::string_view text = str_or(*d, "text");
      if (text.empty()) return;
      delta.append("{\"content\":");
      append_json_string(delta, text);
      delta.push_back('}');
      emit_delta(delta, {}, out_chunks);
    } else if (dt == "input_json_delta") {
      const std::string_view part = str_or(*d, "partial_json");
      const std::int64_t bi = get_int(*o, "index").value_or(-1);
      if (part.empty() || bi < 0 || static_cast<std::size_t>(bi) >= tool_index_by_block_.size()) return;
      const std::int64_t ti = tool_index_by_block_[static_cast<std::size_t>(bi)];
      if (ti < 0) return;
      delta.append("{\"tool_calls\":[{\"index\":");
      append_int(delta, ti);
      delta.append(",\"function\":{\"arguments\":");
      append_json_string(delta, part);
      delta.append("}}]}");
      emit_delta(delta, {}, out_chunks);
    }
    // thinking_delta, signature_delta, citations_delta: no Chat Completions equivalent.
  } else if (type == "content_block_start") {
    const json::object* b = get_obj(*o, "content_block");
    const std::int64_t bi = get_int(*o, "index").value_or(-1);
    if (b == nullptr || bi < 0 || bi > 100000) return;
    const std::string_view bt = str_or(*b, "type");
    if (bt == "text") {
      const std::string_view text = str_or(*b, "text");
      if (text.empty()) return;
      delta.append("{\"content\":");
      append_json_string(delta, text);
      delta.push_back('}');
      emit_delta(delta, {}, out_chunks);
    } else if (bt == "tool_use") {
      const auto idx = static_cast<std::size_t>(bi);
      if (tool_index_by_block_.size() <= idx) tool_index_by_block_.resize(idx + 1, -1);
      const std::int64_t ti = next_tool_index_++;
      tool_index_by_block_[idx] = ti;
      delta.append("{\"tool_calls\":[{\"index\":");
      append_int(delta, ti);
      delta.append(",\"id\":");
      append_json_string(delta, str_or(*b, "id"));
      delta.append(",\"type\":\"function\",\"function\":{\"name\":");
      append_json_string(delta, str_or(*b, "name"));
      delta.append(",\"arguments\":\"\"}}]}");
      emit_delta(delta, {}, out_chunks);
    }
  } else if (type == "message_start") {
    const json::object* m = get_obj(*o, "message");
    if (m != nullptr) {
      id_ = str_or(*m, "id");
      rebuild_prefix();
      if (const json::value* u = m->if_contains("usage"); u != nullptr && u->is_object()) {
        usage_ = usage_from_anthropic(*u);
      }
    }
    if (!started_) {
      started_ = true;
      emit_delta(R"({"role":"assistant","content":""})", {}, out_chunks);
    }
  } else if (type == "message_delta") {
    if (const json::object* u = get_obj(*o, "usage")) {
      // Counts are cumulative: the last value wins. Newer API versions may repeat input counts.
      if (auto out = detail::json_count(*u, "output_tokens")) {
        usage_.completion_tokens = *out;
        output_seen_ = true;
      }
      if (auto ws = u->if_contains("server_tool_use"); ws && ws->is_object())
        usage_.web_search_calls = detail::json_count(ws->get_object(), "web_search_requests").value_or(usage_.web_search_calls);
      // Input-side counts repeated (or only sent) in the delta: each replaces its own field; what
      // the delta does not say (the cache TTL split, the service tier) stays as message_start said.
      const auto input = detail::json_count(*u, "input_tokens");
      const auto read = detail::json_count(*u, "cache_read_input_tokens");
      const auto created = detail::json_count(*u, "cache_creation_input_tokens");
      if (input || read || created) {
        const std::int64_t old_read = usage_.cached_tokens;
        const std::int64_t old_created = usage_.cache_write_tokens + usage_.cache_write_1h_tokens;
        const std::int64_t old_input = usage_.prompt_tokens - old_read - old_created;
        const std::int64_t new_read = read.value_or(old_read);
        const std::int64_t new_created = created.value_or(old_created);
        const std::int64_t new_input = input.value_or(old_input);
        usage_.cached_tokens = new_read;
        if (new_created != old_created) {
          const Usage split = usage_from_anthropic(*u);  // its own TTL split, if the delta gives one
          const bool has_split = u->contains("cache_creation");
          usage_.cache_write_1h_tokens = has_split ? split.cache_write_1h_tokens : std::min(usage_.cache_write_1h_tokens, new_created);
          usage_.cache_write_tokens = new_created - usage_.cache_write_1h_tokens;
        }
        usage_.prompt_tokens = new_input + new_read + new_created;
        if (input) usage_.reported = true;
      }
      if (const auto* tier = u->if_contains("service_tier"); tier && tier->is_string())
        usage_.service_tier = std::string(tier->get_string());
    }
    const json::object* d = get_obj(*o, "delta");
    if (auto fr = finish_reason_from_stop_reason(d != nullptr ? d->if_contains("stop_reason") : nullptr)) {
      finish_reason_.emplace(*fr);
      emit_delta("{}", *fr, out_chunks);
    }
  } else if (type == "message_stop") {
    finish(out_chunks);
  } else if (type == "error") {
    const json::object* e = get_obj(*o, "error");
    error_.emplace(e != nullptr ? *e : *o, json::storage_ptr());
  }
  // ping, content_block_stop and unknown event types produce nothing.
}

// =================================================================================================
// Anthropic → OpenAI
// =================================================================================================

std::expected<json::object, std::string> messages_request_to_chat(const json::object& req) {
  const json::value* model = req.if_contains("model");
  if (model == nullptr) return std::unexpected(json_error("model", "Field required"));
  if (!model->is_string()) return std::unexpected(json_error("model", "Input should be a valid string"));
  const json::value* max_tokens = req.if_contains("max_tokens");
  if (max_tokens == nullptr) return std::unexpected(json_error("max_tokens", "Field required"));
  const std::optional<std::int64_t> mt = get_int(req, "max_tokens");
  if (!mt) return std::unexpected(json_error("max_tokens", "Input should be a valid integer"));
  if (*mt < 1) return std::unexpected(json_error("max_tokens", "Input should be greater than or equal to 1"));
  const json::value* msgs = req.if_contains("messages");
  if (msgs == nullptr) return std::unexpected(json_error("messages", "Field required"));
  if (!msgs->is_array()) return std::unexpected(json_error("messages", "Input should be a valid list"));

  json::array messages;
  messages.reserve(msgs->get_array().size() + 1);
  if (const json::value* sys = req.if_contains("system"); sys != nullptr && !sys->is_null()) {
    if (!sys->is_string() && !sys->is_array()) {
      return std::unexpected(json_error("system", "Input should be a valid string or list"));
    }
    // Prompt-cache marks on system blocks must reach the provider: then the system message keeps
    // its blocks as text parts, each with its cache_control.
    json::array marked;
    if (const auto* blocks = sys->if_array()) {
      bool any = false;
      for (const auto& bv : *blocks)
        if (const auto* b = bv.if_object(); b && b->contains("cache_control")) any = true;
      if (any)
        for (const auto& bv : *blocks) {
          const auto* b = bv.if_object();
          if (b == nullptr || str_or(*b, "type") != "text") continue;
          json::object part{{"type", "text"}, {"text", str_or(*b, "text")}};
          copy_cache_control(*b, part);
          marked.emplace_back(std::move(part));
        }
    }
    if (!marked.empty()) {
      messages.emplace_back(json::object{{"role", "system"}, {"content", std::move(marked)}});
    } else {
      std::string text = anthropic_text(*sys, "\n");
      if (!text.empty()) messages.emplace_back(json::object{{"role", "system"}, {"content", std::move(text)}});
    }
  }

  std::size_t i = 0;
  for (const auto& mv : msgs->get_array()) {
    const std::string path = "messages." + std::to_string(i++);
    const auto* m = mv.if_object();
    if (m == nullptr) return std::unexpected(json_error(path, "Input should be a valid dictionary"));
    const std::string_view role = str_or(*m, "role");
    if (role != "user" && role != "assistant") {
      return std::unexpected(json_error(path + ".role", "Input should be 'user' or 'assistant'"));
    }
    const json::value* content = m->if_contains("content");
    if (content == nullptr) return std::unexpected(json_error(path + ".content", "Field required"));
    if (const auto* s = content->if_string()) {
      messages.emplace_back(json::object{{"role", role}, {"content", *s}});
      continue;
    }
    if (!content->is_array()) {
      return std::unexpected(json_error(path + ".content", "Input should be a valid string or list"));
    }
    if (role == "assistant") {
      std::string text;
      json::array tool_calls;
      for (const auto& bv : content->get_array()) {
        const auto* b = bv.if_object();
        if (b == nullptr) continue;
        const std::string_view bt = str_or(*b, "type");
        if (bt == "text") {
          text.append(str_or(*b, "text"));
        } else if (bt == "tool_use") {
          const json::value* input = b->if_contains("input");
          tool_calls.emplace_back(json::object{
              {"id", str_or(*b, "id")},
              {"type", "function"},
              {"function", json::object{{"name", str_or(*b, "name")},
                                        {"arguments", input != nullptr ? json::serialize(*input) : "{}"}}}});
        }
      }
      json::object om;
      om.emplace("role", "assistant");
      if (text.empty() && !tool_calls.empty()) om.emplace("content", nullptr);
      else om.emplace("content", std::move(text));
      if (!tool_calls.empty()) om.emplace("tool_calls", std::move(tool_calls));
      messages.emplace_back(std::move(om));
      continue;
    }
    // user: tool results become `tool` messages, which must directly follow the assistant turn
    // holding the calls, so they go before the rest of this user turn.
    json::array parts;
    for (const auto& bv : content->get_array()) {
      const auto* b = bv.if_object();
      if (b == nullptr) continue;
      const std::string_view bt = str_or(*b, "type");
      // Prompt-cache marks travel with their part (chat_request_to_messages copies them back).
      const std::size_t before = parts.size();
      if (bt == "text") {
        parts.emplace_back(json::object{{"type", "text"}, {"text", str_or(*b, "text")}});
      } else if (bt == "image") {
        if (auto p = image_part_from_block(*b)) parts.emplace_back(std::move(*p));
      } else if (bt == "document") {
        const json::object* src = get_obj(*b, "source");
        if (src == nullptr) continue;
        const std::string_view st = str_or(*src, "type");
        if (st == "base64") {
          parts.emplace_back(json::object{
              {"type", "file"},
              {"file", json::object{{"file_data", data_url(str_or(*src, "media_type"), str_or(*src, "data"))}}}});
        } else if (st == "text") {
          parts.emplace_back(json::object{{"type", "text"}, {"text", str_or(*src, "data")}});
        }
      } else if (bt == "tool_result") {
        const json::value* rc = b->if_contains("content");
        messages.emplace_back(json::object{{"role", "tool"},
                                           {"tool_call_id", str_or(*b, "tool_use_id")},
                                           {"content", rc != nullptr ? anthropic_text(*rc, "\n") : std::string()}});
      }
      if (parts.size() > before) copy_cache_control(*b, parts.back().as_object());
    }
    if (parts.empty()) continue;
    json::object om;
    om.emplace("role", "user");
    if (parts.size() == 1 && str_or(parts[0].as_object(), "type") == "text" && !parts[0].as_object().contains("cache_control")) {
      om.emplace("content", parts[0].as_object().at("text"));
    } else {
      om.emplace("content", std::move(parts));
    }
    messages.emplace_back(std::move(om));
  }

  json::object out;
  out.reserve(12);
  out.emplace("model", *model);
  out.emplace("messages", std::move(messages));
  out.emplace("max_tokens", *mt);
  for (std::string_view key : {"temperature", "top_p"}) {
    if (const json::value* v = req.if_contains(key); v != nullptr && is_number(*v)) out.emplace(key, *v);
  }
  if (const json::array* seqs = get_arr(req, "stop_sequences"); seqs != nullptr && !seqs->empty()) {
    json::array stop;
    for (const auto& s : *seqs) {
      if (s.is_string()) stop.push_back(s);
    }
    if (!stop.empty()) out.emplace("stop", std::move(stop));
  }
  if (const json::value* st = req.if_contains("stream"); st != nullptr && st->is_bool()) {
    out.emplace("stream", st->get_bool());
    if (st->get_bool()) out.emplace("stream_options", json::object{{"include_usage", true}});
  }
  if (const json::array* tools = get_arr(req, "tools")) {
    json::array out_tools;
    for (const auto& tv : *tools) {
      const auto* t = tv.if_object();
      if (t == nullptr) continue;
      // Server tools (web_search_..., bash_..., ...) have no input_schema and no OpenAI form.
      const json::object* schema = get_obj(*t, "input_schema");
      if (schema == nullptr) continue;
      json::object fn;
      fn.emplace("name", str_or(*t, "name"));
      if (const json::string* d = get_str(*t, "description")) fn.emplace("description", *d);
      fn.emplace("parameters", *schema);
      out_tools.emplace_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
    }
    if (!out_tools.empty()) out.emplace("tools", std::move(out_tools));
  }
  if (const json::object* tc = get_obj(req, "tool_choice")) {
    const std::string_view t = str_or(*tc, "type");
    if (t == "auto") out.emplace("tool_choice", "auto");
    else if (t == "any") out.emplace("tool_choice", "required");
    else if (t == "none") out.emplace("tool_choice", "none");
    else if (t == "tool") {
      out.emplace("tool_choice",
                  json::object{{"type", "function"}, {"function", json::object{{"name", str_or(*tc, "name")}}}});
    }
    if (const json::value* d = tc->if_contains("disable_parallel_tool_use");
        d != nullptr && d->is_bool() && d->get_bool() && out.contains("tools")) {
      out.emplace("parallel_tool_calls", false);
    }
  }
  if (const json::object* md = get_obj(req, "metadata")) {
    if (const json::string* u = get_str(*md, "user_id"); u != nullptr && !u->empty()) out.emplace("user", *u);
  }
  return out;
}

std::optional<std::string_view> stop_reason_from_finish_reason(const json::value* finish_reason) noexcept {
  if (finish_reason == nullptr) return std::nullopt;
  const auto* s = finish_reason->if_string();
  if (s == nullptr) return std::nullopt;
  if (*s == "length") return "max_tokens";
  if (*s == "tool_calls" || *s == "function_call") return "tool_use";
  if (*s == "content_filter") return "refusal";
  return "end_turn";
}

namespace {

/// The stop reason an answer that delivered tool calls has, whatever finish reason the server
/// sent: vLLM (github.com/vllm-project/vllm/pull/9209, /pull/25054) and other OpenAI-compatible
/// servers answer tool calls with finish_reason "stop", and an Anthropic client only runs its
/// tools on stop_reason "tool_use". A cut ("max_tokens": the input may be incomplete) or a
/// refusal keeps its own reason.
std::string_view truthful_stop_reason(std::string_view mapped, bool delivered_tools) noexcept {
  return delivered_tools && mapped == "end_turn" ? std::string_view("tool_use") : mapped;
}

}  // namespace

json::object chat_response_to_messages(const json::object& chat, std::string_view model) {
  json::array content;
  const json::value* finish = nullptr;
  if (const json::array* choices = get_arr(chat, "choices"); choices != nullptr && !choices->empty()) {
    if (const auto* choice = choices->front().if_object()) {
      finish = choice->if_contains("finish_reason");
      if (const json::object* m = get_obj(*choice, "message")) {
        std::string_view text = str_or(*m, "content");
        if (text.empty()) text = str_or(*m, "refusal");
        if (!text.empty()) content.emplace_back(text_block(text));
        if (const json::array* calls = get_arr(*m, "tool_calls")) {
          for (const auto& cv : *calls) {
            const auto* call = cv.if_object();
            if (call == nullptr) continue;
            const json::object* fn = get_obj(*call, "function");
            content.emplace_back(json::object{
                {"type", "tool_use"},
                {"id", str_or(*call, "id")},
                {"name", fn != nullptr ? str_or(*fn, "name") : std::string_view{}},
                {"input", parse_arguments(fn != nullptr ? fn->if_contains("arguments") : nullptr)}});
          }
        }
      }
    }
  }
  const std::string_view in_id = str_or(chat, "id");
  std::string id;
  if (in_id.starts_with("msg_")) {
    id = in_id;
  } else {
    id.reserve(4 + in_id.size());
    id.append("msg_").append(in_id);
  }
  const Usage u = usage_from_openai(chat.contains("usage") ? chat.at("usage") : json::value());

  json::object out;
  out.reserve(8);
  out.emplace("id", std::move(id));
  out.emplace("type", "message");
  out.emplace("role", "assistant");
  out.emplace("model", model);
  out.emplace("content", std::move(content));
  bool delivered_tools = false;
  for (const auto& b : out.at("content").as_array())  // the blocks, moved into `out` above
    if (const auto* o = b.if_object(); o && str_or(*o, "type") == "tool_use") delivered_tools = true;
  if (auto sr = stop_reason_from_finish_reason(finish)) out.emplace("stop_reason", truthful_stop_reason(*sr, delivered_tools));
  else out.emplace("stop_reason", nullptr);
  out.emplace("stop_sequence", nullptr);
  const std::int64_t writes = u.cache_write_tokens + u.cache_write_1h_tokens;
  json::object usage{{"input_tokens", u.prompt_tokens - u.cached_tokens - writes},
                     {"output_tokens", u.completion_tokens},
                     {"cache_read_input_tokens", u.cached_tokens},
                     {"cache_creation_input_tokens", writes}};
  if (writes > 0)
    usage.emplace("cache_creation", json::object{{"ephemeral_5m_input_tokens", u.cache_write_tokens},
                                                 {"ephemeral_1h_input_tokens", u.cache_write_1h_tokens}});
  out.emplace("usage", std::move(usage));
  return out;
}

// ---- ChatStreamToMessages ---------------------------------------------------------------------

ChatStreamToMessages::ChatStreamToMessages(std::string model) : model_(std::move(model)) {}

void ChatStreamToMessages::start(std::string_view chunk_id, std::vector<AnthropicSseEvent>& out) {
  started_ = true;
  std::string s = R"({"type":"message_start","message":{"id":)";
  std::string id;
  if (chunk_id.starts_with("msg_")) {
    id = chunk_id;
  } else {
    id.append("msg_").append(chunk_id);
  }
  append_json_string(s, id);
  s.append(R"(,"type":"message","role":"assistant","model":)");
  append_json_string(s, model_);
  s.append(R"(,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":)");
  const Usage& known = usage_.reported ? usage_ : early_usage_;
  const std::int64_t writes = known.cache_write_tokens + known.cache_write_1h_tokens;
  append_int(s, known.reported ? known.prompt_tokens - known.cached_tokens - writes : 0);
  if (known.reported && (known.cached_tokens > 0 || writes > 0)) {
    s.append(R"(,"cache_read_input_tokens":)");
    append_int(s, known.cached_tokens);
    s.append(R"(,"cache_creation_input_tokens":)");
    append_int(s, writes);
  }
  s.append(R"(,"output_tokens":0}}})");
  out.emplace_back("message_start", std::move(s));
}

void ChatStreamToMessages::close_block(std::vector<AnthropicSseEvent>& out) {
  if (open_ == Block::none) return;
  std::string s = R"({"type":"content_block_stop","index":)";
  append_int(s, block_index_);
  s.push_back('}');
  out.emplace_back("content_block_stop", std::move(s));
  open_ = Block::none;
  open_tool_index_ = -1;
}

void ChatStreamToMessages::emit_final(std::vector<AnthropicSseEvent>& out) {
  close_block(out);
  std::string s = R"({"type":"message_delta","delta":{"stop_reason":)";
  if (stop_reason_) append_json_string(s, *stop_reason_);
  else s.append("null");
  s.append(R"(,"stop_sequence":null},"usage":)");
  s.append(usage_delta_json(usage_));
  s.push_back('}');
  out.emplace_back("message_delta", std::move(s));
  out.emplace_back("message_stop", R"({"type":"message_stop"})");
  stopped_ = true;
}

void ChatStreamToMessages::on_chunk(const json::object& chunk, std::vector<AnthropicSseEvent>& out) {
  if (stopped_) return;
  if (const json::value* u = chunk.if_contains("usage"); u != nullptr && u->is_object()) {
    usage_ = usage_from_openai(*u);
  }
  if (!started_) start(str_or(chunk, "id"), out);

  const json::array* choices = get_arr(chunk, "choices");
  const json::object* choice = nullptr;
  if (choices != nullptr) {
    // Only choice 0 is representable (Anthropic has no `n`).
    for (const auto& cv : *choices) {
      const auto* c = cv.if_object();
      if (c != nullptr && get_int(*c, "index").value_or(0) == 0) {
        choice = c;
        break;
      }
    }
  }
  if (choice != nullptr) {
    if (const json::object* delta = get_obj(*choice, "delta")) {
      std::string_view text = str_or(*delta, "content");
      if (text.empty()) text = str_or(*delta, "refusal");
      if (!text.empty()) {
        if (open_ != Block::text) {
          close_block(out);
          ++block_index_;
          open_ = Block::text;
          std::string s = R"({"type":"content_block_start","index":)";
          append_int(s, block_index_);
          s.append(R"(,"content_block":{"type":"text","text":""}})");
          out.emplace_back("content_block_start", std::move(s));
        }
        std::string s = R"({"type":"content_block_delta","index":)";
        append_int(s, block_index_);
        s.append(R"(,"delta":{"type":"text_delta","text":)");
        append_json_string(s, text);
        s.append("}}");
        out.emplace_back("content_block_delta", std::move(s));
      }
      if (const json::array* calls = get_arr(*delta, "tool_calls")) {
        for (const auto& cv : *calls) {
          const auto* call = cv.if_object();
          if (call == nullptr) continue;
          // A call is known by its id, else by its index: servers that omit the index
          // (ollama/ollama#7881) or give every call index 0 (ollama/ollama#15457) still have one
          // tool_use block per call.
          const auto index = get_int(*call, "index");
          const std::int64_t idx = index.value_or(open_tool_index_ < 0 ? 0 : open_tool_index_);
          const std::string_view call_id = str_or(*call, "id");
          const json::object* fn = get_obj(*call, "function");
          const bool new_call = open_ != Block::tool || (!call_id.empty() && call_id != open_tool_id_) ||
                                (call_id.empty() && index && idx != open_tool_index_);
          if (new_call) {
            close_block(out);
            ++block_index_;
            open_ = Block::tool;
            open_tool_index_ = idx;
            open_tool_id_ = std::string(call_id);
            tool_delivered_ = true;
            std::string s = R"({"type":"content_block_start","index":)";
            append_int(s, block_index_);
            s.append(R"(,"content_block":{"type":"tool_use","id":)");
            append_json_string(s, str_or(*call, "id"));
            s.append(R"(,"name":)");
            append_json_string(s, fn != nullptr ? str_or(*fn, "name") : std::string_view{});
            s.append(R"(,"input":{}}})");
            out.emplace_back("content_block_start", std::move(s));
          }
          const std::string_view args = fn != nullptr ? str_or(*fn, "arguments") : std::string_view{};
          if (!args.empty()) {
            std::string s = R"({"type":"content_block_delta","index":)";
            append_int(s, block_index_);
            s.append(R"(,"delta":{"type":"input_json_delta","partial_json":)");
            append_json_string(s, args);
            s.append("}}");
            out.emplace_back("content_block_delta", std::move(s));
          }
        }
      }
    }
    if (const json::value* fr = choice->if_contains("finish_reason"); fr != nullptr && fr->is_string()) {
      stop_reason_.emplace(truthful_stop_reason(*stop_reason_from_finish_reason(fr), tool_delivered_));
      finish_seen_ = true;
      close_block(out);
    }
  }
  if (finish_seen_ && usage_.reported) emit_final(out);
}

void ChatStreamToMessages::finish(std::vector<AnthropicSseEvent>& out) {
  if (stopped_) return;
  if (!started_) start({}, out);
  emit_final(out);
}

// =================================================================================================
// Errors
// =================================================================================================

json::object anthropic_error_body(std::string_view type, std::string_view message) {
  return json::object{{"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}};
}

std::string anthropic_error_type_for_status(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    case 504: return "timeout_error";
    default: break;
  }
  if (status >= 400 && status < 500) return "invalid_request_error";
  return "api_error";
}

ErrorFields parse_anthropic_error(const json::value& body) {
  ErrorFields f;
  const auto* o = body.if_object();
  if (o == nullptr) return f;
  const json::object* e = get_obj(*o, "error");
  if (e == nullptr) e = o;  // the bare inner object
  f.type = str_or(*e, "type");
  f.message = str_or(*e, "message");
  f.code = str_or(*e, "code");
  return f;
}

}  // namespace tollgate::providers::anthropic
