#include "api/sinks.hpp"
#include "core/json_parse.hpp"

#include <algorithm>

#include <boost/beast/core/string.hpp>
#include <boost/json.hpp>

#include "api/errors.hpp"
#include "http/sse.hpp"

namespace tollgate::api {
namespace net = boost::asio;
namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

/// A response header value as it may go on the wire: one line of visible ASCII (CR, LF and other
/// controls become spaces, so nothing a request or upstream put in a value can start a header
/// of its own), at most 8 KiB (Beast refuses larger fields). A value already so is returned as
/// it is; otherwise the safe copy is made in `scratch`.
std::string_view header_value(std::string_view v, std::string& scratch) {
  constexpr std::size_t kMax = 8192;
  const auto unsafe = [](char c) { return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f; };
  if (v.size() <= kMax && std::none_of(v.begin(), v.end(), unsafe)) return v;
  scratch.assign(v.substr(0, kMax));
  for (auto& c : scratch)
    if (unsafe(c)) c = ' ';
  if (v.size() > kMax) scratch.replace(kMax - 3, 3, "...");
  return scratch;
}

/// Sets each of `headers` on `fields`, in order (a name given twice keeps its last value).
void put_headers(bhttp::fields& fields, const pipeline::Headers& headers) {
  std::string scratch;
  for (const auto& [name, value] : headers) fields.set(name, header_value(value, scratch));
}

}  // namespace

http::Response json_response(int status, std::string body, const pipeline::Headers& headers) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  put_headers(res, headers);
  res.body() = std::move(body);
  return res;
}

std::optional<std::vector<http::FieldView>> json_response_fields(const pipeline::Headers& headers,
                                                                 std::vector<std::string>& safe) {
  namespace beast = boost::beast;
  const auto named = [&](std::string_view n) {
    return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return beast::iequals(h.first, n); });
  };
  if (named("connection") || named("content-length") || named("transfer-encoding")) return std::nullopt;
  std::vector<http::FieldView> fields;
  fields.reserve(headers.size() + 1);
  safe.clear();
  safe.reserve(headers.size());  // no reallocation: the views of its strings stay valid
  if (!named("content-type")) fields.emplace_back("Content-Type", "application/json");
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const std::string_view name = headers[i].first;
    // As set(): a name given again later is written once, with its last value, in that place.
    if (std::any_of(headers.begin() + static_cast<std::ptrdiff_t>(i) + 1, headers.end(),
                    [&](const auto& h) { return h.first.size() == name.size() && beast::iequals(h.first, name); }))
      continue;
    std::string scratch;
    std::string_view value = header_value(headers[i].second, scratch);
    if (!scratch.empty()) value = safe.emplace_back(std::move(scratch));  // the view was of scratch
    // Beast's fields drop a value's leading and trailing spaces and tabs (RFC 9110 §5.5 OWS).
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    fields.emplace_back(name, value);
  }
  return fields;
}

net::awaitable<bool> send_json_response(http::ResponseWriter& w, int status, std::string body,
                                        const pipeline::Headers& headers) {
  std::vector<std::string> safe;
  auto fields = json_response_fields(headers, safe);
  if (!fields || status < 200 || status == 204 || status == 304)
    co_return co_await w.send(json_response(status, std::move(body), headers));
  co_return co_await w.send_fields(static_cast<unsigned>(status), *fields, std::move(body));
}

net::awaitable<bool> OpenAiSink::send_completion(const json::object& completion, std::string raw,
                                                 const pipeline::Headers& headers) {
  if (raw.empty()) raw = json::serialize(completion);
  co_return co_await send_json_response(w_, 200, std::move(raw), headers);
}

net::awaitable<bool> OpenAiSink::send_error(const core::Error& e, const pipeline::Headers& headers) {
  co_return co_await send_json_response(w_, e.status, openai_error_json(e), headers);
}

net::awaitable<bool> OpenAiSink::send_json(int status, std::string body, const pipeline::Headers& headers) {
  co_return co_await send_json_response(w_, status, std::move(body), headers);
}

