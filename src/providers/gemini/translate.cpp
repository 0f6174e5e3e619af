#include "providers/gemini/translate.hpp"
#include "core/json_parse.hpp"

#include <ctime>
#include <map>

#include <boost/json.hpp>

#include "core/ids.hpp"

namespace tollgate::providers::gemini {
namespace json = boost::json;

namespace {

std::string_view str_or(const json::object& o, std::string_view key, std::string_view fallback = {}) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : fallback;
}

/// JSON-Schema keys that Gemini's schema subset (OpenAPI 3.0 Schema) rejects.
void clean_schema(json::value& v, int depth = 0) {
  if (depth > 32) return;
  if (auto* o = v.if_object()) {
    o->erase("additionalProperties");
    o->erase("$schema");
    o->erase("strict");
    for (auto& kv : *o) clean_schema(kv.value(), depth + 1);
  } else if (auto* a = v.if_array()) {
    for (auto& e : *a) clean_schema(e, depth + 1);
  }
}

std::string_view mime_from_url(std::string_view url) {
  const auto dot = url.rfind('.');
  const std::string_view ext = dot == std::string_view::npos ? std::string_view() : url.substr(dot + 1);
  if (ext == "png") return "image/png";
  if (ext == "gif") return "image/gif";
  if (ext == "webp") return "image/webp";
  if (ext == "pdf") return "application/pdf";
  return "image/jpeg";
}

/// A media part from an OpenAI URL (a data: URL inline, any other as a file reference).
json::object media_part(std::string_view url) {
  if (url.starts_with("data:")) {
    const auto comma = url.find(',');
    const auto semi = url.find(';');
    if (comma != std::string_view::npos) {
      const std::string_view mime = url.substr(5, (semi < comma ? semi : comma) - 5);
      return json::object{{"inlineData", json::object{{"mimeType", mime}, {"data", url.substr(comma + 1)}}}};
    }
  }
  return json::object{{"fileData", json::object{{"mimeType", mime_from_url(url)}, {"fileUri", url}}}};
}

/// The parts of an OpenAI message content (string or array of parts).
void content_parts(const json::value& content, json::array& out) {
  if (content.is_string()) {
    if (!content.get_string().empty()) out.push_back(json::object{{"text", content.get_string()}});
    return;
  }
  const auto* parts = content.if_array();
  if (!parts) return;
  for (const auto& pv : *parts) {
    const auto* p = pv.if_object();
    if (!p) continue;
    const auto type = str_or(*p, "type");
    if (type == "text") {
      if (auto t = str_or(*p, "text"); !t.empty()) out.push_back(json::object{{"text", t}});
    } else if (type == "image_url") {
      const auto* iu = p->if_contains("image_url");
      std::string_view url;
      if (iu && iu->is_object()) url = str_or(iu->get_object(), "url");
      else if (iu && iu->is_string()) url = iu->get_string();
      if (!url.empty()) out.push_back(media_part(url));
    } else if (type == "file") {
      const auto* f = p->if_contains("file");
      if (f && f->is_object()) {
        if (auto data = str_or(f->get_object(), "file_data"); !data.empty()) out.push_back(media_part(data));
        else if (auto id = str_or(f->get_object(), "file_id"); !id.empty()) out.push_back(media_part(id));
      }
    }
  }
}

/// Text of a content (string, or the text parts joined) for tool results.
std::string content_text(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string out;
  if (const auto* parts = content.if_array())
    for (const auto& pv : *parts)
      if (const auto* p = pv.if_object()) out += str_or(*p, "text");
  return out;
}

json::object parse_object_or_empty(std::string_view text) {
  boost::system::error_code ec;
  auto v = core::parse_json(text, ec);
  if (!ec && v.is_object()) return std::move(v.get_object());
  return {};
}

void push_turn(json::array& contents, std::string_view role, json::array parts) {
  if (parts.empty()) return;
  if (!contents.empty()) {
    auto& last = contents.back().get_object();
    if (last["role"].get_string() == role) {
      auto& lp = last["parts"].get_array();
      for (auto& p : parts) lp.push_back(std::move(p));
      return;
    }
  }
  contents.push_back(json::object{{"role", role}, {"parts", std::move(parts)}});
}

void generation_config(const json::object& chat, json::object& out) {
  json::object g;
  const json::value* limit = chat.if_contains("max_tokens");
  if (!limit || limit->is_null()) limit = chat.if_contains("max_completion_tokens");
  if (limit && limit->is_number()) g["maxOutputTokens"] = *limit;
  for (auto [from, to] : {std::pair{"temperature", "temperature"}, {"top_p", "topP"}, {"top_k", "topK"},
                          {"n", "candidateCount"}, {"presence_penalty", "presencePenalty"},
                          {"frequency_penalty", "frequencyPenalty"}, {"seed", "seed"}}) {
    if (const auto* v = chat.if_contains(from); v && v->is_number()) g[to] = *v;
  }
  if (const auto* stop = chat.if_contains("stop")) {
    if (stop->is_string()) g["stopSequences"] = json::array{stop->get_string()};
    else if (stop->is_array()) g["stopSequences"] = *stop;
  }
  if (const auto* rf = chat.if_contains("response_format"); rf && rf->is_object()) {
    const auto type = str_or(rf->get_object(), "type");
    if (type == "json_object" || type == "json_schema") g["responseMimeType"] = "application/json";
    if (type == "json_schema") {
      const auto* js = rf->get_object().if_contains("json_schema");
      const auto* schema = js && js->is_object() ? js->get_object().if_contains("schema") : nullptr;
      if (schema && schema->is_object()) {
        json::value s = *schema;
        clean_schema(s);
        g["responseSchema"] = std::move(s);
      }
    }
  }
  if (!g.empty()) out["generationConfig"] = std::move(g);
}

void tools_config(const json::object& chat, json::object& out) {
  if (const auto* tools = chat.if_contains("tools"); tools && tools->is_array()) {
    json::array decls;
    for (const auto& tv : tools->get_array()) {
      const auto* t = tv.if_object();
      const auto* f = t ? t->if_contains("function") : nullptr;
      if (!f || !f->is_object()) continue;
      const auto& fo = f->get_object();
      json::object d{{"name", str_or(fo, "name")}};
      if (auto desc = str_or(fo, "description"); !desc.empty()) d["description"] = desc;
      if (const auto* params = fo.if_contains("parameters"); params && params->is_object()) {
        json::value p = *params;
        clean_schema(p);
        d["parameters"] = std::move(p);
      }
      decls.push_back(std::move(d));
    }
    if (!decls.empty()) out["tools"] = json::array{json::object{{"functionDeclarations", std::move(decls)}}};
  }
  if (const auto* tc = chat.if_contains("tool_choice")) {
    json::object fcc;
    if (tc->is_string()) {
      const std::string_view c = tc->get_string();
      fcc["mode"] = c == "none" ? "NONE" : c == "required" ? "ANY" : "AUTO";
    } else if (const auto* o = tc->if_object()) {
      const auto* f = o->if_contains("function");
      if (f && f->is_object()) {
        fcc["mode"] = "ANY";
        fcc["allowedFunctionNames"] = json::array{str_or(f->get_object(), "name")};
      }
    }
    if (!fcc.empty()) out["toolConfig"] = json::object{{"functionCallingConfig", std::move(fcc)}};
  }
}

// The sum of the AUDIO entries of a ModalityTokenCount list, at most kMaxTokenCount.
std::int64_t audio_tokens(const json::object& usage, std::string_view list) noexcept {
  std::int64_t sum = 0;
  const auto* details = usage.if_contains(list);
  if (!details || !details->is_array()) return 0;
  for (const auto& dv : details->get_array()) {
    const auto* d = dv.if_object();
    if (d && str_or(*d, "modality") == "AUDIO")  // at most kMaxTokenCount each: the sum never overflows
      sum = std::min(sum + detail::json_count(*d, "tokenCount").value_or(0), kMaxTokenCount);
  }
  return sum;
}

}  // namespace

