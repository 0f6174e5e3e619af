#include "providers/ollama/translate.hpp"
#include "core/json_parse.hpp"

#include <chrono>

#include <boost/json.hpp>

#include "core/ids.hpp"

namespace tollgate::providers::ollama {
namespace json = boost::json;

namespace {

/// LiteLLM's instruction for models asked for a function call as JSON
/// (litellm_core_utils/prompt_templates/factory.py `function_call_prompt`).
constexpr std::string_view kFunctionPrompt =
    "Produce JSON OUTPUT ONLY! Adhere to this format {\"name\": \"function_name\", \"arguments\":{\"argument_name\": "
    "\"argument_value\"}} The following functions are available to you:";

std::string_view str(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

/// The base64 payload of a `data:<type>;base64,<data>` URL; nullopt for any other URL.
std::optional<std::string_view> data_url_payload(std::string_view url) {
  if (!url.starts_with("data:")) return std::nullopt;
  const auto comma = url.find(',');
  if (comma == std::string_view::npos || url.substr(0, comma).find(";base64") == std::string_view::npos)
    return std::nullopt;
  return url.substr(comma + 1);
}

/// Text of a message's content (a string, or its text parts joined); inline images are appended
/// to `images`. Error: an image that is not a data: URL.
std::expected<std::string, std::string> content_of(const json::value* content, json::array* images) {
  if (content == nullptr || content->is_null()) return std::string();
  if (content->is_string()) return std::string(content->get_string());
  std::string text;
  if (!content->is_array()) return text;
  for (const auto& pv : content->get_array()) {
    if (!pv.is_object()) continue;
    const auto& part = pv.get_object();
    const auto type = str(part, "type");
    if (type == "text") {
      text += str(part, "text");
    } else if (type == "image_url") {
      std::string_view url;
      if (const auto* iu = part.if_contains("image_url")) {
        if (iu->is_string()) url = iu->get_string();
        else if (iu->is_object()) url = str(iu->get_object(), "url");
      }
      const auto payload = data_url_payload(url);
      if (!payload) return std::unexpected(std::string("Ollama takes images inline only: image_url must be a base64 data: URL"));
      if (images) images->emplace_back(*payload);
    }
  }
  return text;
}

/// A JSON-string `arguments` parsed into the object Ollama expects ({} when it does not parse).
json::value arguments_object(const json::value* args) {
  if (args && args->is_object()) return *args;
  if (args && args->is_string()) {
    boost::system::error_code ec;
    auto v = core::parse_json(args->get_string(), ec);
    if (!ec && v.is_object()) return v;
  }
  return json::object();
}

/// Options and format shared by /api/chat and /api/generate.
void copy_options(const json::object& chat, json::object& out) {
  json::object options;
  if (const auto* mt = chat.if_contains("max_tokens"); mt && mt->is_number()) options["num_predict"] = *mt;
  else if (const auto* mct = chat.if_contains("max_completion_tokens"); mct && mct->is_number()) options["num_predict"] = *mct;
  for (const char* k : {"temperature", "top_p", "seed", "frequency_penalty", "presence_penalty"})
    if (const auto* v = chat.if_contains(k); v && v->is_number()) options[k] = *v;
  if (const auto* stop = chat.if_contains("stop")) {
    if (stop->is_string()) options["stop"] = json::array{*stop};
    else if (stop->is_array()) options["stop"] = *stop;
  }
  if (!options.empty()) out["options"] = std::move(options);
  if (const auto* rf = chat.if_contains("response_format"); rf && rf->is_object()) {
    const auto type = str(rf->get_object(), "type");
    if (type == "json_object") {
      out["format"] = "json";
    } else if (type == "json_schema") {
      const auto* js = rf->get_object().if_contains("json_schema");
      const auto* schema = js && js->is_object() ? js->get_object().if_contains("schema") : nullptr;
      if (schema && schema->is_object()) out["format"] = *schema;
      else out["format"] = "json";
    }
  }
}

bool has_tools(const json::object& chat) {
  const auto* t = chat.if_contains("tools");
  return t && t->is_array() && !t->get_array().empty();
}

std::string serialized_arguments(const json::value* args) {
  if (args && args->is_string()) return std::string(args->get_string());
  return json::serialize(args ? *args : json::value(json::object()));
}

}  // namespace

std::expected<json::object, std::string> chat_to_ollama_chat(const json::object& chat, std::string_view model,
                                                             bool stream) {
  json::object out;
  out["model"] = model;
  json::array messages;
  json::object names_by_call;  // tool_call_id → function name, for tool messages' tool_name
  if (const auto* ms = chat.if_contains("messages"); ms && ms->is_array()) {
    for (const auto& mv : ms->get_array()) {
      if (!mv.is_object()) continue;
      const auto& m = mv.get_object();
      std::string role(str(m, "role"));
      if (role == "developer") role = "system";
      json::object om;
      om["role"] = role;
      json::array images;
      auto text = content_of(m.if_contains("content"), &images);
      if (!text) return std::unexpected(text.error());
      om["content"] = *text;
      if (!images.empty()) om["images"] = std::move(images);
      if (const auto* tcs = m.if_contains("tool_calls"); tcs && tcs->is_array() && !tcs->get_array().empty()) {
        json::array calls;
        for (const auto& tv : tcs->get_array()) {
          const auto* f = tv.is_object() ? tv.get_object().if_contains("function") : nullptr;
          if (!f || !f->is_object()) continue;
          const auto name = str(f->get_object(), "name");
          if (const auto id = str(tv.get_object(), "id"); !id.empty()) names_by_call[id] = name;
          calls.push_back(json::object{
              {"function", json::object{{"name", name}, {"arguments", arguments_object(f->get_object().if_contains("arguments"))}}}});
        }
        om["tool_calls"] = std::move(calls);
      }
      if (role == "tool") {
        if (const auto* n = names_by_call.if_contains(str(m, "tool_call_id")); n && n->is_string()) om["tool_name"] = *n;
      }
      messages.push_back(std::move(om));
    }
  }
  out["messages"] = std::move(messages);
  if (has_tools(chat)) out["tools"] = chat.at("tools");
  copy_options(chat, out);
  out["stream"] = stream;
  return out;
}

std::expected<json::object, std::string> chat_to_ollama_generate(const json::object& chat, std::string_view model,
                                                                 bool stream) {
  json::object out;
  out["model"] = model;
  json::array images;
  std::string prompt;
  const json::array* ms = nullptr;
  if (const auto* v = chat.if_contains("messages"); v && v->is_array()) ms = &v->get_array();
  const std::size_t n = ms ? ms->size() : 0;
  auto role_at = [&](std::size_t i) {
    return (*ms)[i].is_object() ? str((*ms)[i].get_object(), "role") : std::string_view();
  };
  std::size_t i = 0;
  while (i < n) {
    const std::size_t before = i;
    std::string user;
    while (i < n && (role_at(i) == "user" || role_at(i) == "tool" || role_at(i) == "function")) {
      auto t = content_of((*ms)[i].get_object().if_contains("content"), &images);
      if (!t) return std::unexpected(t.error());
      user += *t;
      ++i;
    }
    if (!user.empty()) prompt += "### User:\n" + user + "\n\n";
    std::string system;
    while (i < n && (role_at(i) == "system" || role_at(i) == "developer")) {
      auto t = content_of((*ms)[i].get_object().if_contains("content"), nullptr);
      if (!t) return std::unexpected(t.error());
      system += *t;
      ++i;
    }
    if (!system.empty()) prompt += "### System:\n" + system + "\n\n";
    std::string assistant;
    while (i < n && role_at(i) == "assistant") {
      const auto& m = (*ms)[i].get_object();
      auto t = content_of(m.if_contains("content"), nullptr);
      if (!t) return std::unexpected(t.error());
      assistant += *t;
      if (const auto* tcs = m.if_contains("tool_calls"); tcs && tcs->is_array() && !tcs->get_array().empty()) {
        json::array calls;
        for (const auto& tv : tcs->get_array()) {
          const auto* f = tv.is_object() ? tv.get_object().if_contains("function") : nullptr;
          if (!f || !f->is_object()) continue;
          calls.push_back(json::object{{"name", str(f->get_object(), "name")},
                                       {"arguments", arguments_object(f->get_object().if_contains("arguments"))}});
        }
        assistant += "Tool Calls: " + json::serialize(calls);
      }
      ++i;
    }
    if (!assistant.empty()) prompt += "### Assistant:\n" + assistant + "\n\n";
    if (i == before) ++i;  // a role this flattening does not know: skipped
  }
  if (has_tools(chat)) {
    std::string fp(kFunctionPrompt);
    for (const auto& t : chat.at("tools").get_array()) {
      const auto* f = t.is_object() ? t.get_object().if_contains("function") : nullptr;
      if (f) fp += "\n" + json::serialize(*f) + "\n";
    }
    prompt += "### System:\n" + fp + "\n\n";
  }
  out["prompt"] = prompt;
  if (!images.empty()) out["images"] = std::move(images);
  copy_options(chat, out);
  if (has_tools(chat)) out["format"] = "json";
  out["stream"] = stream;
  return out;
}

Usage usage_from_ollama(const json::object& o) noexcept {
  Usage u;
  const auto prompt = detail::json_count(o, "prompt_eval_count");
  const auto completion = detail::json_count(o, "eval_count");
  if (!prompt || !completion) return u;
  u.reported = true;
  u.prompt_tokens = *prompt;
  u.completion_tokens = *completion;
  return u;
}

std::string_view finish_reason(const json::object& o, bool delivered_tool_calls) noexcept {
  if (str(o, "done_reason") == "length") return "length";
  if (delivered_tool_calls) return "tool_calls";
  return "stop";
}

std::optional<ToolCall> tool_call_from_json(std::string_view text) {
  boost::system::error_code ec;
  auto v = core::parse_json(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  auto name = str(o, "name");
  if (name.empty()) name = str(o, "function");
  if (name.empty()) return std::nullopt;
  const json::value* args = o.if_contains("arguments");
  if (!args) args = o.if_contains("parameters");
  return ToolCall{std::string(name), serialized_arguments(args)};
}

namespace {
json::object tool_call_json(std::int64_t index, std::string_view name, std::string arguments) {
  return json::object{{"id", "call_" + std::to_string(index)},
                      {"type", "function"},
                      {"function", json::object{{"name", name}, {"arguments", std::move(arguments)}}}};
}
}  // namespace

std::expected<json::object, std::string> response_to_chat(std::string_view body, std::string_view model,
                                                          bool generate, Usage& usage) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
  const auto& o = v.get_object();
  json::object message{{"role", "assistant"}};
  json::array calls;
  std::string text;
  if (generate) {
    const auto* r = o.if_contains("response");
    if (!r || !r->is_string()) return std::unexpected("upstream response is not an Ollama generate answer");
    text = r->get_string();
    {
      if (auto call = tool_call_from_json(text)) {
        calls.push_back(tool_call_json(0, call->name, std::move(call->arguments)));
        text.clear();
      }
    }
  } else {
    const auto* m = o.if_contains("message");
    if (!m || !m->is_object()) return std::unexpected("upstream response is not an Ollama chat answer");
    text = str(m->get_object(), "content");
    if (const auto* tcs = m->get_object().if_contains("tool_calls"); tcs && tcs->is_array()) {
      for (const auto& tv : tcs->get_array()) {
        const auto* f = tv.is_object() ? tv.get_object().if_contains("function") : nullptr;
        if (!f || !f->is_object()) continue;
        calls.push_back(tool_call_json(static_cast<std::int64_t>(calls.size()), str(f->get_object(), "name"),
                                       serialized_arguments(f->get_object().if_contains("arguments"))));
      }
    }
  }
  if (calls.empty() || !text.empty()) message["content"] = text;
  else message["content"] = nullptr;
  const bool had_calls = !calls.empty();
  if (had_calls) message["tool_calls"] = std::move(calls);
  usage = usage_from_ollama(o);
  json::object choice{{"index", 0}, {"message", std::move(message)}, {"logprobs", nullptr},
                      {"finish_reason", finish_reason(o, had_calls)}};
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  json::object out{{"id", "chatcmpl-" + core::new_uuid()},
                   {"object", "chat.completion"},
                   {"created", now.count()},
                   {"model", model},
                   {"choices", json::array{std::move(choice)}}};
  if (usage.reported) out["usage"] = usage_to_openai(usage);
  return out;
}

NdjsonToChat::NdjsonToChat(std::string model, bool include_usage, bool generate)
    : w_("chatcmpl-" + core::new_uuid(), std::move(model), include_usage), include_usage_(include_usage), generate_(generate) {}

void NdjsonToChat::start(std::vector<std::string>& out) {
  if (started_) return;
  started_ = true;
  out.push_back(w_.role());
}

void NdjsonToChat::on_event(const http::SseEvent& ev, std::vector<std::string>& out) {
  if (done_ || error_) return;
  if (ev.data.empty()) return;
  boost::system::error_code ec;
  auto v = core::parse_json(ev.data, ec);
  if (ec || !v.is_object()) {
    error_ = "upstream stream line is not a JSON object";
    return;
  }
  const auto& o = v.get_object();
  if (const auto* e = o.if_contains("error")) {
    error_ = e->is_string() ? std::string(e->get_string()) : json::serialize(*e);
    return;
  }
  start(out);
  if (generate_) {
    const auto text = str(o, "response");
    if (text_ == Text::undecided) {
      const auto first = text.find_first_not_of(" \t\r\n");
      if (first != std::string_view::npos) text_ = text[first] == '{' ? Text::held : Text::streamed;
    }
    if (text_ == Text::streamed) {
      if (!held_.empty()) out.push_back(w_.content(held_));
      held_.clear();
      if (!text.empty()) out.push_back(w_.content(text));
    } else {
      held_ += text;  // whitespace before the decision, or a possible call
    }
  } else if (const auto* m = o.if_contains("message"); m && m->is_object()) {
    if (const auto text = str(m->get_object(), "content"); !text.empty()) out.push_back(w_.content(text));
    if (const auto* tcs = m->get_object().if_contains("tool_calls"); tcs && tcs->is_array()) {
      for (const auto& tv : tcs->get_array()) {
        const auto* f = tv.is_object() ? tv.get_object().if_contains("function") : nullptr;
        if (!f || !f->is_object()) continue;
        out.push_back(w_.tool_call_start(tool_calls_, "call_" + std::to_string(tool_calls_), str(f->get_object(), "name"),
                                         serialized_arguments(f->get_object().if_contains("arguments"))));
        ++tool_calls_;
      }
    }
  }
  const auto* done = o.if_contains("done");
  if (!done || !done->is_bool() || !done->get_bool()) return;
  if (!held_.empty()) {
    if (auto call = text_ == Text::held ? tool_call_from_json(held_) : std::nullopt) {
      out.push_back(w_.tool_call_start(0, "call_0", call->name, call->arguments));
      tool_calls_ = 1;
    } else {
      out.push_back(w_.content(held_));
    }
  }
  done_ = true;
  usage_ = usage_from_ollama(o);
  out.push_back(w_.finish(finish_reason(o, tool_calls_ > 0)));
  if (include_usage_ && usage_.reported) out.push_back(w_.usage_chunk(usage_));
}

}  // namespace tollgate::providers::ollama
