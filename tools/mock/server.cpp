// Connection handling, routing, behaviour execution (latency, faults, streaming) and control API.
// Request facts and the answer's numbers are built in request.cpp; this file does the I/O.
#include "server.hpp"

#include "mock.hpp"
#include "operations.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/url/pct_string_view.hpp>

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <sstream>

namespace tollgate::mock {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
using Request = http::request<http::string_body>;

namespace {

constexpr std::size_t kBodyLimit = 64ull * 1024 * 1024;
constexpr std::size_t kHeaderLimit = 64 * 1024;
constexpr std::size_t kOversizedPadding = 64ull * 1024 * 1024;

constexpr auto tuple_awaitable = asio::as_tuple(use_awaitable);

// ---------------------------------------------------------------- socket helpers

enum class PeerState { open, closed, data };

PeerState peek_peer(tcp::socket& s) {
  char c = 0;
  ssize_t r = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r == 0) return PeerState::closed;
  if (r < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return PeerState::open;
    return PeerState::closed;
  }
  return PeerState::data;
}

/// Sleeps `d` while watching the socket; true if the peer closed meanwhile.
awaitable<bool> sleep_watch(tcp::socket& s, std::chrono::microseconds d) {
  using namespace asio::experimental::awaitable_operators;
  if (d.count() <= 0) co_return false;
  asio::steady_timer timer(s.get_executor(), d);
  auto result = co_await (timer.async_wait(tuple_awaitable) ||
                          s.async_wait(tcp::socket::wait_read, tuple_awaitable));
  if (result.index() == 0) co_return false;
  auto [ec] = std::get<1>(result);
  if (ec) co_return true;
  PeerState st = peek_peer(s);
  if (st == PeerState::closed) co_return true;
  // Readable but not closed (pipelined bytes or spurious): finish the wait without watching.
  auto [ec2] = co_await timer.async_wait(tuple_awaitable);
  (void)ec2;
  co_return false;
}

/// Waits until the peer closes, discarding anything it sends.
awaitable<void> wait_peer_close(tcp::socket& s) {
  std::array<char, 4096> scratch{};
  for (;;) {
    auto [ec] = co_await s.async_wait(tcp::socket::wait_read, tuple_awaitable);
    if (ec) co_return;
    ssize_t r = ::recv(s.native_handle(), scratch.data(), scratch.size(), MSG_DONTWAIT);
    if (r == 0) co_return;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) co_return;
  }
}

awaitable<bool> write_all(tcp::socket& s, std::string_view a, std::string_view b = {}) {
  std::array<asio::const_buffer, 2> bufs{asio::buffer(a.data(), a.size()),
                                         asio::buffer(b.data(), b.size())};
  auto [ec, n] = co_await asio::async_write(s, bufs, tuple_awaitable);
  (void)n;
  co_return !ec;
}

awaitable<bool> write_chunk(tcp::socket& s, std::string_view data) {
  if (data.empty()) co_return true;
  char size_line[32];
  int len = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  std::array<asio::const_buffer, 3> bufs{asio::buffer(size_line, static_cast<std::size_t>(len)),
                                         asio::buffer(data.data(), data.size()),
                                         asio::buffer("\r\n", 2)};
  auto [ec, n] = co_await asio::async_write(s, bufs, tuple_awaitable);
  (void)n;
  co_return !ec;
}

void close_socket(tcp::socket& s) {
  boost::system::error_code ec;
  s.shutdown(tcp::socket::shutdown_both, ec);
  s.close(ec);
}

void reset_socket(tcp::socket& s) {
  boost::system::error_code ec;
  s.set_option(asio::socket_base::linger(true, 0), ec);
  s.close(ec);
}

std::string head(int status, std::string_view content_type, std::string_view extra,
                 std::optional<std::size_t> content_length, bool keep) {
  std::string h;
  h.reserve(256 + extra.size());
  h += "HTTP/1.1 ";
  h += std::to_string(status);
  h += ' ';
  h += reason_phrase(status);
  h += "\r\ncontent-type: ";
  h += content_type;
  h += "\r\n";
  h += extra;
  if (content_length) {
    h += "content-length: ";
    h += std::to_string(*content_length);
    h += "\r\n";
  } else {
    h += "transfer-encoding: chunked\r\n";
  }
  h += keep ? "connection: keep-alive\r\n\r\n" : "connection: close\r\n\r\n";
  return h;
}

awaitable<bool> send_reply(tcp::socket& s, const Reply& r, bool keep) {
  std::string h = head(r.status, r.content_type, r.headers, r.body.size(), keep);
  co_return co_await write_all(s, h, r.body);
}

Reply json_reply(int status, std::string body, std::string headers = {}) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

