#include "api/responses_sink.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "http/sse.hpp"
#include "providers/responses/translate.hpp"

namespace tollgate::api {
namespace net = boost::asio;
namespace json = boost::json;

namespace {

std::string events_text(const std::vector<providers::responses::ResponsesSseEvent>& events) {
  std::string out;
  for (const auto& [ev, data] : events) http::append_sse_event(out, ev, data);
  return out;
}

}  // namespace

net::awaitable<bool> ResponsesSink::send_completion(const json::object& completion, std::string raw,
                                                    const pipeline::Headers& headers) {
  if (const auto* o = completion.if_contains("object"); o && o->is_string() && o->get_string() == "response") {
    // A native answer (OpenAI / Azure): relayed as the upstream wrote it.
    if (raw.empty()) raw = json::serialize(completion);
    co_return co_await send_json_response(w_, 200, std::move(raw), headers);
  }
  auto response = providers::responses::chat_response_to_response(completion, echo_, model_);
  co_return co_await send_json_response(w_, 200, json::serialize(response), headers);
}

net::awaitable<bool> ResponsesSink::stream_chunks(const std::vector<std::string>& chunks, const providers::Usage&) {
  std::vector<providers::responses::ResponsesSseEvent> events;
  std::string out;
  for (const auto& c : chunks) {
    boost::system::error_code ec;
    auto v = json::parse(c, ec);  // a native event is relayed as it came, so any JSON will do
    if (ec || !v.is_object()) continue;
    const auto& o = v.as_object();
    const auto* type = o.if_contains("type");
    if (type && type->is_string() && !o.contains("choices")) {
      // A native event (its data unchanged, named by its type); only its place is kept.
      native_ = true;
      if (const auto* seq = o.if_contains("sequence_number"); seq && seq->is_int64()) last_seq_ = seq->get_int64();
      http::append_sse_event(out, std::string_view(type->get_string()), c);
      continue;
    }
    if (core::has_non_finite(v)) continue;  // translated means written back: it would read `Infinity`
    conv_.on_chunk(o, events);
  }
  out += events_text(events);
  co_return co_await w_.write_chunk(out);
}

net::awaitable<bool> ResponsesSink::end_stream(const std::optional<core::Error>& error) {
  std::vector<providers::responses::ResponsesSseEvent> events;
  if (native_) {
    // The upstream's own terminal event was relayed; a failure gets the API's `error` event.
    std::string out;
    if (error) {
      json::object ev{{"type", "error"},
                      {"sequence_number", last_seq_ + 1},
                      {"code", error->code.empty() ? error->type : error->code},
                      {"message", error->message},
                      {"param", nullptr}};
      http::append_sse_event(out, "error", json::serialize(ev));
    }
    if (!co_await w_.write_chunk(out)) co_return false;
    co_return co_await w_.end_stream();
  }
  if (error) {
    conv_.fail(error->code.empty() ? error->type : error->code, error->message, events);
  } else {
    conv_.finish(events);
  }
  if (!co_await w_.write_chunk(events_text(events))) co_return false;
  co_return co_await w_.end_stream();
}

}  // namespace tollgate::api
