#include "providers/bedrock/converse_stream.hpp"
#include "core/json_parse.hpp"

#include <atomic>
#include <chrono>

#include <boost/json.hpp>

#include "providers/bedrock/converse.hpp"
#include "providers/bedrock/errors.hpp"

namespace tollgate::providers::bedrock {
namespace json = boost::json;

namespace {

const json::object* obj(const json::object& o, std::string_view k) noexcept {
  const auto* v = o.if_contains(k);
  return v ? v->if_object() : nullptr;
}

std::string_view str(const json::object& o, std::string_view k) noexcept {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

std::int64_t block_index(const json::object& o) noexcept {
  const auto i = detail::json_count(o, "contentBlockIndex");
  return i ? *i : 0;
}

std::string stream_id() {
  static std::atomic<std::uint64_t> n{0};
  return "chatcmpl-bedrock-s" + std::to_string(++n);
}

}  // namespace

ConverseStreamDecoder::ConverseStreamDecoder(std::string model, bool include_usage)
    : model_(std::move(model)),
      id_(stream_id()),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()),
      include_usage_(include_usage) {}

void ConverseStreamDecoder::emit(json::object delta, const char* finish_reason, std::vector<std::string>& out) const {
  json::object choice{{"index", 0}, {"delta", std::move(delta)}};
  if (finish_reason) choice.emplace("finish_reason", finish_reason);
  else choice.emplace("finish_reason", nullptr);
  json::object chunk{{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", model_},
                     {"choices", json::array{std::move(choice)}}};
  out.push_back(json::serialize(chunk));
}

void ConverseStreamDecoder::on_event(const http::SseEvent& ev, std::vector<std::string>& out) {
  if (finished_ || error_) return;
  boost::system::error_code ec;
  const auto v = core::parse_json(ev.data, ec);
  if (ev.id == "exception" || ev.id == "error") {
    policy::Outcome o;
    const std::string name = aws::exception_name(ev.event);
    o.status = aws::status_for_exception(name);
    o.error_type = name;
    o.error_code = name;
    if (!ec && v.is_object()) o.message = std::string(str(v.get_object(), "message"));
    if (o.message.empty()) o.message = "upstream stream reported " + name;
    error_ = std::move(o);
    return;
  }
  if (ec || !v.is_object()) return;  // not an event of this API: skipped
  const auto& p = v.get_object();
  if (ev.event == "messageStart") {
    emit(json::object{{"role", "assistant"}, {"content", ""}}, nullptr, out);
  } else if (ev.event == "contentBlockStart") {
    const auto* start = obj(p, "start");
    const auto* tu = start ? obj(*start, "toolUse") : nullptr;
    if (!tu) return;
    const auto bi = block_index(p);
    if (static_cast<std::size_t>(bi) >= tool_by_block_.size()) tool_by_block_.resize(static_cast<std::size_t>(bi) + 1, -1);
    const std::int64_t ti = next_tool_++;
    tool_by_block_[static_cast<std::size_t>(bi)] = ti;
    json::object call{{"index", ti}, {"id", str(*tu, "toolUseId")}, {"type", "function"},
                      {"function", json::object{{"name", str(*tu, "name")}, {"arguments", ""}}}};
    emit(json::object{{"tool_calls", json::array{std::move(call)}}}, nullptr, out);
  } else if (ev.event == "contentBlockDelta") {
    const auto* delta = obj(p, "delta");
    if (!delta) return;
    if (const auto* t = delta->if_contains("text"); t && t->is_string()) {
      emit(json::object{{"content", t->get_string()}}, nullptr, out);
    } else if (const auto* tu = obj(*delta, "toolUse")) {
      const auto bi = static_cast<std::size_t>(block_index(p));
      const std::int64_t ti = bi < tool_by_block_.size() ? tool_by_block_[bi] : -1;
      if (ti < 0) return;
      json::object call{{"index", ti}, {"function", json::object{{"arguments", str(*tu, "input")}}}};
      emit(json::object{{"tool_calls", json::array{std::move(call)}}}, nullptr, out);
    } else if (const auto* rc = obj(*delta, "reasoningContent")) {
      if (const auto t = str(*rc, "text"); !t.empty()) emit(json::object{{"reasoning_content", t}}, nullptr, out);
    }
  } else if (ev.event == "messageStop") {
    const std::string reason(finish_reason_from_stop_reason(str(p, "stopReason")));
    emit(json::object(), reason.c_str(), out);
  } else if (ev.event == "metadata") {
    if (const auto* u = p.if_contains("usage")) usage_ = usage_from_converse(*u);
    finished_ = true;
    if (include_usage_ && usage_.reported) {
      json::object chunk{{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", model_},
                         {"choices", json::array()}, {"usage", usage_to_openai(usage_)}};
      out.push_back(json::serialize(chunk));
    }
  }
}

}  // namespace tollgate::providers::bedrock