Reply control_error(int status, std::string_view message) {
  return json_reply(status, R"({"error":{"message":)" + json_quote(message) +
                                R"(,"type":"invalid_request_error","param":null,"code":null}})");
}

// ---------------------------------------------------------------- the chat endpoints

// One chat request being answered: what it bills, and how it ends in the statistics.
struct Call {
  std::string model;
  Completion c;
  Bill meta;  ///< model, family, ids, tier and media of the bill; counts filled at the end
  bool bill_on_cancel = false;

  void end(Outcome o) const { stats_request_end(model, o, nullptr); }
  /// Ends billing the prompt side and `visible` text tokens per choice (README "GET /mock/stats").
  void end(Outcome o, std::int64_t visible) const {
    Bill b = meta;
    b.counts = c.counts(visible);
    stats_request_end(model, o, &b);
  }
  /// The client went away: nothing billed, or the whole answer with bill_on_cancel.
  void end_cancelled() const {
    if (bill_on_cancel)
      end(Outcome::cancelled, c.tokens);
    else
      end(Outcome::cancelled);
  }
};

std::optional<std::string> client_call_id(const Request& req) {
  for (auto name : {"x-litellm-call-id", "x-request-id"}) {
    if (auto it = req.find(name); it != req.end()) return std::string(it->value());
  }
  return std::nullopt;
}

std::chrono::microseconds token_interval(const Behavior& b) {
  double tps = b.tokens_per_second.value_or(0);
  if (tps <= 0) return std::chrono::microseconds(0);
  return std::chrono::microseconds(
      static_cast<std::int64_t>(std::min(1e6 / tps, static_cast<double>(kMaxDelayMs) * 1000)));
}

// A non-streaming answer. Faults garbage, truncate and oversized bill the whole completion: the
// provider generated it before the transport garbled it.
awaitable<bool> answer_whole(tcp::socket& s, const Api& api, const Call& call, const Behavior& b,
                             std::string_view rid, bool keep) {
  const Completion& c = call.c;
  const std::string fault = b.fault.value_or("");
  if (fault == "garbage") {
    Reply r = json_reply(200, "<!DOCTYPE html>{\"id\": chatcmpl-garbage, not json at all",
                         api.base_headers(rid));
    bool ok = co_await send_reply(s, r, keep);
    call.end(ok ? Outcome::failed : Outcome::cancelled, c.tokens);
    co_return ok && keep;
  }
  // Generation time at the scripted pace, before the headers, as a real provider would.
  auto interval = token_interval(b);
  if (interval.count() > 0 && c.tokens > 1) {
    if (co_await sleep_watch(s, interval * (c.tokens - 1))) {
      call.end_cancelled();
      co_return false;
    }
  }
  std::string text = api.body(c);
  std::string extra = api.success_headers(c, rid);
  if (fault == "truncate") {
    std::string h = head(200, "application/json", extra, text.size(), keep);
    bool ok = co_await write_all(s, h, std::string_view(text).substr(0, text.size() / 2));
    close_socket(s);
    call.end(ok ? Outcome::failed : Outcome::cancelled, c.tokens);
    co_return false;
  }
  if (fault == "oversized") {
    static const std::string pad(1024 * 1024, ' ');
    std::string h = head(200, "application/json", extra, text.size() + kOversizedPadding, keep);
    std::string_view tv(text);
    bool ok = co_await write_all(s, h, tv.substr(0, tv.size() - 1));
    for (std::size_t sent = 0; ok && sent < kOversizedPadding; sent += pad.size()) ok = co_await write_all(s, pad);
    if (ok) ok = co_await write_all(s, tv.substr(tv.size() - 1));
    call.end(ok ? Outcome::succeeded : Outcome::cancelled, c.tokens);
    co_return ok && keep;
  }
  if (fault == "conflicting_framing") {
    // Content-Length and chunked framing at once (RFC 9112 §6.3: a desync vector): the body as
    // one chunk. The answer was generated: billed in full.
    std::string h = head(200, "application/json", extra, text.size(), keep);
    h.insert(h.size() - 2, "transfer-encoding: chunked\r\n");
    std::ostringstream chunked;
    chunked << std::hex << text.size() << "\r\n" << text << "\r\n0\r\n\r\n";
    const std::string body = chunked.str();
    bool ok = co_await write_all(s, h, body);
    close_socket(s);
    call.end(ok ? Outcome::failed : Outcome::cancelled, c.tokens);
    co_return false;
  }
  std::string h = head(200, "application/json", extra, text.size(), keep);  // the answer's own length
  if (fault == "extra_bytes") {
    // A whole, correct answer followed in the same write by bytes nobody asked for (a second,
    // unsolicited response): a client that pooled this connection would read them as the answer
    // to its next request.
    static constexpr std::string_view unsolicited =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
    text += unsolicited;
  }
  bool ok = co_await write_all(s, h, text);
  if (ok)
    call.end(Outcome::succeeded, c.tokens);
  else
    call.end_cancelled();
  co_return ok && keep;
}

