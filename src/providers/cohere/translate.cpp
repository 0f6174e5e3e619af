#include "providers/cohere/translate.hpp"
#include "core/json_parse.hpp"

#include <chrono>

#include <boost/json.hpp>

#include "core/ids.hpp"

namespace tollgate::providers::cohere {
namespace json = boost::json;

namespace {

std::string_view str(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

const json::object* obj(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

/// The text of a content value (a string, or its text parts joined).
std::string text_of(const json::value* content) {
  if (content == nullptr) return {};
  if (content->is_string()) return std::string(content->get_string());
  std::string text;
  if (content->is_array())
    for (const auto& p : content->get_array())
      if (p.is_object() && str(p.get_object(), "type") == "text") text += str(p.get_object(), "text");
  return text;
}

/// A user content value in Cohere's shape: a string stays; parts keep text and image_url.
json::value user_content(const json::value* content) {
  if (content == nullptr || content->is_null()) return "";
  if (!content->is_array()) return content->is_string() ? *content : json::value("");
  json::array parts;
  for (const auto& pv : content->get_array()) {
    if (!pv.is_object()) continue;
    const auto& p = pv.get_object();
    const auto type = str(p, "type");
    if (type == "text") {
      parts.push_back(json::object{{"type", "text"}, {"text", str(p, "text")}});
    } else if (type == "image_url") {
      const auto* iu = p.if_contains("image_url");
      std::string_view url;
      if (iu && iu->is_string()) url = iu->get_string();
      else if (iu && iu->is_object()) url = str(iu->get_object(), "url");
      parts.push_back(json::object{{"type", "image_url"}, {"image_url", json::object{{"url", url}}}});
    }
  }
  return parts;
}

}  // namespace

json::object chat_to_cohere(const json::object& chat, std::string_view model, bool stream) {
  json::object out;
  out["model"] = model;
  json::array messages;
  if (const auto* ms = chat.if_contains("messages"); ms && ms->is_array()) {
    for (const auto& mv : ms->get_array()) {
      if (!mv.is_object()) continue;
      const auto& m = mv.get_object();
      const auto role = str(m, "role");
      json::object om;
      if (role == "system" || role == "developer") {
        om = json::object{{"role", "system"}, {"content", text_of(m.if_contains("content"))}};
      } else if (role == "assistant") {
        om["role"] = "assistant";
        const std::string text = text_of(m.if_contains("content"));
        if (!text.empty()) om["content"] = text;
        if (const auto* tcs = m.if_contains("tool_calls"); tcs && tcs->is_array() && !tcs->get_array().empty()) {
          json::array calls;
          for (const auto& tv : tcs->get_array()) {
            if (!tv.is_object()) continue;
            const auto* f = obj(tv.get_object(), "function");
            if (!f) continue;
            std::string args(str(*f, "arguments"));
            calls.push_back(json::object{{"id", str(tv.get_object(), "id")},
                                         {"type", "function"},
                                         {"function", json::object{{"name", str(*f, "name")}, {"arguments", args.empty() ? std::string("{}") : args}}}});
          }
          om["tool_calls"] = std::move(calls);
        }
      } else if (role == "tool") {
        om = json::object{{"role", "tool"}, {"tool_call_id", str(m, "tool_call_id")}, {"content", text_of(m.if_contains("content"))}};
      } else {
        om = json::object{{"role", "user"}, {"content", user_content(m.if_contains("content"))}};
      }
      messages.push_back(std::move(om));
    }
  }
  out["messages"] = std::move(messages);
  if (const auto* t = chat.if_contains("tools"); t && t->is_array() && !t->get_array().empty()) out["tools"] = *t;
  if (const auto* mt = chat.if_contains("max_tokens"); mt && mt->is_number()) out["max_tokens"] = *mt;
  else if (const auto* mct = chat.if_contains("max_completion_tokens"); mct && mct->is_number()) out["max_tokens"] = *mct;
  for (const char* k : {"temperature", "seed", "frequency_penalty", "presence_penalty"})
    if (const auto* v = chat.if_contains(k); v && v->is_number()) out[k] = *v;
  if (const auto* v = chat.if_contains("top_p"); v && v->is_number()) out["p"] = *v;
  if (const auto* stop = chat.if_contains("stop")) {
    if (stop->is_string()) out["stop_sequences"] = json::array{*stop};
    else if (stop->is_array()) out["stop_sequences"] = *stop;
  }
  if (const auto* rf = chat.if_contains("response_format"); rf && rf->is_object()) {
    const auto type = str(rf->get_object(), "type");
    if (type == "json_object") {
      out["response_format"] = json::object{{"type", "json_object"}};
    } else if (type == "json_schema") {
      json::object f{{"type", "json_object"}};
      if (const auto* js = obj(rf->get_object(), "json_schema"))
        if (const auto* schema = js->if_contains("schema")) f["json_schema"] = *schema;
      out["response_format"] = std::move(f);
    }
  }
  if (const auto* tc = chat.if_contains("tool_choice"); tc && tc->is_string()) {
    if (tc->get_string() == "required") out["tool_choice"] = "REQUIRED";
    else if (tc->get_string() == "none") out["tool_choice"] = "NONE";
  }
  out["stream"] = stream;
  return out;
}

Usage usage_from_cohere(const json::value* usage) noexcept {
  Usage u;
  const auto* o = usage ? usage->if_object() : nullptr;
  const auto* billed = o ? obj(*o, "billed_units") : nullptr;
  if (!billed) return u;
  const auto in = detail::json_count(*billed, "input_tokens");
  const auto out = detail::json_count(*billed, "output_tokens");
  if (!in || !out) return u;
  u.reported = true;
  u.prompt_tokens = *in;
  u.completion_tokens = *out;
  return u;
}

std::string_view finish_reason(std::string_view r, bool delivered_tool_calls) noexcept {
  if (r == "MAX_TOKENS") return "length";
  if (r == "TOOL_CALL" || delivered_tool_calls) return "tool_calls";
  return "stop";
}

std::expected<json::object, std::string> response_to_chat(std::string_view body, std::string_view model, Usage& usage) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
  const auto& o = v.get_object();
  const auto* m = obj(o, "message");
  if (!m) return std::unexpected("upstream response is not a Cohere chat answer");
  const std::string text = text_of(m->if_contains("content"));
  json::object message{{"role", "assistant"}};
  json::array calls;
  if (const auto* tcs = m->if_contains("tool_calls"); tcs && tcs->is_array()) {
    for (const auto& tv : tcs->get_array()) {
      if (!tv.is_object()) continue;
      const auto* f = obj(tv.get_object(), "function");
      if (!f) continue;
      calls.push_back(json::object{{"id", str(tv.get_object(), "id")},
                                   {"type", "function"},
                                   {"function", json::object{{"name", str(*f, "name")}, {"arguments", str(*f, "arguments")}}}});
    }
  }
  if (calls.empty() || !text.empty()) message["content"] = text;
  else message["content"] = nullptr;
  const bool had_calls = !calls.empty();
  if (had_calls) message["tool_calls"] = std::move(calls);
  usage = usage_from_cohere(o.if_contains("usage"));
  json::object choice{{"index", 0}, {"message", std::move(message)}, {"logprobs", nullptr},
                      {"finish_reason", finish_reason(str(o, "finish_reason"), had_calls)}};
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  json::object out{{"id", str(o, "id").empty() ? "chatcmpl-" + core::new_uuid() : std::string(str(o, "id"))},
                   {"object", "chat.completion"},
                   {"created", now.count()},
                   {"model", model},
                   {"choices", json::array{std::move(choice)}}};
  if (usage.reported) out["usage"] = usage_to_openai(usage);
  return out;
}

StreamToChat::StreamToChat(std::string model, bool include_usage)
    : w_("chatcmpl-" + core::new_uuid(), std::move(model), include_usage), include_usage_(include_usage) {}

void StreamToChat::on_event(const http::SseEvent& ev, std::vector<std::string>& out) {
  if (done_ || error_ || ev.data.empty()) return;
  boost::system::error_code ec;
  auto v = core::parse_json(ev.data, ec);
  if (ec || !v.is_object()) {
    error_ = "upstream stream event is not a JSON object";
    return;
  }
  const auto& o = v.get_object();
  const auto type = str(o, "type");
  const auto* delta = obj(o, "delta");
  const auto* message = delta ? obj(*delta, "message") : nullptr;
  auto begin = [&] {
    if (started_) return;
    started_ = true;
    out.push_back(w_.role());
  };
  if (type == "message-start") {
    if (const auto id = str(o, "id"); !id.empty()) w_.set_id(std::string(id));
    begin();
  } else if (type == "content-delta") {
    begin();
    const auto* content = message ? obj(*message, "content") : nullptr;
    if (const auto text = content ? str(*content, "text") : std::string_view(); !text.empty()) out.push_back(w_.content(text));
  } else if (type == "tool-call-start") {
    begin();
    const auto* call = message ? obj(*message, "tool_calls") : nullptr;
    const auto* f = call ? obj(*call, "function") : nullptr;
    out.push_back(w_.tool_call_start(tool_calls_, call ? str(*call, "id") : "", f ? str(*f, "name") : "",
                                     f ? str(*f, "arguments") : ""));
    ++tool_calls_;
  } else if (type == "tool-call-delta") {
    const auto* call = message ? obj(*message, "tool_calls") : nullptr;
    const auto* f = call ? obj(*call, "function") : nullptr;
    if (const auto args = f ? str(*f, "arguments") : std::string_view(); !args.empty() && tool_calls_ > 0)
      out.push_back(w_.tool_call_arguments(tool_calls_ - 1, args));
  } else if (type == "message-end") {
    const auto reason = delta ? str(*delta, "finish_reason") : std::string_view();
    if (const auto err = delta ? str(*delta, "error") : std::string_view(); !err.empty() || reason == "ERROR") {
      error_ = err.empty() ? std::string("Cohere ended the stream with finish_reason ERROR") : std::string(err);
      return;
    }
    begin();
    done_ = true;
    usage_ = usage_from_cohere(delta ? delta->if_contains("usage") : nullptr);
    out.push_back(w_.finish(finish_reason(reason, tool_calls_ > 0)));
    if (include_usage_ && usage_.reported) out.push_back(w_.usage_chunk(usage_));
  }
}

}  // namespace tollgate::providers::cohere
