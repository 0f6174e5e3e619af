// OpenAI Responses API wire format (POST /v1/responses, also Azure's /openai/responses and
// /openai/v1/responses): the response object, its typed SSE events, the stored responses GET and
// DELETE read. Shapes: OpenAI API reference "Responses" (create, the response object) and
// "Streaming events" (response.created … response.completed, each with `sequence_number`).
// Errors are the OpenAI family's (openai.cpp).
#include "mock.hpp"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace tollgate::mock {

namespace json = boost::json;

namespace {

std::string_view str_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

std::string usage_object(const Completion& c) {
  Counts k = c.full_counts();
  bool q = c.usage_style == UsageStyle::string_counts;
  return R"({"input_tokens":)" + count_json(k.prompt, q) + R"(,"input_tokens_details":{"cached_tokens":)" +
         count_json(k.cached, q) + R"(},"output_tokens":)" + count_json(k.billed_output(), q) +
         R"(,"output_tokens_details":{"reasoning_tokens":)" + count_json(k.reasoning, q) + R"(},"total_tokens":)" +
         count_json(k.total(), q) + "}";
}

std::string usage_member(const Completion& c) {
  if (c.usage_style == UsageStyle::omit) return {};
  if (c.usage_style == UsageStyle::null) return R"(,"usage":null)";
  return R"(,"usage":)" + usage_object(c);
}

// Whether the answer has a message item: text, or no tool call to carry it instead.
bool has_message(const Completion& c) { return c.tokens > 0 || c.tool_name.empty(); }
std::string suffix(const Completion& c) { return c.id.size() > 5 ? c.id.substr(5) : c.id; }
std::string message_id(const Completion& c) { return "msg_" + suffix(c); }
std::string call_item_id(const Completion& c) { return "fc_" + suffix(c); }
std::string call_id(const Completion& c) { return "call_" + suffix(c).substr(0, 24); }

std::string message_item(const Completion& c, std::string_view status, bool with_text) {
  std::string out = R"({"id":")" + message_id(c) + R"(","type":"message","status":")" + std::string(status) +
                    R"(","role":"assistant","content":[)";
  if (with_text)
    out += R"({"type":"output_text","text":)" + json_quote(c.text(c.tokens)) + R"(,"annotations":[]})";
  return out + "]}";
}

std::string call_item(const Completion& c, std::string_view status, bool with_arguments) {
  return R"({"id":")" + call_item_id(c) + R"(","type":"function_call","status":")" + std::string(status) +
         R"(","call_id":")" + call_id(c) + R"(","name":)" + json_quote(c.tool_name) + R"(,"arguments":)" +
         json_quote(with_arguments ? c.tool_arguments : std::string()) + "}";
}

// The response object; `done` = with its output and usage.
std::string response_object(const Completion& c, std::string_view status, bool done) {
  std::string output;
  if (done) {
    if (has_message(c)) output += message_item(c, "completed", true);
    if (!c.tool_name.empty()) output += (output.empty() ? "" : ",") + call_item(c, "completed", true);
  }
  std::string out = R"({"id":")" + c.id + R"(","object":"response","created_at":)" + std::to_string(c.created) +
                    R"(,"status":")" + std::string(status) + R"(","error":null,"incomplete_details":)" +
                    (status == "incomplete" ? R"({"reason":"max_output_tokens"})" : "null") +
                    R"(,"instructions":null,"max_output_tokens":null,"model":)" + json_quote(c.model) +
                    R"(,"output":[)" + output +
                    R"(],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":)" +
                    json_quote(c.service_tier) +
                    R"(,"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled")";
  out += done ? usage_member(c) : std::string(R"(,"usage":null)");
  return out + R"(,"user":null,"metadata":{}})";
}

std::string event(std::string_view type, std::int64_t seq, std::string_view rest) {
  std::string out = "event: " + std::string(type) + "\ndata: {\"type\":\"" + std::string(type) +
                    "\",\"sequence_number\":" + std::to_string(seq);
  if (!rest.empty()) out += "," + std::string(rest);
  return out + "}\n\n";
}

// Sequence number of the first text delta.
std::int64_t first_delta_seq(const Completion& c) { return has_message(c) ? 4 : 2; }

std::string final_status(const Completion& c) { return c.capped ? "incomplete" : "completed"; }

// Responses this mock created, for GET and DELETE (bounded: the oldest are forgotten).
struct Stored {
  std::mutex mu;
  std::unordered_map<std::string, std::string> by_id;
  std::deque<std::string> order;
};
Stored& stored() {
  static Stored s;
  return s;
}

void remember(const std::string& id, std::string body) {
  auto& s = stored();
  std::lock_guard lock(s.mu);
  if (s.by_id.insert_or_assign(id, std::move(body)).second) s.order.push_back(id);
  while (s.order.size() > kMaxBills) {
    s.by_id.erase(s.order.front());
    s.order.pop_front();
  }
}

class Responses final : public Api {
 public:
  std::string new_request_id() const override { return openai_api().new_request_id(); }
  std::string new_completion_id() const override { return "resp_" + random_token(48); }
  std::string success_headers(const Completion& c, std::string_view rid) const override {
    return openai_api().success_headers(c, rid);
  }
  std::string base_headers(std::string_view rid) const override { return openai_api().base_headers(rid); }