json::object chat_request_to_gemini(const json::object& chat) {
  json::object out;
  json::array contents;
  json::array system;
  std::map<std::string, std::string, std::less<>> call_names;  // tool_call_id → function name
  if (const auto* messages = chat.if_contains("messages"); messages && messages->is_array()) {
    for (const auto& mv : messages->get_array()) {
      const auto* m = mv.if_object();
      if (!m) continue;
      const auto role = str_or(*m, "role");
      static const json::value null_content;
      const json::value* content = m->if_contains("content");
      if (!content) content = &null_content;
      if (role == "system" || role == "developer") {
        content_parts(*content, system);
      } else if (role == "assistant") {
        json::array parts;
        content_parts(*content, parts);
        if (const auto* calls = m->if_contains("tool_calls"); calls && calls->is_array()) {
          for (const auto& cv : calls->get_array()) {
            const auto* c = cv.if_object();
            const auto* f = c ? c->if_contains("function") : nullptr;
            if (!f || !f->is_object()) continue;
            const auto name = str_or(f->get_object(), "name");
            call_names[std::string(str_or(*c, "id"))] = std::string(name);
            parts.push_back(json::object{
                {"functionCall", json::object{{"name", name},
                                              {"args", parse_object_or_empty(str_or(f->get_object(), "arguments"))}}}});
          }
        }
        push_turn(contents, "model", std::move(parts));
      } else if (role == "tool") {
        const auto id = str_or(*m, "tool_call_id");
        const auto it = call_names.find(id);
        const std::string name = it != call_names.end() ? it->second : std::string(str_or(*m, "name"));
        const std::string text = content_text(*content);
        json::object response = parse_object_or_empty(text);
        if (response.empty() && text != "{}") response = json::object{{"content", text}};
        json::array parts{json::object{{"functionResponse", json::object{{"name", name}, {"response", std::move(response)}}}}};
        push_turn(contents, "user", std::move(parts));
      } else {  // user (and anything unknown, as the caller's words)
        json::array parts;
        content_parts(*content, parts);
        push_turn(contents, "user", std::move(parts));
      }
    }
  }
  out["contents"] = std::move(contents);
  if (!system.empty()) out["systemInstruction"] = json::object{{"parts", std::move(system)}};
  tools_config(chat, out);
  generation_config(chat, out);
  return out;
}