net::awaitable<bool> OpenAiSink::begin_stream(const pipeline::Headers& headers) {
  bhttp::response<bhttp::empty_body> head{bhttp::status::ok, 11};
  head.set(bhttp::field::content_type, "text/event-stream");
  head.set(bhttp::field::cache_control, "no-cache");
  head.set("x-accel-buffering", "no");
  put_headers(head, headers);
  co_return co_await w_.begin_stream(std::move(head));
}

net::awaitable<bool> OpenAiSink::stream_chunks(const std::vector<std::string>& chunks, const providers::Usage&) {
  std::string out;
  std::size_t n = 0;
  for (const auto& c : chunks) n += c.size() + 8;
  out.reserve(n);
  for (const auto& c : chunks) {
    out += "data: ";
    out += c;
    out += "\n\n";
  }
  co_return co_await w_.write_chunk(out);
}

net::awaitable<bool> OpenAiSink::end_stream(const std::optional<core::Error>& error) {
  std::string tail;
  if (error) {
    core::Error e = *error;
    e.origin = core::ErrorOrigin::gateway;  // never relay a raw body inside a stream
    tail = http::format_sse(openai_error_json(e));
  } else {
    tail = "data: [DONE]\n\n";
  }
  if (!co_await w_.write_chunk(tail)) co_return false;
  co_return co_await w_.end_stream(trailers_);
}

void OpenAiSink::on_client_gone(std::function<void()> fn) {
  if (!fn && !watching_) return;
  watching_ = true;
  w_.on_client_gone(std::move(fn));
}

// ---------------------------------------------------------------------------------------------

net::awaitable<bool> AnthropicSink::send_completion(const json::object& completion, std::string raw,
                                                    const pipeline::Headers& headers) {
  if (const auto* t = completion.if_contains("type"); t && t->is_string() && t->get_string() == "message") {
    // A native answer (an Anthropic deployment): relayed as Anthropic wrote it.
    if (raw.empty()) raw = json::serialize(completion);
    co_return co_await send_json_response(w_, 200, std::move(raw), headers);
  }
  auto msg = providers::anthropic::chat_response_to_messages(completion, model_);
  co_return co_await send_json_response(w_, 200, json::serialize(msg), headers);
}

net::awaitable<bool> AnthropicSink::send_error(const core::Error& e, const pipeline::Headers& headers) {
  co_return co_await send_json_response(w_, e.status, anthropic_error_json(e), headers);
}

net::awaitable<bool> AnthropicSink::stream_chunks(const std::vector<std::string>& chunks,
                                                  const providers::Usage& usage) {
  conv_.note_usage(usage);
  std::vector<providers::anthropic::AnthropicSseEvent> events;
  std::string out;
  for (const auto& c : chunks) {
    boost::system::error_code ec;
    auto v = json::parse(c, ec);  // a native event is relayed as it came, so any JSON will do
    if (ec || !v.is_object()) continue;
    const auto& o = v.as_object();
    if (const auto* type = o.if_contains("type"); type && type->is_string() && !o.contains("choices")) {
      // A native event of an Anthropic deployment: relayed unchanged, named by its type.
      native_ = true;
      http::append_sse_event(out, std::string_view(type->get_string()), c);
      continue;
    }
    if (core::has_non_finite(v)) continue;  // translated means written back: it would read `Infinity`
    conv_.on_chunk(o, events);
  }
  for (const auto& [ev, data] : events) http::append_sse_event(out, ev, data);
  co_return co_await w_.write_chunk(out);
}

net::awaitable<bool> AnthropicSink::end_stream(const std::optional<core::Error>& error) {
  std::string out;
  if (error) {
    core::Error e = *error;
    e.origin = core::ErrorOrigin::gateway;
    http::append_sse_event(out, "error", anthropic_error_json(e));
  } else if (!native_) {  // a native stream's own message_stop was relayed
    std::vector<providers::anthropic::AnthropicSseEvent> events;
    conv_.finish(events);
    for (const auto& [ev, data] : events) http::append_sse_event(out, ev, data);
  }
  if (!co_await w_.write_chunk(out)) co_return false;
  co_return co_await w_.end_stream(trailers_);
}

}  // namespace tollgate::api
