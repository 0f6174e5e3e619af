#include "providers/bedrock/converse.hpp"
#include "core/json_parse.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include <boost/json.hpp>

#include "budget/inline_data.hpp"

namespace tollgate::providers::bedrock {
namespace json = boost::json;

namespace {

std::string_view str_or(const json::object& o, std::string_view key, std::string_view def = {}) noexcept {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : def;
}

bool is_number(const json::value& v) noexcept { return v.is_int64() || v.is_uint64() || v.is_double(); }

json::object text_block(std::string_view t) { return json::object{{"text", t}}; }

/// `data:image/png;base64,...` → {image:{format:"png", source:{bytes:"..."}}}; nullopt otherwise.
std::optional<json::object> image_block(std::string_view url) {
  const auto d = budget::parse_base64_data_url(url);
  if (!d || !d->media_type.starts_with("image/")) return std::nullopt;
  std::string format(d->media_type.substr(6));
  if (format == "jpg") format = "jpeg";
  return json::object{{"image", json::object{{"format", format}, {"source", json::object{{"bytes", d->base64}}}}}};
}

void content_to_blocks(const json::value& content, json::array& out) {
  if (const auto* s = content.if_string()) {
    if (!s->empty()) out.emplace_back(text_block(*s));
    return;
  }
  const auto* parts = content.if_array();
  if (!parts) return;
  for (const auto& pv : *parts) {
    const auto* p = pv.if_object();
    if (!p) continue;
    const auto type = str_or(*p, "type");
    bool added = false;
    if (type == "text") {
      if (const auto t = str_or(*p, "text"); !t.empty()) {
        out.emplace_back(text_block(t));
        added = true;
      }
    } else if (type == "image_url") {
      std::string_view url;
      if (const auto* iu = p->if_contains("image_url")) {
        if (iu->is_string()) url = iu->get_string();
        else if (iu->is_object()) url = str_or(iu->get_object(), "url");
      }
      if (auto b = image_block(url)) {
        out.emplace_back(std::move(*b));
        added = true;
      }
    }
    if (added && p->contains("cache_control"))
      out.emplace_back(json::object{{"cachePoint", json::object{{"type", "default"}}}});
  }
}

/// Appends `blocks` as a `role` message, merged into the previous one when it has that role.
void push(json::array& messages, std::string_view role, json::array&& blocks) {
  if (blocks.empty()) return;
  if (!messages.empty()) {
    auto& last = messages.back().as_object();
    if (str_or(last, "role") == role) {
      auto& c = last["content"].as_array();
      for (auto& b : blocks) c.emplace_back(std::move(b));
      return;
    }
  }
  messages.emplace_back(json::object{{"role", role}, {"content", std::move(blocks)}});
}

json::object parse_arguments(const json::value* args) {
  if (args && args->is_string()) {
    boost::system::error_code ec;
    auto v = core::parse_json(args->get_string(), ec);
    if (!ec && v.is_object()) return std::move(v.as_object());
  } else if (args && args->is_object()) {
    return args->get_object();
  }
  return {};
}

std::string next_id() {
  static std::atomic<std::uint64_t> n{0};
  return "chatcmpl-bedrock-" + std::to_string(++n);
}

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

json::object chat_to_converse(const json::object& chat) {
  json::object out;
  json::array system;
  json::array messages;
  if (const auto* mv = chat.if_contains("messages"); mv && mv->is_array()) {
    for (const auto& m_v : mv->get_array()) {
      const auto* m = m_v.if_object();
      if (!m) continue;
      const auto role = str_or(*m, "role");
      const json::value* content = m->if_contains("content");
      if (role == "system" || role == "developer") {
        if (content) content_to_blocks(*content, system);
      } else if (role == "user") {
        json::array blocks;
        if (content) content_to_blocks(*content, blocks);
        push(messages, "user", std::move(blocks));
      } else if (role == "assistant") {
        json::array blocks;
        if (content) content_to_blocks(*content, blocks);
        if (const auto* calls = m->if_contains("tool_calls"); calls && calls->is_array()) {
          for (const auto& cv : calls->get_array()) {
            const auto* call = cv.if_object();
            if (!call) continue;
            const auto* fn = call->if_contains("function");
            const auto* fo = fn ? fn->if_object() : nullptr;
            blocks.emplace_back(json::object{
                {"toolUse", json::object{{"toolUseId", str_or(*call, "id")},
                                         {"name", fo ? str_or(*fo, "name") : std::string_view{}},
                                         {"input", parse_arguments(fo ? fo->if_contains("arguments") : nullptr)}}}});
          }
        }
        push(messages, "assistant", std::move(blocks));
      } else if (role == "tool") {
        json::array result;
        if (content) content_to_blocks(*content, result);
        // A tool result holds text, image, json or document blocks only; it may not be empty.
        result.erase(std::remove_if(result.begin(), result.end(),
                                    [](const json::value& b) { return b.as_object().contains("cachePoint"); }),
                     result.end());
        if (result.empty()) result.emplace_back(text_block(" "));
        json::array blocks;
        blocks.emplace_back(json::object{
            {"toolResult", json::object{{"toolUseId", str_or(*m, "tool_call_id")}, {"content", std::move(result)}}}});
        push(messages, "user", std::move(blocks));
      }
    }
  }
  out.emplace("messages", std::move(messages));
  if (!system.empty()) out.emplace("system", std::move(system));

  json::object inference;
  if (const auto* v = chat.if_contains("max_completion_tokens"); v && is_number(*v)) inference.emplace("maxTokens", *v);
  else if (const auto* w = chat.if_contains("max_tokens"); w && is_number(*w)) inference.emplace("maxTokens", *w);
  if (const auto* v = chat.if_contains("temperature"); v && is_number(*v)) inference.emplace("temperature", *v);
  if (const auto* v = chat.if_contains("top_p"); v && is_number(*v)) inference.emplace("topP", *v);
  if (const auto* stop = chat.if_contains("stop")) {
    json::array seqs;
    if (stop->is_string()) seqs.push_back(*stop);
    else if (stop->is_array())
      for (const auto& e : stop->get_array())
        if (e.is_string()) seqs.push_back(e);
    if (!seqs.empty()) inference.emplace("stopSequences", std::move(seqs));
  }
  if (!inference.empty()) out.emplace("inferenceConfig", std::move(inference));

  json::array tools;
  if (const auto* tv = chat.if_contains("tools"); tv && tv->is_array()) {
    for (const auto& t_v : tv->get_array()) {
      const auto* t = t_v.if_object();
      if (!t || str_or(*t, "type", "function") != "function") continue;
      const auto* fn = t->if_contains("function");
      if (!fn || !fn->is_object()) continue;
      const auto& f = fn->get_object();
      json::object spec{{"name", str_or(f, "name")}};
      if (const auto d = str_or(f, "description"); !d.empty()) spec.emplace("description", d);
      json::value schema = json::object{{"type", "object"}, {"properties", json::object()}};
      if (const auto* p = f.if_contains("parameters"); p && p->is_object()) schema = *p;
      spec.emplace("inputSchema", json::object{{"json", std::move(schema)}});
      tools.emplace_back(json::object{{"toolSpec", std::move(spec)}});
    }
  }
  if (!tools.empty()) {
    json::object tc{{"tools", std::move(tools)}};
    if (const auto* choice = chat.if_contains("tool_choice")) {
      if (choice->is_string()) {
        if (choice->get_string() == "auto") tc.emplace("toolChoice", json::object{{"auto", json::object()}});
        else if (choice->get_string() == "required") tc.emplace("toolChoice", json::object{{"any", json::object()}});
      } else if (choice->is_object()) {
        const auto* fn = choice->get_object().if_contains("function");
        if (fn && fn->is_object())
          tc.emplace("toolChoice", json::object{{"tool", json::object{{"name", str_or(fn->get_object(), "name")}}}});
      }
    }
    out.emplace("toolConfig", std::move(tc));
  }

  json::object extra;
  if (const auto* th = chat.if_contains("thinking"); th && th->is_object()) {
    extra.emplace("thinking", *th);
  } else if (const auto effort = str_or(chat, "reasoning_effort"); !effort.empty()) {
    const std::int64_t budget = effort == "low" ? 1024 : effort == "medium" ? 2048 : effort == "high" ? 4096 : 0;
    if (budget > 0) extra.emplace("thinking", json::object{{"type", "enabled"}, {"budget_tokens", budget}});
  }
  if (!extra.empty()) out.emplace("additionalModelRequestFields", std::move(extra));
  return out;
}

std::string_view finish_reason_from_stop_reason(std::string_view s) noexcept {
  if (s == "max_tokens") return "length";
  if (s == "tool_use") return "tool_calls";
  if (s == "guardrail_intervened" || s == "content_filtered") return "content_filter";
  return "stop";
}

Usage usage_from_converse(const json::value& usage) noexcept {
  Usage u;
  const auto* o = usage.if_object();
  if (!o) return u;
  const auto in = detail::json_count(*o, "inputTokens");
  const auto outp = detail::json_count(*o, "outputTokens");
  if (!in || !outp) return u;
  u.reported = true;
  u.cached_tokens = detail::json_count(*o, "cacheReadInputTokens").value_or(0);
  u.cache_write_tokens = detail::json_count(*o, "cacheWriteInputTokens").value_or(0);
  u.prompt_tokens = *in + u.cached_tokens + u.cache_write_tokens;
  u.completion_tokens = *outp;
  return u;
}

json::object converse_to_chat(const json::object& response, std::string_view model) {
  std::string text;
  std::string reasoning;
  bool has_text = false;
  json::array calls;
  const json::object* msg = nullptr;
  if (const auto* o = response.if_contains("output"); o && o->is_object())
    if (const auto* m = o->get_object().if_contains("message"); m && m->is_object()) msg = &m->get_object();
  if (msg)
    if (const auto* c = msg->if_contains("content"); c && c->is_array())
      for (const auto& bv : c->get_array()) {
        const auto* b = bv.if_object();
        if (!b) continue;
        if (const auto* t = b->if_contains("text"); t && t->is_string()) {
          text += t->get_string();
          has_text = true;
        } else if (const auto* tu = b->if_contains("toolUse"); tu && tu->is_object()) {
          const auto& x = tu->get_object();
          const auto* input = x.if_contains("input");
          calls.emplace_back(json::object{
              {"index", static_cast<std::int64_t>(calls.size())},
              {"id", str_or(x, "toolUseId")},
              {"type", "function"},
              {"function", json::object{{"name", str_or(x, "name")},
                                        {"arguments", input ? json::serialize(*input) : std::string("{}")}}}});
        } else if (const auto* rc = b->if_contains("reasoningContent"); rc && rc->is_object()) {
          if (const auto* rt = rc->get_object().if_contains("reasoningText"); rt && rt->is_object())
            reasoning += str_or(rt->get_object(), "text");
        }
      }
  json::object message{{"role", "assistant"}};
  if (has_text || calls.empty()) message.emplace("content", text);
  else message.emplace("content", nullptr);
  if (!reasoning.empty()) message.emplace("reasoning_content", reasoning);
  if (!calls.empty()) message.emplace("tool_calls", std::move(calls));
  const auto finish = finish_reason_from_stop_reason(str_or(response, "stopReason", "end_turn"));
  json::object out{{"id", next_id()},
                   {"object", "chat.completion"},
                   {"created", now_seconds()},
                   {"model", model},
                   {"choices", json::array{json::object{{"index", 0}, {"message", std::move(message)}, {"finish_reason", finish}}}}};
  if (const auto* u = response.if_contains("usage")) {
    const Usage usage = usage_from_converse(*u);
    if (usage.reported) out.emplace("usage", usage_to_openai(usage));
  }
  return out;
}

}  // namespace tollgate::providers::bedrock