  std::string body(const Completion& c) const override {
    std::string b = response_object(c, final_status(c), true);
    remember(c.id, b);
    return b;
  }

  std::string stream_open(const Completion& c) const override {
    std::string r = R"("response":)" + response_object(c, "in_progress", false);
    std::string out = event("response.created", 0, r) + event("response.in_progress", 1, r);
    if (!has_message(c)) return out;
    out += event("response.output_item.added", 2, R"("output_index":0,"item":)" + message_item(c, "in_progress", false));
    out += event("response.content_part.added", 3,
                 R"("item_id":")" + message_id(c) +
                     R"(","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]})");
    return out;
  }

  std::string stream_token(const Completion& c, std::int64_t i) const override {
    return event("response.output_text.delta", first_delta_seq(c) + i,
                 R"("item_id":")" + message_id(c) + R"(","output_index":0,"content_index":0,"delta":)" +
                     json_quote(c.piece(i)) + R"(,"logprobs":[])");
  }

  std::string stream_finish(const Completion& c) const override {
    std::int64_t s = first_delta_seq(c) + c.tokens;
    std::string out;
    std::int64_t index = 0;
    if (has_message(c)) {
      std::string text = json_quote(c.text(c.tokens));
      std::string at = R"("item_id":")" + message_id(c) + R"(","output_index":0,"content_index":0,)";
      out += event("response.output_text.done", s++, at + R"("text":)" + text + R"(,"logprobs":[])");
      out += event("response.content_part.done", s++,
                   at + R"("part":{"type":"output_text","text":)" + text + R"(,"annotations":[]})");
      out += event("response.output_item.done", s++, R"("output_index":0,"item":)" + message_item(c, "completed", true));
      index = 1;
    }
    if (!c.tool_name.empty()) {
      std::string oi = R"("output_index":)" + std::to_string(index);
      std::string at = R"("item_id":")" + call_item_id(c) + "\"," + oi;
      out += event("response.output_item.added", s++, oi + R"(,"item":)" + call_item(c, "in_progress", false));
      out += event("response.function_call_arguments.delta", s++, at + R"(,"delta":)" + json_quote(c.tool_arguments));
      out += event("response.function_call_arguments.done", s++,
                   at + R"(,"name":)" + json_quote(c.tool_name) + R"(,"arguments":)" + json_quote(c.tool_arguments));
      out += event("response.output_item.done", s++, oi + R"(,"item":)" + call_item(c, "completed", true));
    }
    return out;
  }

  std::string stream_usage(const Completion& c) const override {
    std::int64_t s = first_delta_seq(c) + c.tokens + (has_message(c) ? 3 : 0) + (c.tool_name.empty() ? 0 : 4);
    std::string response = response_object(c, final_status(c), true);
    remember(c.id, response);
    return event(c.capped ? "response.incomplete" : "response.completed", s, R"("response":)" + response);
  }

  std::string stream_done(const Completion&) const override { return {}; }

  std::string stream_malformed() const override { return "event: response.output_text.delta\ndata: {not json\n\n"; }

  Reply error(const ErrorSpec& e) const override { return openai_api().error(e); }
};

// The text of an input item's content: a string, or its parts' `text` / `output`.
void add_content(json::array& messages, std::string_view role, const json::value& content) {
  messages.push_back(json::object{{"role", role}, {"content", content}});
}

}  // namespace

json::object responses_as_chat(const json::object& body) {
  json::object chat;
  json::array messages;
  if (const auto* ins = body.if_contains("instructions"); ins && ins->is_string())
    add_content(messages, "system", *ins);
  if (const auto* input = body.if_contains("input")) {
    if (input->is_string()) {
      add_content(messages, "user", *input);
    } else if (input->is_array()) {
      for (const auto& iv : input->get_array()) {
        const auto* item = iv.if_object();
        if (item == nullptr) continue;
        if (const auto* c = item->if_contains("content")) {
          add_content(messages, str_of(*item, "role"), *c);
        } else if (const auto* o = item->if_contains("output")) {
          add_content(messages, "tool", *o);
        } else if (const auto* a = item->if_contains("arguments")) {
          add_content(messages, "assistant", *a);
        }
      }
    }
  }
  chat["messages"] = std::move(messages);
  if (const auto* m = body.if_contains("max_output_tokens")) chat["max_tokens"] = *m;
  for (const char* k : {"model", "stream", "service_tier", "temperature", "top_p"})
    if (const auto* v = body.if_contains(k)) chat[k] = *v;
  chat["stream_options"] = json::object{{"include_usage", true}};
  return chat;
}

std::optional<std::string> stored_response(const std::string& id, bool erase) {
  auto& s = stored();
  std::lock_guard lock(s.mu);
  auto it = s.by_id.find(id);
  if (it == s.by_id.end()) return std::nullopt;
  std::string body = erase ? std::move(it->second) : it->second;
  if (erase) s.by_id.erase(it);
  return body;
}

void stored_responses_reset() {
  auto& s = stored();
  std::lock_guard lock(s.mu);
  s.by_id.clear();
  s.order.clear();
}

const Api& responses_api() {
  static const Responses api;
  return api;
}

}  // namespace tollgate::mock