// A streaming answer. It bills the prompt plus the text tokens written (all of them once the
// last token event is out), the stream faults included.
awaitable<bool> answer_stream(tcp::socket& s, const Api& api, const Call& call, const Behavior& b,
                              std::string_view rid, bool keep) {
  const Completion& c = call.c;
  const std::string fault = b.fault.value_or("");
  std::string extra = api.success_headers(c, rid) + "cache-control: no-cache\r\n";
  std::string h = head(200, api.stream_content_type(), extra, std::nullopt, keep);
  if (!co_await write_all(s, h)) {
    call.end_cancelled();
    co_return false;
  }
  std::int64_t sent = 0;
  auto cancelled = [&] {
    if (call.bill_on_cancel)
      call.end(Outcome::cancelled, c.tokens);
    else
      call.end(Outcome::cancelled, sent);
  };
  if (!co_await write_chunk(s, api.stream_open(c))) {
    cancelled();
    co_return false;
  }
  // truncate and stall stop after the given number of tokens (default: half of them).
  auto stop_after = [&](const std::optional<std::int64_t>& k) {
    std::int64_t n = k.value_or(c.tokens / 2);
    return n < c.tokens ? n : c.tokens;
  };
  std::int64_t to_send = c.tokens;
  if (fault == "truncate") to_send = stop_after(b.truncate_after_tokens);
  if (fault == "stall") to_send = stop_after(b.stall_after_tokens);
  std::int64_t malformed_at = fault == "malformed_event" ? c.tokens / 2 : -1;
  auto interval = token_interval(b);
  for (std::int64_t i = 0; i < to_send; ++i) {
    if (i == 0 && b.first_token_ms.value_or(0) > 0 &&
        co_await sleep_watch(s, std::chrono::milliseconds(*b.first_token_ms))) {
      cancelled();
      co_return false;
    }
    if (i > 0 && interval.count() > 0 && co_await sleep_watch(s, interval)) {
      cancelled();
      co_return false;
    }
    bool ok = i != malformed_at || co_await write_chunk(s, api.stream_malformed());
    std::string event = api.stream_token(c, i);
    if (ok && c.has_quirk("split_utf8")) {
      // The event leaves in two writes cut inside its first multibyte character, as a server
      // flushing a partial UTF-8 sequence would; the pause keeps them in separate reads.
      std::size_t cut = std::string::npos;
      for (std::size_t k = 0; k < event.size() && cut == std::string::npos; ++k)
        if (static_cast<unsigned char>(event[k]) >= 0xC0) cut = k;  // a multibyte lead byte
      if (cut != std::string::npos) {
        ok = co_await write_chunk(s, std::string_view(event).substr(0, cut + 1));
        if (ok && co_await sleep_watch(s, std::chrono::milliseconds(5))) ok = false;
        event.erase(0, cut + 1);
      }
    }
    if (!ok || !co_await write_chunk(s, event)) {
      cancelled();
      co_return false;
    }
    sent = i + 1;
  }
  if (fault == "truncate") {
    close_socket(s);
    call.end(Outcome::failed, sent);
    co_return false;
  }
  if (fault == "stall") {
    // Nothing more is sent; the provider stalled, so only what was generated is billed.
    co_await wait_peer_close(s);
    call.end(Outcome::cancelled, sent);
    co_return false;
  }
  std::string tail = api.stream_finish(c);
  if (malformed_at == 0 && c.tokens == 0) tail = api.stream_malformed() + tail;
  if (fault == "truncate_before_usage") {
    bool ok = co_await write_chunk(s, tail);
    close_socket(s);
    call.end(ok ? Outcome::failed : Outcome::cancelled, sent);
    co_return false;
  }
  tail += api.stream_usage(c);
  if (fault != "no_done") tail += api.stream_done(c);
  bool ok = co_await write_chunk(s, tail);
  if (ok) ok = co_await write_all(s, "0\r\n\r\n");
  call.end(ok ? Outcome::succeeded : Outcome::cancelled, sent);
  co_return ok && keep;
}

