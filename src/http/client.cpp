#include "http/client.hpp"

#include <algorithm>
#include <array>
#include <atomic>

#include <sys/socket.h>

#include <optional>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>

#include "core/string_hash.hpp"
#include "http/response_parser.hpp"
#include "http/wire_head.hpp"

namespace tollgate::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
namespace {
constexpr auto use_nothrow = net::as_tuple(net::use_awaitable);
thread_local UpstreamPool* tl_pool = nullptr;
}  // namespace

namespace {
std::expected<Target, std::string> parse_url_uncached(std::string_view url) {
  auto r = boost::urls::parse_uri(url);
  if (!r) return std::unexpected("invalid URL '" + std::string(url) + "': " + r.error().message());
  Target t;
  const auto scheme = r->scheme();
  if (scheme == "https") t.tls = true;
  else if (scheme != "http") return std::unexpected("unsupported URL scheme '" + std::string(scheme) + "' in " + std::string(url));
  t.host = std::string(r->host_name().empty() ? r->encoded_host() : r->host_name());
  if (r->host_type() == boost::urls::host_type::ipv6) t.host = std::string(r->encoded_host_address());
  if (t.host.empty()) return std::unexpected("URL has no host: " + std::string(url));
  t.port = r->has_port() ? std::string(r->port()) : (t.tls ? "443" : "80");
  t.path_and_query = std::string(r->encoded_path());
  if (t.path_and_query.empty()) t.path_and_query = "/";
  if (r->has_query()) t.path_and_query += "?" + std::string(r->encoded_query());
  return t;
}
}  // namespace

std::expected<Target, std::string> parse_url(std::string_view url) {
  // Each attempt builds its deployment's URL again: the parse is kept per thread, by the URL's
  // text, for the URLs seen last. A caller-chosen wildcard name can make many URLs, and long ones:
  // the memo holds at most kMaxKept of at most kMaxKeptBytes each (a longer URL is parsed each time).
  struct Memo {
    std::unordered_map<std::string, std::expected<Target, std::string>, core::StringHash, std::equal_to<>> parsed;
  };
  constexpr std::size_t kMaxKept = 256, kMaxKeptBytes = 512;
  if (url.size() > kMaxKeptBytes) return parse_url_uncached(url);
  thread_local Memo memo;
  if (auto it = memo.parsed.find(url); it != memo.parsed.end()) return it->second;
  auto t = parse_url_uncached(url);
  if (memo.parsed.size() >= kMaxKept) memo.parsed.clear();
  memo.parsed.emplace(std::string(url), t);
  return t;
}

// ---------------------------------------------------------------------------------------------

class Connection {
 public:
  using Plain = beast::tcp_stream;
  using Tls = beast::ssl_stream<beast::tcp_stream>;
  std::variant<Plain, Tls> stream;
  std::string key;
  beast::flat_buffer buffer;
  bool reused = false;

  Connection(Plain s, std::string k) : stream(std::in_place_type<Plain>, std::move(s)), key(std::move(k)) {}
  Connection(Tls s, std::string k) : stream(std::in_place_type<Tls>, std::move(s)), key(std::move(k)) {}

  beast::tcp_stream& lowest() {
    return std::visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); }, stream);
  }
  /// A pooled connection is stale if the peer closed it or sent something unasked.
  bool looks_alive() {
    char c;
    const auto n = ::recv(lowest().socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
};

namespace {

struct AtomicPoolCounters {
  std::atomic<std::uint64_t> opened{0}, reused{0}, connect_failed{0}, connect_wait_us{0};
  std::atomic<std::int64_t> idle{0};
};
AtomicPoolCounters g_pool;

}  // namespace

PoolCounters pool_counters() {
  PoolCounters c;
  c.opened = g_pool.opened.load(std::memory_order_relaxed);
  c.reused = g_pool.reused.load(std::memory_order_relaxed);
  c.connect_failed = g_pool.connect_failed.load(std::memory_order_relaxed);
  c.connect_wait_us = g_pool.connect_wait_us.load(std::memory_order_relaxed);
  c.idle = static_cast<std::uint64_t>(std::max<std::int64_t>(0, g_pool.idle.load(std::memory_order_relaxed)));
  return c;
}

UpstreamPool::UpstreamPool(net::io_context& ioc, ClientOptions options)
    : ioc_(ioc), options_(std::move(options)), tls_(net::ssl::context::tls_client) {
  if (options_.ca_file.empty()) tls_.set_default_verify_paths();
  else tls_.load_verify_file(options_.ca_file);
  tls_.set_verify_mode(options_.verify ? net::ssl::verify_peer : net::ssl::verify_none);
}

UpstreamPool::~UpstreamPool() {
  std::int64_t n = 0;
  for (const auto& [k, v] : idle_) n += static_cast<std::int64_t>(v.size());
  g_pool.idle.fetch_sub(n, std::memory_order_relaxed);
}
UpstreamPool* UpstreamPool::current() { return tl_pool; }
void UpstreamPool::install(UpstreamPool* pool) { tl_pool = pool; }

std::unique_ptr<Connection> UpstreamPool::take(const std::string& key) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return nullptr;
  auto& v = it->second;
  while (!v.empty()) {
    auto c = std::move(v.back());
    v.pop_back();
    g_pool.idle.fetch_sub(1, std::memory_order_relaxed);
    if (c->looks_alive()) {
      c->reused = true;
      g_pool.reused.fetch_add(1, std::memory_order_relaxed);
      return c;
    }
  }
  return nullptr;
}

