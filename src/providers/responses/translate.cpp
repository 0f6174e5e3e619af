#include "providers/responses/translate.hpp"

#include <chrono>

#include <boost/json/serialize.hpp>

#include "core/ids.hpp"

namespace tollgate::providers::responses {
namespace json = boost::json;

namespace {

std::string_view sv(const json::string& s) noexcept { return {s.data(), s.size()}; }

std::string_view str_or(const json::object& o, std::string_view key, std::string_view def = {}) noexcept {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? sv(v->get_string()) : def;
}

core::Error bad(std::string message, std::string param) {
  return core::Error::caller(400, "invalid_request_error", std::move(message), std::move(param));
}

/// Built-in (hosted) tool types: everything but a function tool.
bool is_builtin_tool_type(std::string_view type) { return type != "function"; }

/// A content part of an input message → a chat content part.
std::expected<json::object, core::Error> part_to_chat(const json::value& pv, const std::string& where) {
  const auto* p = pv.if_object();
  if (p == nullptr) return std::unexpected(bad("content parts must be objects", where));
  const auto type = str_or(*p, "type");
  if (type == "input_text" || type == "output_text" || type == "text" || type == "refusal") {
    const auto* text = p->if_contains(type == "refusal" ? "refusal" : "text");
    if (text == nullptr || !text->is_string())
      return std::unexpected(bad("a " + std::string(type) + " part needs a string 'text'", where + ".text"));
    return json::object{{"type", "text"}, {"text", text->get_string()}};
  }
  if (type == "input_image") {
    if (p->contains("file_id") && !p->contains("image_url"))
      return std::unexpected(
          bad("input_image by file_id is only served by OpenAI deployments (files are not forwarded)", where + ".file_id"));
    const auto url = str_or(*p, "image_url");
    if (url.empty()) return std::unexpected(bad("input_image needs an 'image_url'", where + ".image_url"));
    json::object image{{"url", url}};
    if (const auto detail = str_or(*p, "detail"); !detail.empty()) image["detail"] = detail;
    return json::object{{"type", "image_url"}, {"image_url", std::move(image)}};
  }
  if (type == "input_file") {
    const auto data = str_or(*p, "file_data");
    if (data.empty())
      return std::unexpected(bad("input_file needs 'file_data' (a data: URL); file_id and file_url are only served by "
                                 "OpenAI deployments",
                                 where + ".file_data"));
    json::object file{{"file_data", data}};
    if (const auto name = str_or(*p, "filename"); !name.empty()) file["filename"] = name;
    return json::object{{"type", "file"}, {"file", std::move(file)}};
  }
  return std::unexpected(bad("unsupported content part type '" + std::string(type) + "'", where + ".type"));
}

/// A message item's content → chat content (a string stays a string).
std::expected<json::value, core::Error> content_to_chat(const json::value& content, const std::string& where) {
  if (content.is_string()) return content;
  if (!content.is_array()) return std::unexpected(bad("content must be a string or an array of parts", where));
  json::array parts;
  std::size_t i = 0;
  for (const auto& pv : content.get_array()) {
    auto part = part_to_chat(pv, where + "[" + std::to_string(i++) + "]");
    if (!part) return std::unexpected(std::move(part.error()));
    parts.emplace_back(std::move(*part));
  }
  return parts;
}

/// Text of chat content parts joined (assistant history: chat wants a string).
std::string joined_text(const json::value& content) {
  if (content.is_string()) return std::string(sv(content.get_string()));
  std::string out;
  if (const auto* a = content.if_array())
    for (const auto& pv : *a)
      if (const auto* p = pv.if_object()) out += str_or(*p, "text");
  return out;
}

/// A function_call_output's `output`: a string, or parts whose texts are joined.
std::string output_text_of(const json::value& v) {
  if (v.is_string()) return std::string(sv(v.get_string()));
  if (v.is_array()) {
    std::string out;
    for (const auto& pv : v.get_array())
      if (const auto* p = pv.if_object()) out += str_or(*p, "text");
    return out;
  }
  return json::serialize(v);
}

std::optional<core::Error> input_to_messages(const json::value& input, json::array& messages) {
  if (input.is_string()) {
    messages.emplace_back(json::object{{"role", "user"}, {"content", input.get_string()}});
    return std::nullopt;
  }
  if (!input.is_array()) return bad("'input' must be a string or an array of input items", "input");
  std::size_t i = 0;
  for (const auto& iv : input.get_array()) {
    const std::string where = "input[" + std::to_string(i++) + "]";
    const auto* item = iv.if_object();
    if (item == nullptr) return bad("input items must be objects", where);
    const auto type = str_or(*item, "type", "message");
    if (type == "message") {
      const auto role = str_or(*item, "role");
      if (role != "user" && role != "assistant" && role != "system" && role != "developer")
        return bad("a message's role must be user, assistant, system or developer", where + ".role");
      const auto* content = item->if_contains("content");
      if (content == nullptr) return bad("a message needs 'content'", where + ".content");
      auto c = content_to_chat(*content, where + ".content");
      if (!c) return std::move(c.error());
      if (role == "assistant") *c = json::string(joined_text(*c));
      messages.emplace_back(json::object{{"role", role}, {"content", std::move(*c)}});
    } else if (type == "function_call") {
      const auto call_id = str_or(*item, "call_id");
      const auto name = str_or(*item, "name");
      if (call_id.empty() || name.empty()) return bad("a function_call item needs 'call_id' and 'name'", where);
      json::object call{{"id", call_id},
                        {"type", "function"},
                        {"function", json::object{{"name", name}, {"arguments", str_or(*item, "arguments", "{}")}}}};
      // Consecutive calls are one assistant turn with several tool calls.
      json::object* last = messages.empty() ? nullptr : messages.back().if_object();
      if (last != nullptr && str_or(*last, "role") == "assistant") {
        auto& tc = (*last)["tool_calls"];
        if (!tc.is_array()) tc = json::array{};
        tc.get_array().emplace_back(std::move(call));
      } else {
        messages.emplace_back(json::object{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array{call}}});
      }
    } else if (type == "function_call_output") {
      const auto call_id = str_or(*item, "call_id");
      const auto* output = item->if_contains("output");
      if (call_id.empty() || output == nullptr)
        return bad("a function_call_output item needs 'call_id' and 'output'", where);
      messages.emplace_back(
          json::object{{"role", "tool"}, {"tool_call_id", call_id}, {"content", output_text_of(*output)}});
    } else if (type == "reasoning") {
      continue;  // encrypted or summarised reasoning of an OpenAI model: nothing else can read it
    } else {
      return bad("input item type '" + std::string(type) + "' is not supported on this deployment", where + ".type");
    }
  }
  return std::nullopt;
}

std::expected<json::array, core::Error> tools_to_chat(const json::value& tools) {
  if (!tools.is_array()) return std::unexpected(bad("'tools' must be an array", "tools"));
  json::array out;
  std::size_t i = 0;
  for (const auto& tv : tools.get_array()) {
    const std::string where = "tools[" + std::to_string(i++) + "]";
    const auto* t = tv.if_object();
    if (t == nullptr) return std::unexpected(bad("tools must be objects", where));
    const auto name = str_or(*t, "name");
    if (name.empty()) return std::unexpected(bad("a function tool needs a 'name'", where + ".name"));
    json::object fn{{"name", name}};
    if (const auto* d = t->if_contains("description"); d && d->is_string()) fn["description"] = *d;
    if (const auto* p = t->if_contains("parameters"); p && p->is_object()) fn["parameters"] = *p;
    if (const auto* s = t->if_contains("strict"); s && s->is_bool()) fn["strict"] = *s;
    out.emplace_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

std::expected<json::value, core::Error> tool_choice_to_chat(const json::value& tc) {
  if (tc.is_string()) return tc;
  const auto* o = tc.if_object();
  if (o != nullptr && str_or(*o, "type") == "function" && !str_or(*o, "name").empty())
    return json::object{{"type", "function"}, {"function", json::object{{"name", str_or(*o, "name")}}}};
  return std::unexpected(bad("tool_choice must be auto, none, required or {type:function,name}", "tool_choice"));
}

std::expected<json::object, core::Error> format_to_chat(const json::value& text) {
  const auto* t = text.if_object();
  const auto* f = t != nullptr ? t->if_contains("format") : nullptr;
  if (f == nullptr || !f->is_object()) return json::object{};
  const auto& fo = f->get_object();
  const auto type = str_or(fo, "type");
  if (type == "text") return json::object{};
  if (type == "json_object") return json::object{{"type", "json_object"}};
  if (type == "json_schema") {
    json::object schema{{"name", str_or(fo, "name", "response")}};
    if (const auto* s = fo.if_contains("schema")) schema["schema"] = *s;
    if (const auto* s = fo.if_contains("strict"); s && s->is_bool()) schema["strict"] = *s;
    if (const auto* d = fo.if_contains("description"); d && d->is_string()) schema["description"] = *d;
    return json::object{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  }
  return std::unexpected(bad("text.format type must be text, json_object or json_schema", "text.format.type"));
}

}  // namespace

std::optional<std::string> native_only_feature(const json::object& req) {
  if (const auto* tools = req.if_contains("tools"); tools && tools->is_array()) {
    std::size_t i = 0;
    for (const auto& tv : tools->get_array()) {
      if (const auto* t = tv.if_object()) {
        const auto type = str_or(*t, "type", "function");
        if (is_builtin_tool_type(type)) return "tools[" + std::to_string(i) + "].type=" + std::string(type);
      }
      ++i;
    }
  }
  if (const auto* tc = req.if_contains("tool_choice"); tc && tc->is_object()) {
    const auto type = str_or(tc->get_object(), "type");
    if (type != "function") return "tool_choice.type=" + std::string(type);
  }
  if (auto hidden = hidden_input_field(req)) return hidden;
  if (const auto* b = req.if_contains("background"); b && b->is_bool() && b->get_bool()) return "background";
  return std::nullopt;
}

std::optional<std::string> hidden_input_field(const json::object& req) {
  for (const char* key : {"previous_response_id", "conversation", "prompt"})
    if (const auto* v = req.if_contains(key); v && !v->is_null()) return std::string(key);
  if (const auto* input = req.if_contains("input"); input && input->is_array()) {
    std::size_t i = 0;
    for (const auto& iv : input->get_array()) {
      if (const auto* item = iv.if_object(); item && str_or(*item, "type") == "item_reference")
        return "input[" + std::to_string(i) + "].type=item_reference";
      ++i;
    }
  }
  return std::nullopt;
}

std::expected<json::object, core::Error> request_to_chat(const json::object& req) {
  json::object chat;
  if (const auto* m = req.if_contains("model")) chat["model"] = *m;
  json::array messages;
  if (const auto* ins = req.if_contains("instructions"); ins && !ins->is_null()) {
    if (!ins->is_string()) return std::unexpected(bad("'instructions' must be a string", "instructions"));
    if (!ins->get_string().empty()) messages.emplace_back(json::object{{"role", "system"}, {"content", *ins}});
  }
  const auto* input = req.if_contains("input");
  if (input == nullptr || input->is_null())
    return std::unexpected(bad("missing required parameter: 'input'", "input"));
  if (auto err = input_to_messages(*input, messages)) return std::unexpected(std::move(*err));
  chat["messages"] = std::move(messages);
  if (const auto* tools = req.if_contains("tools"); tools && !tools->is_null()) {
    auto t = tools_to_chat(*tools);
    if (!t) return std::unexpected(std::move(t.error()));
    if (!t->empty()) chat["tools"] = std::move(*t);
  }
  if (const auto* tc = req.if_contains("tool_choice"); tc && !tc->is_null()) {
    auto c = tool_choice_to_chat(*tc);
    if (!c) return std::unexpected(std::move(c.error()));
    chat["tool_choice"] = std::move(*c);
  }
  if (const auto* mo = req.if_contains("max_output_tokens"); mo && !mo->is_null()) {
    const bool positive = (mo->is_int64() && mo->get_int64() > 0) || (mo->is_uint64() && mo->get_uint64() > 0);
    if (!positive)
      return std::unexpected(bad("'max_output_tokens' must be a positive integer", "max_output_tokens"));
    chat["max_tokens"] = *mo;
  }
  if (const auto* text = req.if_contains("text"); text && !text->is_null()) {
    auto f = format_to_chat(*text);
    if (!f) return std::unexpected(std::move(f.error()));
    if (!f->empty()) chat["response_format"] = std::move(*f);
  }
  if (const auto* r = req.if_contains("reasoning"); r && r->is_object())
    if (const auto* e = r->get_object().if_contains("effort"); e && e->is_string()) chat["reasoning_effort"] = *e;
  for (const char* key : {"temperature", "top_p", "parallel_tool_calls", "user"})
    if (const auto* v = req.if_contains(key); v && !v->is_null()) chat[key] = *v;
  if (const auto* st = req.if_contains("stream"); st && !st->is_null()) {
    chat["stream"] = *st;
    if (st->is_bool() && st->get_bool()) chat["stream_options"] = json::object{{"include_usage", true}};
  }
  return chat;
}

json::object usage_to_responses(const Usage& u) {
  const std::int64_t output = u.billed_output_tokens();
  return json::object{{"input_tokens", u.prompt_tokens},
                      {"input_tokens_details", json::object{{"cached_tokens", u.cached_tokens}}},
                      {"output_tokens", output},
                      {"output_tokens_details", json::object{{"reasoning_tokens", u.reasoning_tokens}}},
                      {"total_tokens", u.prompt_tokens + output}};
}

Usage usage_from_responses(const json::value& usage) noexcept {
  Usage u;
  const auto* o = usage.if_object();
  if (o == nullptr) return u;
  const auto input = detail::json_count(*o, "input_tokens");
  const auto output = detail::json_count(*o, "output_tokens");
  if (!input || !output) return u;
  u.reported = true;
  u.prompt_tokens = *input;
  u.completion_tokens = *output;
  if (const auto* d = o->if_contains("input_tokens_details"); d && d->is_object())
    u.cached_tokens = std::min(detail::json_count(d->get_object(), "cached_tokens").value_or(0), *input);
  if (const auto* d = o->if_contains("output_tokens_details"); d && d->is_object())
    u.reasoning_tokens = std::min(detail::json_count(d->get_object(), "reasoning_tokens").value_or(0), *output);
  return u;
}

json::object response_echo(const json::object& req) {
  json::object e;
  auto copy = [&](const char* key, json::value def) {
    const auto* v = req.if_contains(key);
    e[key] = v != nullptr && !v->is_null() ? *v : std::move(def);
  };
  copy("instructions", nullptr);
  copy("max_output_tokens", nullptr);
  copy("metadata", json::object{});
  copy("parallel_tool_calls", true);
  copy("temperature", 1.0);
  copy("top_p", 1.0);
  copy("tool_choice", "auto");
  copy("tools", json::array{});
  copy("text", json::object{{"format", json::object{{"type", "text"}}}});
  copy("user", nullptr);
  copy("reasoning", json::object{{"effort", nullptr}, {"summary", nullptr}});
  copy("truncation", "disabled");
  e["previous_response_id"] = nullptr;
  e["store"] = false;
  return e;
}

json::object make_response(const json::object& echo, std::string_view id, std::int64_t created_at,
                           std::string_view model, std::string_view status, json::array output,
                           const std::optional<Usage>& usage) {
  json::object r;
  r.reserve(echo.size() + 10);
  r["id"] = id;
  r["object"] = "response";
  r["created_at"] = created_at;
  r["status"] = status;
  r["error"] = nullptr;
  r["incomplete_details"] =
      status == "incomplete" ? json::value(json::object{{"reason", "max_output_tokens"}}) : json::value(nullptr);
  r["model"] = model;
  r["output"] = std::move(output);
  for (const auto& [k, v] : echo) r[k] = v;
  r["usage"] = usage ? json::value(usage_to_responses(*usage)) : json::value(nullptr);
  return r;
}

std::string new_item_id(std::string_view prefix) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  auto& rng = core::thread_rng();
  for (int i = 0; i < 3; ++i) {
    std::uint64_t r = rng();
    for (int j = 0; j < 16; ++j, r >>= 4) id.push_back(kHex[r & 0xf]);
  }
  return id;
}

json::object chat_response_to_response(const json::object& completion, const json::object& echo,
                                       std::string_view model) {
  json::array output;
  std::string_view finish;
  if (const auto* choices = completion.if_contains("choices"); choices && choices->is_array() &&
                                                              !choices->get_array().empty()) {
    const auto* choice = choices->get_array().front().if_object();
    const auto* msg = choice ? choice->if_contains("message") : nullptr;
    if (choice != nullptr) finish = str_or(*choice, "finish_reason");
    if (msg != nullptr && msg->is_object()) {
      const auto& m = msg->get_object();
      const auto text = str_or(m, "content");
      const auto refusal = str_or(m, "refusal");
      if (!text.empty() || !refusal.empty()) {
        json::object part = !text.empty()
                                ? json::object{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}}
                                : json::object{{"type", "refusal"}, {"refusal", refusal}};
        output.emplace_back(json::object{{"type", "message"},
                                         {"id", new_item_id("msg_")},
                                         {"status", "completed"},
                                         {"role", "assistant"},
                                         {"content", json::array{std::move(part)}}});
      }
      if (const auto* calls = m.if_contains("tool_calls"); calls && calls->is_array()) {
        for (const auto& cv : calls->get_array()) {
          const auto* c = cv.if_object();
          const auto* fn = c ? c->if_contains("function") : nullptr;
          if (fn == nullptr || !fn->is_object()) continue;
          output.emplace_back(json::object{{"type", "function_call"},
                                           {"id", new_item_id("fc_")},
                                           {"call_id", str_or(*c, "id")},
                                           {"name", str_or(fn->get_object(), "name")},
                                           {"arguments", str_or(fn->get_object(), "arguments", "{}")},
                                           {"status", "completed"}});
        }
      }
    }
  }
  std::optional<Usage> usage;
  if (auto u = usage_from_openai_response(completion); u.reported) usage = u;
  const auto* created = completion.if_contains("created");
  const std::int64_t at = created && created->is_int64()
                              ? created->get_int64()
                              : std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
  return make_response(echo, new_item_id("resp_"), at, model, finish == "length" ? "incomplete" : "completed",
                       std::move(output), usage);
}

}  // namespace tollgate::providers::responses
