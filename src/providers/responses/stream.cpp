#include "providers/responses/stream.hpp"

#include <chrono>

#include <boost/json/serialize.hpp>

#include "providers/responses/translate.hpp"

namespace tollgate::providers::responses {
namespace json = boost::json;

namespace {

std::string_view str_or(const json::object& o, std::string_view key) noexcept {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string().data(), v->get_string().size())
                                        : std::string_view{};
}

std::int64_t int_or(const json::object& o, std::string_view key, std::int64_t def) noexcept {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_int64() ? v->get_int64() : def;
}

}  // namespace

ChatStreamToResponses::ChatStreamToResponses(json::object echo, std::string model)
    : echo_(std::move(echo)),
      model_(std::move(model)),
      id_(new_item_id("resp_")),
      created_at_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                      .count()) {}

void ChatStreamToResponses::emit(std::string_view type, json::object data, std::vector<ResponsesSseEvent>& out) {
  json::object ev;
  ev.reserve(data.size() + 2);
  ev["type"] = type;
  ev["sequence_number"] = seq_++;
  for (auto& [k, v] : data) ev[k] = std::move(v);
  out.emplace_back(std::string(type), json::serialize(ev));
}

json::object ChatStreamToResponses::snapshot(std::string_view status, bool with_usage) const {
  std::optional<Usage> u;
  if (with_usage && usage_.reported) u = usage_;
  return make_response(echo_, id_, created_at_, model_, status, output_, u);
}

void ChatStreamToResponses::start(std::vector<ResponsesSseEvent>& out) {
  started_ = true;
  emit("response.created", json::object{{"response", snapshot("in_progress", false)}}, out);
  emit("response.in_progress", json::object{{"response", snapshot("in_progress", false)}}, out);
}

void ChatStreamToResponses::open_message(std::vector<ResponsesSseEvent>& out) {
  close_item(out);
  open_ = Item::message;
  item_id_ = new_item_id("msg_");
  text_.clear();
  const auto index = static_cast<std::int64_t>(output_.size());
  emit("response.output_item.added",
       json::object{{"output_index", index},
                    {"item", json::object{{"id", item_id_},
                                          {"type", "message"},
                                          {"status", "in_progress"},
                                          {"role", "assistant"},
                                          {"content", json::array{}}}}},
       out);
  emit("response.content_part.added",
       json::object{{"item_id", item_id_},
                    {"output_index", index},
                    {"content_index", 0},
                    {"part", json::object{{"type", "output_text"}, {"text", ""}, {"annotations", json::array{}}}}},
       out);
}

void ChatStreamToResponses::open_call(const json::object& call, std::vector<ResponsesSseEvent>& out) {
  close_item(out);
  open_ = Item::function_call;
  item_id_ = new_item_id("fc_");
  tool_index_ = int_or(call, "index", 0);
  call_id_ = std::string(str_or(call, "id"));
  const auto* fn = call.if_contains("function");
  call_name_ = fn && fn->is_object() ? std::string(str_or(fn->get_object(), "name")) : std::string();
  arguments_.clear();
  emit("response.output_item.added",
       json::object{{"output_index", static_cast<std::int64_t>(output_.size())},
                    {"item", json::object{{"id", item_id_},
                                          {"type", "function_call"},
                                          {"status", "in_progress"},
                                          {"call_id", call_id_},
                                          {"name", call_name_},
                                          {"arguments", ""}}}},
       out);
}