std::string_view finish_reason_from_gemini(std::string_view r, bool called_function) noexcept {
  if (r == "MAX_TOKENS") return "length";
  if (r == "SAFETY" || r == "RECITATION" || r == "BLOCKLIST" || r == "PROHIBITED_CONTENT" || r == "SPII" ||
      r == "IMAGE_SAFETY" || r == "LANGUAGE")
    return "content_filter";
  return called_function ? "tool_calls" : "stop";
}

Usage usage_from_gemini(const json::value& um) noexcept {
  Usage u;
  const auto* o = um.if_object();
  if (!o) return u;
  const auto prompt = detail::json_count(*o, "promptTokenCount");
  if (!prompt) return u;
  u.reported = true;
  const auto tool_prompt = detail::json_count(*o, "toolUsePromptTokenCount").value_or(0);
  u.prompt_tokens = *prompt + tool_prompt;
  u.cached_tokens = std::min(detail::json_count(*o, "cachedContentTokenCount").value_or(0), *prompt);
  const auto thoughts = detail::json_count(*o, "thoughtsTokenCount").value_or(0);
  u.completion_tokens = detail::json_count(*o, "candidatesTokenCount").value_or(0) + thoughts;
  u.reasoning_tokens = thoughts;
  // promptTokensDetails counts the whole prompt by modality, the cached content included, and
  // cacheTokensDetails the cached content's: audio read from the cache is priced as cached.
  const std::int64_t audio = audio_tokens(*o, "promptTokensDetails");
  const std::int64_t cached_audio = std::min(audio_tokens(*o, "cacheTokensDetails"), u.cached_tokens);
  u.audio_input_tokens = audio - std::min(cached_audio, audio);
  u.fit_prompt_parts();  // audio reported beyond the prompt is cut, as the cost counts it
  return u;
}

json::object usage_to_openai_with_reasoning(const Usage& u) {
  json::object o = usage_to_openai(u);
  o["completion_tokens_details"] = json::object{{"reasoning_tokens", u.reasoning_tokens}};
  return o;
}

json::object gemini_response_to_chat(const json::object& response, std::string_view model) {
  json::object out;
  std::string id(str_or(response, "responseId"));
  out["id"] = id.empty() ? "chatcmpl-" + core::new_uuid() : "chatcmpl-" + id;
  out["object"] = "chat.completion";
  out["created"] = static_cast<std::int64_t>(std::time(nullptr));
  out["model"] = str_or(response, "modelVersion", model);
  json::array choices;
  int call_no = 0;
  if (const auto* cands = response.if_contains("candidates"); cands && cands->is_array()) {
    for (const auto& cv : cands->get_array()) {
      const auto* c = cv.if_object();
      if (!c) continue;
      std::string text;
      json::array calls;
      const auto* content = c->if_contains("content");
      const auto* parts = content && content->is_object() ? content->get_object().if_contains("parts") : nullptr;
      if (parts && parts->is_array()) {
        for (const auto& pv : parts->get_array()) {
          const auto* p = pv.if_object();
          if (!p) continue;
          if (const auto* th = p->if_contains("thought"); th && th->is_bool() && th->get_bool()) continue;
          if (const auto* t = p->if_contains("text"); t && t->is_string()) text += t->get_string();
          if (const auto* fc = p->if_contains("functionCall"); fc && fc->is_object()) {
            const auto& f = fc->get_object();
            const auto* args = f.if_contains("args");
            calls.push_back(json::object{
                {"id", "call_" + std::to_string(call_no++)},
                {"type", "function"},
                {"function", json::object{{"name", str_or(f, "name")},
                                          {"arguments", args ? json::serialize(*args) : std::string("{}")}}}});
          }
        }
      }
      json::object message{{"role", "assistant"}};
      message["content"] = text.empty() && !calls.empty() ? json::value(nullptr) : json::value(text);
      const bool called = !calls.empty();
      if (called) message["tool_calls"] = std::move(calls);
      std::int64_t index = static_cast<std::int64_t>(choices.size());
      if (const auto* i = c->if_contains("index"); i && i->is_int64()) index = i->get_int64();
      choices.push_back(json::object{{"index", index},
                                     {"message", std::move(message)},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish_reason_from_gemini(str_or(*c, "finishReason"), called)}});
    }
  }
  if (choices.empty()) {
    // No candidate: the prompt was blocked (promptFeedback.blockReason) before generation.
    choices.push_back(json::object{{"index", 0},
                                   {"message", json::object{{"role", "assistant"}, {"content", ""}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", "content_filter"}});
  }
  out["choices"] = std::move(choices);
  if (const auto* um = response.if_contains("usageMetadata")) {
    const Usage u = usage_from_gemini(*um);
    if (u.reported) out["usage"] = usage_to_openai_with_reasoning(u);
  }
  return out;
}

}  // namespace tollgate::providers::gemini