awaitable<bool> handle_chat(tcp::socket& s, Request& req, const Api& family, bool anthropic,
                            std::string deployment, const ServerConfig& cfg, bool keep,
                            Operation op = Operation::chat, EmbedWire wire = EmbedWire::openai) {
  // A non-chat operation answers through its own per-request wire format.
  std::unique_ptr<OperationApi> operation =
      op == Operation::completions ? text_completion_api()
      : is_embeddings(op)          ? embeddings_api(op, wire, wire == EmbedWire::openai ? nullptr : &family)
                                   : nullptr;
  const Api& api = operation ? *operation : family;
  std::string rid = api.new_request_id();
  ErrorSpec invalid;
  invalid.name = "invalid_request";
  invalid.request_id = rid;

  boost::system::error_code ec;
  json::value parsed = json::parse(req.body(), ec);
  if (ec || !parsed.is_object()) {
    stats_request_begin(nullptr, false);
    invalid.message = ec ? "We could not parse the JSON body of your request: " + ec.message() +
                               ". The API expects a JSON payload."
                         : std::string("The request body must be a JSON object.");
    Reply r = api.error(invalid);
    co_return co_await send_reply(s, r, keep) && keep;
  }
  const bool responses = &api == &responses_api();
  // The Responses API is measured through its chat-shaped view (same counting, same behaviours);
  // other families may read their native body as a chat one (Api::request_view).
  const std::optional<json::object> view =
      responses ? std::optional<json::object>(responses_as_chat(parsed.get_object())) : api.request_view(parsed.get_object());
  const json::object& body = view ? *view : parsed.get_object();

  std::string full_model;
  if (auto* m = body.if_contains("model"); m && m->is_string()) full_model = m->get_string();
  if (full_model.empty()) full_model = deployment;
  if (full_model.empty()) {
    stats_request_begin(nullptr, false);
    invalid.message = anthropic ? "model: Field required" : "you must provide a model parameter";
    Reply r = api.error(invalid);
    co_return co_await send_reply(s, r, keep) && keep;
  }
  Call call;
  call.model = full_model;
  std::string directives;
  if (auto q = full_model.find('?'); q != std::string::npos) {
    call.model = full_model.substr(0, q);
    directives = full_model.substr(q + 1);
  }
  const std::string& model = call.model;
  record_request(req.target().substr(0, req.target().find('?')), model, req.body());
  bool stream = false;
  if (auto* st = body.if_contains("stream"); st && st->is_bool()) stream = st->get_bool();
  if (is_embeddings(op)) stream = false;  // the endpoint has no stream mode
  stats_request_begin(&model, stream);
  {
    auto header = [&req](const char* name) {
      auto it = req.find(name);
      return it == req.end() ? std::string() : std::string(it->value());
    };
    stats_note_trace(model, header("traceparent"), header("tracestate"));
  }
  invalid.model = model;

  auto reject = [&](std::string message) {
    invalid.message = std::move(message);
    call.end(Outcome::failed);
    return api.error(invalid);
  };

  // Behaviour, lowest priority first: default, model directives, script, header.
  Behavior b;
  b.latency_ms = cfg.default_latency_ms;
  std::string err;
  if (!directives.empty()) {
    Behavior d;
    if (!parse_behavior_query(directives, d, err)) {
      Reply r = reject("tollgate-mock: " + err);
      co_return co_await send_reply(s, r, keep) && keep;
    }
    b = merge_behavior(b, d);
  }
  if (auto sb = script_next(model)) b = merge_behavior(b, *sb);
  if (auto hv = req.find("x-mock-behavior"); hv != req.end()) {
    boost::system::error_code hec;
    json::value hj = json::parse(hv->value(), hec);
    Behavior hb;
    if (hec) err = "x-mock-behavior is not valid JSON";
    if (hec || !parse_behavior(hj, hb, err)) {
      Reply r = reject("tollgate-mock: " + err);
      co_return co_await send_reply(s, r, keep) && keep;
    }
    b = merge_behavior(b, hb);
  }

  Completion& c = call.c;
  c.model = model;
  const bool built = operation ? operation->build(body, b, c, err) : build_completion(body, anthropic, b, c, err);
  if (!built) {
    Reply r = reject(std::move(err));
    co_return co_await send_reply(s, r, keep) && keep;
  }
  // Families that answer a tool request with a call (Ollama, Cohere) name it from the request;
  // else the behaviour's tool_call (build_completion) stands.
  if (auto called = api.tool_to_call(body); !called.empty()) c.tool_name = std::move(called);
  c.id = api.new_completion_id();
  c.created = unix_now();
  c.model = model;
  // Tool answers and server quirks (README "Tool calls and quirks"): OpenAI family only.
  if (!anthropic) {
    c.quirks = b.quirks.value_or(std::vector<std::string>{});
    if (b.tool_calls) make_tool_answer(c, static_cast<int>(*b.tool_calls));
    if (b.block_reason) {  // blocked before generation: nothing generated, the prompt billed
      c.block_reason = *b.block_reason;
      c.tokens = c.reasoning_tokens = 0;
    }
  }
  call.meta.model = model;
  call.meta.anthropic = anthropic;
  call.meta.family = std::string(api.family());
  call.meta.stream = stream;
  call.meta.service_tier = c.service_tier;
  call.meta.request_id = rid;
  call.meta.response_id = c.id;
  call.meta.client_call_id = client_call_id(req);
  call.meta.image_input_tokens = c.image_input_tokens;
  call.meta.pdf_pages = c.pdf_pages;
  call.meta.pdf_input_tokens = c.pdf_input_tokens;

  // ---- execute the behaviour
  const std::string fault = b.fault.value_or("");
  bool error_reply = b.error || (b.status && *b.status >= 400);
  bool fails = error_reply || fault == "reset" || fault == "empty";
  // bill_on_cancel stands for a provider that keeps generating: only when an answer is coming,
  // and not for a stall (generation stopped) or a hang (never started).
  call.bill_on_cancel = b.bill_on_cancel.value_or(false) && !fails && fault != "stall" && fault != "hang";
  if (fault == "hang") {
    co_await wait_peer_close(s);  // nothing generated: nothing billed
    call.end(Outcome::cancelled);
    co_return false;
  }
  std::int64_t latency = b.latency_ms.value_or(0);
  if (latency > 0 && co_await sleep_watch(s, std::chrono::milliseconds(latency))) {
    call.end_cancelled();
    co_return false;
  }
  if (fault == "reset") {
    reset_socket(s);
    call.end(Outcome::failed);
    co_return false;
  }
  if (fault == "empty") {
    close_socket(s);
    call.end(Outcome::failed);
    co_return false;
  }
  if (error_reply) {
    ErrorSpec e;
    e.name = b.error.value_or("");
    e.status = b.status.value_or(0);
    e.model = model;
    e.prompt_tokens = c.prompt_tokens;
    e.retry_after = b.retry_after;
    e.retry_after_ms = b.retry_after_ms;
    e.request_id = rid;
    Reply r = api.error(e);
    bool ok = co_await send_reply(s, r, keep);
    call.end(ok ? Outcome::failed : Outcome::cancelled);
    co_return ok && keep;
  }
  if (stream && fault != "garbage") co_return co_await answer_stream(s, api, call, b, rid, keep);
  co_return co_await answer_whole(s, api, call, b, rid, keep);
}