void UpstreamPool::give_back(std::unique_ptr<Connection> c) {
  auto& v = idle_[c->key];
  if (v.size() >= options_.max_idle_per_upstream) return;
  c->buffer.clear();
  v.push_back(std::move(c));
  g_pool.idle.fetch_add(1, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------

/// The capacity an exchange's connection buffer has when its response head is read (bytes).
constexpr std::size_t kResponseReadAhead = 4096;

struct Exchange::State {
  UpstreamPool* pool = nullptr;
  std::unique_ptr<Connection> conn;
  std::optional<ResponseParser> parser;  // the body goes straight into the reader's string
  bool cancelled = false;
  bool failed = false;
};

Exchange::Exchange(std::unique_ptr<State> s) : s_(std::move(s)) {}
Exchange::~Exchange() = default;

namespace {

TransportError make_error(TransportError::Kind k, bool sent, std::string msg) {
  TransportError e;
  e.kind = k;
  e.sent = sent;
  e.message = std::move(msg);
  return e;
}

net::awaitable<std::expected<std::unique_ptr<Connection>, TransportError>> connect(UpstreamPool& pool,
                                                                                    const Target& t,
                                                                                    const std::string& key,
                                                                                    SteadyTime deadline) {
  using R = std::expected<std::unique_ptr<Connection>, TransportError>;
  auto exec = pool.io().get_executor();
  const auto connect_deadline = std::min(deadline, std::chrono::steady_clock::now() + pool.options().connect_timeout);
  tcp::resolver resolver(exec);
  auto [rec, results] = co_await resolver.async_resolve(t.host, t.port, use_nothrow);
  if (rec) co_return R(std::unexpect, make_error(TransportError::Kind::connect_failed, false,
                                                 "cannot resolve " + t.host + ": " + rec.message()));
  beast::tcp_stream tcp_stream(exec);
  tcp_stream.expires_at(connect_deadline);
  auto [cec, ep] = co_await tcp_stream.async_connect(results, use_nothrow);
  if (cec) {
    const auto kind = cec == beast::error::timeout ? TransportError::Kind::timeout : TransportError::Kind::connect_failed;
    co_return R(std::unexpect, make_error(kind, false, "cannot connect to " + t.host + ":" + t.port + ": " + cec.message()));
  }
  boost::system::error_code ignored;
  tcp_stream.socket().set_option(tcp::no_delay(true), ignored);
  if (!t.tls) co_return std::make_unique<Connection>(std::move(tcp_stream), key);

  Connection::Tls tls(std::move(tcp_stream), pool.tls());
  if (!SSL_set_tlsext_host_name(tls.native_handle(), t.host.c_str()))
    co_return R(std::unexpect, make_error(TransportError::Kind::connect_failed, false, "cannot set TLS SNI"));
  if (pool.options().verify) tls.set_verify_callback(net::ssl::host_name_verification(t.host));
  auto [hec] = co_await tls.async_handshake(net::ssl::stream_base::client, use_nothrow);
  if (hec)
    co_return R(std::unexpect, make_error(TransportError::Kind::connect_failed, false,
                                          "TLS handshake with " + t.host + " failed: " + hec.message()));
  co_return std::make_unique<Connection>(std::move(tls), key);
}

TransportError::Kind read_error_kind(const boost::system::error_code& ec, bool cancelled) {
  if (cancelled) return TransportError::Kind::cancelled;
  if (ec == beast::error::timeout) return TransportError::Kind::timeout;
  if (ec == net::error::eof || ec == net::error::connection_reset || ec == bhttp::error::end_of_stream ||
      ec == bhttp::error::partial_message || ec == net::ssl::error::stream_truncated || ec == net::error::broken_pipe)
    return TransportError::Kind::reset;
  if (ec == net::error::operation_aborted) return TransportError::Kind::cancelled;
  return TransportError::Kind::protocol_error;
}

}  // namespace

net::awaitable<std::expected<std::unique_ptr<Exchange>, TransportError>> Exchange::start(UpstreamPool& pool,
                                                                                       const OutgoingRequest& req,
                                                                                       SteadyTime deadline,
                                                                                       CancelToken* token) {
  using R = std::expected<std::unique_ptr<Exchange>, TransportError>;
  const auto cancelled = [&](bool sent) {
    return R(std::unexpect, make_error(TransportError::Kind::cancelled, sent, "cancelled"));
  };
  if (token && token->cancelled) co_return cancelled(false);
  const auto& t = req.target;
  const std::string key = (t.tls ? "https://" : "http://") + t.host + ":" + t.port;

  const auto verb = req.method == Method::get   ? bhttp::verb::get
                    : req.method == Method::del ? bhttp::verb::delete_
                                                : bhttp::verb::post;
  bhttp::request<bhttp::string_body> msg{verb, t.path_and_query, 11};
  msg.set(bhttp::field::host, (t.port == "443" || t.port == "80") ? t.host : t.host + ":" + t.port);
  if (verb == bhttp::verb::post) msg.set(bhttp::field::content_type, "application/json");
  msg.set(bhttp::field::user_agent, "tollgate");
  for (const auto& [k, v] : req.headers) msg.set(k, v);
  msg.keep_alive(true);
  msg.body() = req.body;
  msg.prepare_payload();  // a string body's length is known: Content-Length, never chunked
  const std::string head = wire_head(msg);
  const std::array<net::const_buffer, 2> wire{net::buffer(head), net::buffer(msg.body())};

  // A reused connection the peer closed in the meantime (take() already drops those it can see
  // closed) fails while the request is written: that request was not processed, so it is sent
  // once more on a fresh connection. Once the request is written, a reset is an unknown outcome
  // (the upstream may have read, processed and billed it): never re-sent here — the failure
  // policy decides, with a fresh reservation.
  for (int round = 0; round < 2; ++round) {
    auto state = std::make_unique<State>();
    state->pool = &pool;
    state->conn = round == 0 ? pool.take(key) : nullptr;
    if (!state->conn) {
      const auto t0 = std::chrono::steady_clock::now();
      auto c = co_await connect(pool, t, key, deadline);
      const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
      g_pool.connect_wait_us.fetch_add(static_cast<std::uint64_t>(waited.count()), std::memory_order_relaxed);
      if (!c) {
        g_pool.connect_failed.fetch_add(1, std::memory_order_relaxed);
        co_return R(std::unexpect, std::move(c.error()));
      }
      g_pool.opened.fetch_add(1, std::memory_order_relaxed);
      state->conn = std::move(*c);
    }
    auto& conn = *state->conn;
    if (token) {
      if (token->cancelled) co_return cancelled(false);
      token->hook = [&conn] { conn.lowest().cancel(); };
    }
    struct ClearHook {
      CancelToken* t;
      ~ClearHook() {
        if (t) t->hook = nullptr;
      }
    } clear_hook{token};
    conn.lowest().expires_at(deadline);
    auto write_op = std::visit([&wire](auto& s) { return net::async_write(s, wire, use_nothrow); }, conn.stream);
    auto [wec, wn] = co_await std::move(write_op);
    // Cancelled once the request was written: the upstream may process (and bill) it.
    if (token && token->cancelled) co_return cancelled(!wec);
    if (wec) {
      if (conn.reused && round == 0) continue;
      const auto kind = wec == beast::error::timeout ? TransportError::Kind::timeout : TransportError::Kind::write_failed;
      co_return R(std::unexpect, make_error(kind, false, "sending the request failed: " + wec.message()));
    }
    state->parser.emplace();
    state->parser->header_limit(64 * 1024);
    state->parser->body_limit(boost::none);
    // Beast reads as much as the buffer's free capacity, at least 512 bytes: room for a whole
    // short answer (head and body) makes it one read instead of one per 512 bytes.
    conn.buffer.reserve(kResponseReadAhead);
    auto read_op = std::visit(
        [&](auto& s) { return bhttp::async_read_header(s, conn.buffer, *state->parser, use_nothrow); }, conn.stream);
    auto [rec, rn_unused] = co_await std::move(read_op);
    (void)rn_unused;
    if (token && token->cancelled) co_return cancelled(true);
    if (rec) {
      const auto kind = read_error_kind(rec, false);
      co_return R(std::unexpect, make_error(kind, true, "reading the response head failed: " + rec.message()));
    }
    // A body of unknown length (a stream, chunked) may be read for long: it keeps only what it
    // holds unread, and reads its events as they come.
    if (!state->parser->content_length()) conn.buffer.shrink_to_fit();
    co_return std::unique_ptr<Exchange>(new Exchange(std::move(state)));
  }
  co_return R(std::unexpect, make_error(TransportError::Kind::reset, true, "connection closed by upstream"));
}

int Exchange::status() const { return s_->parser->status(); }
std::string_view Exchange::header(std::string_view name) const { return s_->parser->header(name); }
bool Exchange::done() const { return s_->parser->is_done(); }

net::awaitable<std::expected<std::size_t, TransportError>> Exchange::read_some(std::string& out, SteadyTime deadline) {
  using R = std::expected<std::size_t, TransportError>;
  auto& s = *s_;
  if (s.cancelled) co_return R(std::unexpect, make_error(TransportError::Kind::cancelled, true, "cancelled"));
  if (s.parser->is_done()) co_return 0;
  auto& conn = *s.conn;
  conn.lowest().expires_at(deadline);
  const std::size_t before = out.size();
  // The parser appends the body to `out` as it parses it; one read adds at most what the
  // connection's buffer had unread plus its free room (at most 64 KiB a read, Beast's bound).
  s.parser->body_to(&out);
  struct Unset {
    ResponseParser& p;
    ~Unset() { p.body_to(nullptr); }
  } unset{*s.parser};
  for (;;) {
    auto op = std::visit([&](auto& st) { return bhttp::async_read_some(st, conn.buffer, *s.parser, use_nothrow); },
                         conn.stream);
    auto [ec, n] = co_await std::move(op);
    (void)n;
    if (ec) {
      s.failed = true;
      co_return R(std::unexpect, make_error(read_error_kind(ec, s.cancelled), true, "reading the response failed: " + ec.message()));
    }
    const std::size_t got = out.size() - before;
    if (got > 0 || s.parser->is_done()) co_return got;
  }
}

net::awaitable<std::expected<std::string, TransportError>> Exchange::read_all(std::size_t limit, SteadyTime deadline) {
  using R = std::expected<std::string, TransportError>;
  std::string body;
  if (auto len = s_->parser->content_length(); len && *len <= limit) body.reserve(*len);
  while (!done()) {
    auto r = co_await read_some(body, deadline);
    if (!r) co_return R(std::unexpect, std::move(r.error()));
    if (body.size() > limit) {
      s_->failed = true;
      co_return R(std::unexpect, make_error(TransportError::Kind::body_too_large, true,
                                            "upstream body exceeds " + std::to_string(limit) + " bytes"));
    }
    if (*r == 0) break;
  }
  co_return body;
}

void Exchange::cancel() {
  if (!s_ || !s_->conn || s_->cancelled) return;
  s_->cancelled = true;
  s_->failed = true;
  s_->conn->lowest().cancel();
}

void Exchange::finish() {
  if (!s_ || !s_->conn) return;
  // Bytes beyond the framed response (an unsolicited second response, a wrong Content-Length)
  // mean the peer's framing cannot be trusted: such a connection is closed, never pooled, so
  // they can never be read as the answer to another request.
  if (!s_->failed && !s_->cancelled && s_->parser && s_->parser->is_done() && s_->parser->keep_alive() &&
      s_->conn->buffer.size() == 0) {
    s_->conn->lowest().expires_never();
    s_->pool->give_back(std::move(s_->conn));
  }
  s_->conn.reset();
}

net::awaitable<std::expected<std::unique_ptr<UpstreamExchange>, TransportError>> PooledTransport::start(
    const OutgoingRequest& req, SteadyTime deadline, CancelToken* token) {
  auto* pool = UpstreamPool::current();
  if (pool == nullptr) {
    TransportError e;
    e.kind = TransportError::Kind::connect_failed;
    e.message = "no upstream connection pool on this thread";
    co_return std::unexpected(std::move(e));
  }
  auto started = co_await Exchange::start(*pool, req, deadline, token);
  if (!started) co_return std::unexpected(std::move(started.error()));
  co_return std::unique_ptr<UpstreamExchange>(std::move(*started));
}

}  // namespace tollgate::http