void ChatStreamToResponses::close_item(std::vector<ResponsesSseEvent>& out) {
  const auto index = static_cast<std::int64_t>(output_.size());
  if (open_ == Item::message) {
    json::object part{{"type", "output_text"}, {"text", text_}, {"annotations", json::array{}}};
    emit("response.output_text.done",
         json::object{{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"text", text_},
                      {"logprobs", json::array{}}},
         out);
    emit("response.content_part.done",
         json::object{{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"part", part}}, out);
    json::object item{{"id", item_id_},
                      {"type", "message"},
                      {"status", "completed"},
                      {"role", "assistant"},
                      {"content", json::array{std::move(part)}}};
    emit("response.output_item.done", json::object{{"output_index", index}, {"item", item}}, out);
    output_.emplace_back(std::move(item));
  } else if (open_ == Item::function_call) {
    if (arguments_.empty()) arguments_ = "{}";
    emit("response.function_call_arguments.done",
         json::object{{"item_id", item_id_}, {"output_index", index}, {"name", call_name_}, {"arguments", arguments_}},
         out);
    json::object item{{"id", item_id_},         {"type", "function_call"}, {"status", "completed"},
                      {"call_id", call_id_},    {"name", call_name_},      {"arguments", arguments_}};
    emit("response.output_item.done", json::object{{"output_index", index}, {"item", item}}, out);
    output_.emplace_back(std::move(item));
  }
  open_ = Item::none;
}

void ChatStreamToResponses::on_chunk(const json::object& chunk, std::vector<ResponsesSseEvent>& out) {
  if (ended_) return;
  if (!started_) start(out);
  if (const auto* u = chunk.if_contains("usage"); u && u->is_object()) usage_ = usage_from_openai(*u);
  const auto* choices = chunk.if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return;
  for (const auto& cv : choices->get_array()) {
    const auto* choice = cv.if_object();
    if (choice == nullptr || int_or(*choice, "index", 0) != 0) continue;
    if (const auto* dv = choice->if_contains("delta"); dv && dv->is_object()) {
      const auto& delta = dv->get_object();
      if (const auto text = str_or(delta, "content"); !text.empty()) {
        if (open_ != Item::message) open_message(out);
        text_ += text;
        emit("response.output_text.delta",
             json::object{{"item_id", item_id_},
                          {"output_index", static_cast<std::int64_t>(output_.size())},
                          {"content_index", 0},
                          {"delta", text},
                          {"logprobs", json::array{}}},
             out);
      }
      if (const auto* calls = delta.if_contains("tool_calls"); calls && calls->is_array()) {
        for (const auto& tv : calls->get_array()) {
          const auto* call = tv.if_object();
          if (call == nullptr) continue;
          if (open_ != Item::function_call || int_or(*call, "index", 0) != tool_index_) open_call(*call, out);
          const auto* fn = call->if_contains("function");
          const auto args = fn && fn->is_object() ? str_or(fn->get_object(), "arguments") : std::string_view{};
          if (args.empty()) continue;
          arguments_ += args;
          emit("response.function_call_arguments.delta",
               json::object{{"item_id", item_id_},
                            {"output_index", static_cast<std::int64_t>(output_.size())},
                            {"delta", args}},
               out);
        }
      }
    }
    if (const auto fr = str_or(*choice, "finish_reason"); !fr.empty()) finish_reason_ = std::string(fr);
  }
}

void ChatStreamToResponses::finish(std::vector<ResponsesSseEvent>& out) {
  if (ended_) return;
  if (!started_) start(out);
  close_item(out);
  ended_ = true;
  const bool incomplete = finish_reason_ == "length";
  emit(incomplete ? "response.incomplete" : "response.completed",
       json::object{{"response", snapshot(incomplete ? "incomplete" : "completed", true)}}, out);
}

void ChatStreamToResponses::fail(std::string_view code, std::string_view message, std::vector<ResponsesSseEvent>& out) {
  if (ended_) return;
  if (!started_) start(out);
  ended_ = true;
  emit("error", json::object{{"code", code}, {"message", message}, {"param", nullptr}}, out);
  auto failed = snapshot("failed", true);
  failed["error"] = json::object{{"code", code}, {"message", message}};
  emit("response.failed", json::object{{"response", std::move(failed)}}, out);
}

}  // namespace tollgate::providers::responses