// ---------------------------------------------------------------- control API

Reply handle_script(const Request& req) {
  boost::system::error_code ec;
  json::value v = json::parse(req.body(), ec);
  if (ec || !v.is_object()) return control_error(400, "body must be a JSON object");
  const auto& o = v.get_object();
  auto* model = o.if_contains("model");
  if (!model || !model->is_string() || model->get_string().empty())
    return control_error(400, "'model' (non-empty string) is required");
  auto* list = o.if_contains("behaviors");
  if (!list || !list->is_array()) return control_error(400, "'behaviors' (array) is required");
  std::vector<Behavior> queue;
  for (const auto& item : list->get_array()) {
    Behavior b;
    std::string err;
    if (!parse_behavior(item, b, err))
      return control_error(400, "behaviors[" + std::to_string(queue.size()) + "]: " + err);
    queue.push_back(std::move(b));
  }
  std::string name(model->get_string());
  if (auto q = name.find('?'); q != std::string::npos) name.resize(q);
  std::size_t count = queue.size();
  if (count) stats_note_model(name);
  script_set(name, std::move(queue));
  return json_reply(200, R"({"ok":true,"model":)" + json_quote(name) +
                             R"(,"queued":)" + std::to_string(count) + "}");
}

// ---------------------------------------------------------------- routing

enum class Route {
  none, openai, azure, anthropic, responses, stored_response, google, token, token_stats,
  bedrock, bedrock_stream, bedrock_invoke, sagemaker, sagemaker_stream, ollama_chat, ollama_generate, cohere,
  models, stats, reset, script, health, requests
};

/// `/endpoints/{EndpointName}/invocations[-response-stream]` (SageMaker runtime).
Route sagemaker_route(std::string_view path, std::string& endpoint) {
  constexpr std::string_view prefix = "/endpoints/";
  if (!path.starts_with(prefix)) return Route::none;
  const auto slash = path.find('/', prefix.size());
  if (slash == std::string_view::npos || slash == prefix.size()) return Route::none;
  const auto op = path.substr(slash + 1);
  if (op != "invocations" && op != "invocations-response-stream") return Route::none;
  auto name = boost::urls::make_pct_string_view(path.substr(prefix.size(), slash - prefix.size()));
  if (!name) return Route::none;
  endpoint = name->decode();
  return op == "invocations" ? Route::sagemaker : Route::sagemaker_stream;
}

/// `/model/{modelId}/converse[-stream]` and `/model/{modelId}/invoke` (Bedrock runtime; invoke:
/// the embedding models): the model id, percent-decoded.
Route bedrock_route(std::string_view path, std::string& model) {
  constexpr std::string_view prefix = "/model/";
  if (!path.starts_with(prefix)) return Route::none;
  const auto slash = path.rfind('/');
  if (slash <= prefix.size()) return Route::none;
  const auto op = path.substr(slash + 1);
  if (op != "converse" && op != "converse-stream" && op != "invoke") return Route::none;
  auto id = boost::urls::make_pct_string_view(path.substr(prefix.size(), slash - prefix.size()));
  if (!id) return Route::none;
  model = id->decode();
  return op == "converse" ? Route::bedrock : op == "invoke" ? Route::bedrock_invoke : Route::bedrock_stream;
}


// Where a Responses API path ends in a response id: `/v1/responses/{id}` and Azure's
// `/openai/responses/{id}`, `/openai/v1/responses/{id}`.
std::string_view stored_response_id(std::string_view path) {
  for (std::string_view prefix : {"/v1/responses/", "/openai/responses/", "/openai/v1/responses/"}) {
    if (!path.starts_with(prefix)) continue;
    auto id = path.substr(prefix.size());
    if (!id.empty() && id.find('/') == std::string_view::npos) return id;
  }
  return {};
}

Route route_of(std::string_view path, std::string& deployment, Operation& op) {
  op = Operation::chat;
  if (Route r = bedrock_route(path, deployment); r != Route::none) return r;
  if (Route r = sagemaker_route(path, deployment); r != Route::none) return r;
  if (path == "/v1/chat/completions" || path == "/chat/completions") return Route::openai;
  if (path == "/v1/completions" || path == "/completions") {
    op = Operation::completions;
    return Route::openai;
  }
  if (path == "/v1/embeddings" || path == "/embeddings") {
    op = Operation::embeddings;
    return Route::openai;
  }
  if (path == "/v1/messages") return Route::anthropic;
  if (path == "/v1/responses" || path == "/responses" || path == "/openai/responses" ||
      path == "/openai/v1/responses")
    return Route::responses;
  if (!stored_response_id(path).empty()) return Route::stored_response;
  if (path == "/mock/requests") return Route::requests;
  if (path == "/api/chat") return Route::ollama_chat;
  if (path == "/api/generate") return Route::ollama_generate;
  if (path == "/v2/chat") return Route::cohere;
  if (path == "/api/embed") {  // Ollama's and Cohere's embeddings endpoints (embeddings.cpp)
    op = Operation::embeddings;
    return Route::ollama_chat;
  }
  if (path == "/v2/embed") {
    op = Operation::embeddings;
    return Route::cohere;
  }
  if (path == "/v1/models" || path == "/models") return Route::models;
  if (path == "/mock/stats") return Route::stats;
  if (path == "/mock/reset") return Route::reset;
  if (path == "/mock/script") return Route::script;
  if (path == "/health" || path == "/mock/health") return Route::health;
  if (path == "/token") return Route::token;
  if (path == "/mock/google/tokens") return Route::token_stats;
  if (google_route(path)) return Route::google;
  constexpr std::string_view prefix = "/openai/deployments/";
  constexpr std::pair<std::string_view, Operation> kAzureOps[] = {{"/chat/completions", Operation::chat},
                                                                  {"/completions", Operation::completions},
                                                                  {"/embeddings", Operation::embeddings}};
  for (const auto& [suffix, which] : kAzureOps) {
    if (path.size() > prefix.size() + suffix.size() && path.starts_with(prefix) && path.ends_with(suffix)) {
      auto dep = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
      if (!dep.empty() && dep.find('/') == std::string_view::npos) {
        deployment = std::string(dep);
        op = which;
        return Route::azure;
      }
    }
  }
  return Route::none;
}

awaitable<bool> handle(tcp::socket& s, Request& req, const ServerConfig& cfg) {
  // A HEAD reply here carries a body, so the connection cannot be reused after it.
  bool keep = req.keep_alive() && req.method() != http::verb::head;
  std::string_view target = req.target();
  std::string_view path = target.substr(0, target.find('?'));
  std::string deployment;
  Operation op = Operation::chat;
  Route route = route_of(path, deployment, op);
  auto method = req.method();
  bool is_post = method == http::verb::post;
  bool is_get = method == http::verb::get;

  Reply r;
  switch (route) {
    case Route::none:
      r = json_reply(404, R"({"error":{"message":)" +
                              json_quote("Unknown request URL: " +
                                         std::string(req.method_string()) + " " +
                                         std::string(path) + ".") +
                              R"(,"type":"invalid_request_error","param":null,"code":"unknown_url"}})");
      break;
    case Route::stored_response: {
      // GET / DELETE of a response this mock created (OpenAI "Retrieve" / "Delete a model response").
      const std::string id(stored_response_id(path));
      if (!is_get && method != http::verb::delete_) {
        r = control_error(405, "Method Not Allowed");
        r.headers = "allow: GET, DELETE\r\n";
        break;
      }
      auto body = stored_response(id, method == http::verb::delete_);
      std::string rid = openai_api().new_request_id();
      if (!body) {
        r = json_reply(404, R"({"error":{"message":)" + json_quote("Response with id '" + id + "' not found.") +
                                R"(,"type":"invalid_request_error","param":null,"code":null}})");
      } else if (is_get) {
        r = json_reply(200, *body);
      } else {
        r = json_reply(200, R"({"id":)" + json_quote(id) + R"(,"object":"response","deleted":true})");
      }
      r.headers += openai_api().base_headers(rid);
      break;
    }
    case Route::openai:
    case Route::azure:
    case Route::responses:
    case Route::anthropic:
    case Route::ollama_chat:
    case Route::ollama_generate:
    case Route::cohere: {
      bool anthropic = route == Route::anthropic;
      // A non-chat operation's family: in handle_chat.
      const Api& api = anthropic                         ? anthropic_api()
                       : route == Route::responses       ? responses_api()
                       : route == Route::ollama_chat     ? ollama_chat_api()
                       : route == Route::ollama_generate ? ollama_generate_api()
                       : route == Route::cohere          ? cohere_api()
                                                         : openai_api();
      if (!is_post) {
        std::string rid = api.new_request_id();
        ErrorSpec e;
        e.status = 405;
        e.request_id = rid;
        e.message = "Method Not Allowed";
        r = api.error(e);
        r.headers += "allow: POST\r\n";
        break;
      }
      const EmbedWire wire = op != Operation::embeddings     ? EmbedWire::openai
                             : route == Route::ollama_chat ? EmbedWire::ollama
                             : route == Route::cohere      ? EmbedWire::cohere
                                                           : EmbedWire::openai;
      co_return co_await handle_chat(s, req, api, anthropic, deployment, cfg, keep, op, wire);
    }
    case Route::google: {
      auto gr = google_route(path);
      auto header = [&req](auto name) {
        auto it = req.find(name);
        return it == req.end() ? std::string_view() : std::string_view(it->value());
      };
      auto call = google_prepare(*gr, req.body(), header("x-goog-api-key"), header(http::field::authorization));
      if (!is_post || !call) {
        stats_request_begin(nullptr, false);
        r = call ? control_error(405, "Method Not Allowed") : call.error();
        break;
      }
      req.body() = std::move(call->chat_body);
      co_return co_await handle_chat(s, req, *call->api, false, gr->model, cfg, keep,
                                     gr->embed ? Operation::embeddings : Operation::chat, gr->embed.value_or(EmbedWire::openai));
    }
    case Route::token:
      r = is_post ? google_token(target.find('?') == std::string_view::npos ? std::string_view() : target.substr(target.find('?') + 1),
                                 req.body())
                  : control_error(405, "Method Not Allowed");
      break;
    case Route::token_stats:
      r = json_reply(200, google_token_stats());
      break;
    case Route::bedrock:
    case Route::bedrock_stream:
    case Route::bedrock_invoke: {
      const Api& api = bedrock_api();
      if (!is_post) {
        ErrorSpec e;
        e.status = 405;
        e.request_id = api.new_request_id();
        e.message = "Method Not Allowed";
        r = api.error(e);
        break;
      }
      auto header = [&req](const char* name) {
        auto it = req.find(name);
        return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
      };
      if (auto denied = aws_signature_error(header("authorization"), header("x-amz-date"))) {
        stats_request_begin(nullptr, false);
        r = *denied;
        break;
      }
      std::string body, err;
      Operation invoked = Operation::chat;
      const bool read = route == Route::bedrock_invoke
                            ? bedrock_invoke_to_embeddings(req.body(), deployment, body, invoked, err)
                            : converse_to_messages_body(req.body(), deployment, route == Route::bedrock_stream, body, err);
      if (!read) {
        stats_request_begin(nullptr, false);
        ErrorSpec e;
        e.name = "invalid_request";
        e.request_id = api.new_request_id();
        e.message = err;
        r = api.error(e);
        break;
      }
      req.body() = std::move(body);
      if (route == Route::bedrock_invoke) co_return co_await handle_chat(s, req, api, false, deployment, cfg, keep, invoked);
      co_return co_await handle_chat(s, req, api, true, deployment, cfg, keep);
    }
    case Route::sagemaker:
    case Route::sagemaker_stream: {
      const Api& errors = bedrock_api();
      if (!is_post) {
        ErrorSpec e;
        e.status = 405;
        e.request_id = errors.new_request_id();
        e.message = "Method Not Allowed";
        r = errors.error(e);
        break;
      }
      auto header = [&req](const char* name) {
        auto it = req.find(name);
        return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
      };
      if (auto denied = aws_signature_error(header("authorization"), header("x-amz-date"))) {
        stats_request_begin(nullptr, false);
        r = *denied;
        break;
      }
      std::string body, err;
      bool tgi = false;
      if (!sagemaker_to_chat_body(req.body(), deployment, route == Route::sagemaker_stream, body, tgi, err)) {
        stats_request_begin(nullptr, false);
        ErrorSpec e;
        e.name = "ValidationError";
        e.status = 400;
        e.request_id = errors.new_request_id();
        e.message = err;
        r = errors.error(e);
        break;
      }
      req.body() = std::move(body);
      co_return co_await handle_chat(s, req, tgi ? sagemaker_tgi_api() : sagemaker_chat_api(), false, deployment, cfg, keep);
    }
    case Route::models:
    case Route::stats:
    case Route::requests:
    case Route::health:
      if (!is_get) {
        r = control_error(405, "Method Not Allowed");
        r.headers = "allow: GET\r\n";
      } else if (route == Route::models) {
        r = json_reply(200, models_json());
      } else if (route == Route::stats) {
        r = json_reply(200, stats_json());
      } else if (route == Route::requests) {
        r = json_reply(200, recorded_requests_json());
      } else {
        r = json_reply(200, R"({"status":"ok"})");
      }
      break;
    case Route::reset:
    case Route::script:
      if (!is_post) {
        r = control_error(405, "Method Not Allowed");
        r.headers = "allow: POST\r\n";
      } else if (route == Route::reset) {
        stats_reset();
        script_reset();
        recorded_requests_reset();
        stored_responses_reset();
        google_reset();
        r = json_reply(200, R"({"ok":true})");
      } else {
        r = handle_script(req);
      }
      break;
  }
  co_return co_await send_reply(s, r, keep) && keep;
}

bool is_parse_error(const boost::system::error_code& ec) {
  return ec.category() == beast::http::make_error_code(http::error::bad_target).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

awaitable<void> session(tcp::socket s, ServerConfig cfg) {
  boost::system::error_code opt_ec;
  s.set_option(tcp::no_delay(true), opt_ec);
  beast::flat_buffer buf;
  for (;;) {
    std::optional<http::request_parser<http::string_body>> parser;
    parser.emplace();
    parser->header_limit(kHeaderLimit);
    parser->body_limit(kBodyLimit);
    auto [ec, n] = co_await http::async_read_header(s, buf, *parser, tuple_awaitable);
    (void)n;
    if (!ec && !parser->is_done()) {
      auto expect = parser->get()[http::field::expect];
      if (beast::iequals(expect, "100-continue")) {
        if (!co_await write_all(s, "HTTP/1.1 100 Continue\r\n\r\n")) break;
      }
      auto [ec2, n2] = co_await http::async_read(s, buf, *parser, tuple_awaitable);
      (void)n2;
      ec = ec2;
    }
    if (ec) {
      if (ec == http::error::body_limit || ec == http::error::header_limit) {
        Reply r = control_error(413, "Request too large");
        co_await send_reply(s, r, false);
      } else if (is_parse_error(ec)) {
        Reply r = control_error(400, "Malformed HTTP request");
        co_await send_reply(s, r, false);
      }
      break;
    }
    Request req = parser->release();
    bool keep = co_await handle(s, req, cfg);
    if (!keep || !s.is_open()) break;
  }
  close_socket(s);
}

}  // namespace

awaitable<void> accept_loop(tcp::acceptor& acceptor, ServerConfig cfg) {
  for (;;) {
    auto [ec, sock] = co_await acceptor.async_accept(tuple_awaitable);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // EMFILE and friends: back off briefly instead of spinning.
      asio::steady_timer t(acceptor.get_executor(), std::chrono::milliseconds(10));
      co_await t.async_wait(tuple_awaitable);
      continue;
    }
    auto ex = sock.get_executor();
    asio::co_spawn(ex, session(std::move(sock), cfg), [](std::exception_ptr) {});
  }
}

}  // namespace tollgate::mock
