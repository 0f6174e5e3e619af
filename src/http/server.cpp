#include "http/server.hpp"
#include "http/reactor_reserve.hpp"

#include <sys/socket.h>

#include <array>
#include <condition_variable>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <spdlog/spdlog.h>

#include "http/io_context.hpp"
#include "http/request_framing.hpp"
#include "http/wire_head.hpp"

namespace tollgate::http {

namespace {
using tcp = net::ip::tcp;
constexpr auto use_nothrow = net::as_tuple(net::use_awaitable);
}  // namespace

// ---------------------------------------------------------------------------------------------
// ResponseWriter

/// Watches the client socket for EOF while the handler runs. Callback-based so that it can be
/// cancelled and abandoned without awaiting it.
struct ResponseWriter::Watch {
  tcp::socket* socket = nullptr;
  net::cancellation_signal cancel;
  bool active = true;
  std::shared_ptr<bool> gone;
  std::function<void()> on_gone;
};

ResponseWriter::ResponseWriter(beast::tcp_stream& stream, milliseconds write_timeout, bool keep_alive,
                               unsigned version)
    : stream_(stream),
      write_timeout_(write_timeout),
      keep_alive_(keep_alive),
      version_(version),
      gone_(std::make_shared<bool>(false)) {}

ResponseWriter::~ResponseWriter() {
  if (watch_) {
    watch_->active = false;
    watch_->on_gone = nullptr;
    watch_->cancel.emit(net::cancellation_type::all);
  }
}

void ResponseWriter::on_client_gone(std::function<void()> fn) {
  if (!watch_) {
    watch_ = std::make_shared<Watch>();
    watch_->socket = &stream_.socket();
    watch_->gone = gone_;
    watch_->on_gone = std::move(fn);
    arm_watch();
  } else {
    watch_->on_gone = std::move(fn);
  }
}

namespace {
/// Waits for the client socket to become readable; EOF or an error means the client is gone.
void watch_socket(const std::shared_ptr<ResponseWriter::Watch>& w);
}  // namespace

void ResponseWriter::arm_watch() { watch_socket(watch_); }

void ResponseWriter::mark_gone() {
  if (*gone_) return;
  *gone_ = true;
  if (watch_)
    if (auto fn = std::move(watch_->on_gone)) fn();
}

namespace {
void watch_socket(const std::shared_ptr<ResponseWriter::Watch>& w) {
  w->socket->async_wait(
      tcp::socket::wait_read, net::bind_cancellation_slot(w->cancel.slot(), [w](boost::system::error_code ec) {
        if (!w->active || ec == net::error::operation_aborted) return;
        bool closed = static_cast<bool>(ec);
        if (!closed) {
          char c;
          const auto n = ::recv(w->socket->native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
          if (n == 0) closed = true;
          else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) closed = true;
          else if (n > 0) return;  // pipelined bytes: the client is alive; stop watching
          else {
            watch_socket(w);  // spurious wake-up: wait again
            return;
          }
        }
        if (closed && !*w->gone) {
          *w->gone = true;
          if (auto fn = std::move(w->on_gone)) fn();
        }
      }));
}
}  // namespace

std::string ResponseWriter::peer_address() const {
  if (peer_cache_ != nullptr && !peer_cache_->empty()) return *peer_cache_;
  boost::system::error_code ec;
  const auto ep = stream_.socket().remote_endpoint(ec);
  std::string out = ec ? std::string() : ep.address().to_string();
  if (peer_cache_ != nullptr) *peer_cache_ = out;
  return out;
}

bool ResponseWriter::cut() {
  if (!shutdown_hook_) return false;
  auto fn = std::move(shutdown_hook_);
  shutdown_hook_ = nullptr;
  fn();
  return true;
}

net::awaitable<bool> ResponseWriter::send(Response res) {
  if (*gone_) co_return false;
  res.version(version_);
  res.keep_alive(keep_alive_);
  res.prepare_payload();  // a string body's length is known: Content-Length, never chunked
  stream_.expires_after(write_timeout_);
  const std::string head = wire_head(res);
  const std::array<net::const_buffer, 2> bufs{net::buffer(head), net::buffer(res.body())};
  auto [ec, n] = co_await net::async_write(stream_, bufs, use_nothrow);
  started_ = finished_ = true;
  if (ec) mark_gone();
  co_return !ec;
}

net::awaitable<bool> ResponseWriter::send_fields(unsigned status, std::span<const FieldView> fields, std::string body) {
  if (*gone_) co_return false;
  stream_.expires_after(write_timeout_);
  const std::string head = wire_head(status, version_, keep_alive_, fields, body.size());
  const std::array<net::const_buffer, 2> bufs{net::buffer(head), net::buffer(body)};
  auto [ec, n] = co_await net::async_write(stream_, bufs, use_nothrow);
  started_ = finished_ = true;
  if (ec) mark_gone();
  co_return !ec;
}

net::awaitable<bool> ResponseWriter::begin_stream(bhttp::response<bhttp::empty_body> head) {
  if (*gone_) co_return false;
  head.version(version_);
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;
  head.keep_alive(keep_alive_);
  head.chunked(chunked_);
  bhttp::response_serializer<bhttp::empty_body> sr{head};
  stream_.expires_after(write_timeout_);
  auto [ec, n] = co_await bhttp::async_write_header(stream_, sr, use_nothrow);
  started_ = true;
  if (ec) mark_gone();
  co_return !ec;
}

net::awaitable<bool> ResponseWriter::write_chunk(std::string_view data) {
  if (*gone_) co_return false;
  if (data.empty()) co_return true;  // an empty chunk would end the stream
  stream_.expires_after(write_timeout_);
  if (!chunked_) {
    auto [ec, n] = co_await net::async_write(stream_, net::const_buffer(data.data(), data.size()), use_nothrow);
    if (ec) mark_gone();
    co_return !ec;
  }
  auto chunk = bhttp::make_chunk(net::const_buffer(data.data(), data.size()));
  auto [ec, n] = co_await net::async_write(stream_, chunk, use_nothrow);
  if (ec) mark_gone();
  co_return !ec;
}

net::awaitable<bool> ResponseWriter::end_stream(const std::vector<std::pair<std::string, std::string>>& trailers) {
  if (*gone_) co_return false;
  if (!chunked_) {  // HTTP/1.0: the close ends the body (no trailers)
    finished_ = true;
    co_return true;
  }
  stream_.expires_after(write_timeout_);
  bhttp::fields fields;
  for (const auto& [k, v] : trailers) fields.insert(k, v);
  auto last = bhttp::make_chunk_last(fields);
  auto [ec, n] = co_await net::async_write(stream_, last, use_nothrow);
  finished_ = true;
  if (ec) mark_gone();
  co_return !ec;
}

// ---------------------------------------------------------------------------------------------
// Server

namespace detail {

struct ServerWorker;

/// The connection figures (ConnectionStats), apart from ServerState so that a metrics reader
/// holding them keeps nothing else alive.
struct ConnectionCounters {
  std::size_t limit = 0;
  std::atomic<std::size_t> open{0};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> evicted{0};
  std::atomic<std::uint64_t> refused_per_ip{0};
  std::atomic<std::uint64_t> accept_errors{0};
  std::atomic<std::uint64_t> backpressure{0};

  ConnectionStats snapshot() const {
    ConnectionStats s;
    s.open = open;
    s.limit = limit;
    s.accepted = accepted;
    s.evicted = evicted;
    s.refused_per_ip = refused_per_ip;
    s.accept_errors = accept_errors;
    s.backpressure = backpressure;
    return s;
  }
};

/// Open connections per client IP (ServerLimits::max_connections_per_ip). Touched twice per
/// connection (accept, end), never per request; sharded so workers rarely meet on one lock.
class PerIpTable {
 public:
  using Key = std::array<unsigned char, 16>;  ///< the IPv6 form (IPv4 mapped)

  static Key key_of(const net::ip::address& a) {
    return a.is_v4() ? net::ip::make_address_v6(net::ip::v4_mapped, a.to_v4()).to_bytes() : a.to_v6().to_bytes();
  }
  /// Counts one more connection from `k` unless it already has `limit`.
  bool try_add(const Key& k, std::size_t limit) {
    auto& sh = shard(k);
    std::lock_guard lk(sh.mu);
    auto& n = sh.counts[k];
    if (n >= limit) {
      if (n == 0) sh.counts.erase(k);
      return false;
    }
    ++n;
    return true;
  }
  void remove(const Key& k) {
    auto& sh = shard(k);
    std::lock_guard lk(sh.mu);
    auto it = sh.counts.find(k);
    if (it == sh.counts.end()) return;
    if (--it->second == 0) sh.counts.erase(it);
  }
  /// Addresses with an open connection (tests: the table empties when the connections end).
  std::size_t addresses() {
    std::size_t n = 0;
    for (auto& sh : shards_) {
      std::lock_guard lk(sh.mu);
      n += sh.counts.size();
    }
    return n;
  }

 private:
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(k.data()), k.size()));
    }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<Key, std::size_t, KeyHash> counts;
  };
  Shard& shard(const Key& k) { return shards_[KeyHash{}(k) % shards_.size()]; }
  std::array<Shard, 16> shards_;
};

/// What the server and all its sessions share. The atomics are read by any thread; the
/// condition variable wakes finish_drain() when a count it waits on changes during a drain.
struct ServerState {
  ServerLimits limits;
  Handler handler;
  ErrorBodyFn error_body;
  std::atomic<bool> draining{false};      ///< begin_drain() ran: responses close their connection
  std::atomic<bool> closing_idle{false};  ///< idle connections close instead of waiting for a request
  std::atomic<bool> hurry{false};
  std::atomic<bool> stopped{false};
  std::atomic<std::size_t> in_flight{0};
  std::atomic<std::size_t> connections{0};  ///< open client connections (counters->open mirrors it)
  /// Connection slots taken: open connections plus those an acceptor is taking now; at most
  /// limits.max_connections (when set).
  std::atomic<std::size_t> slots{0};
  std::atomic<std::size_t> finished{0};  ///< requests ended since the start
  std::shared_ptr<ConnectionCounters> counters = std::make_shared<ConnectionCounters>();
  PerIpTable per_ip;
  std::vector<ServerWorker*> workers;  ///< fixed at construction; they outlive every session
  std::size_t in_flight_at_drain = 0;
  std::size_t finished_at_drain = 0;
  std::chrono::steady_clock::time_point drain_started{};
  std::mutex mu;
  std::condition_variable cv;

  void notify() {
    if (!draining && !stopped) return;  // nobody waits: keep the request path lock-free
    std::lock_guard lk(mu);
    cv.notify_all();
  }

  /// Takes a connection slot unless the table is full.
  bool try_take_slot() {
    const auto limit = limits.max_connections;
    auto n = slots.load();
    do {
      if (limit != 0 && n >= limit) return false;
    } while (!slots.compare_exchange_weak(n, n + 1));
    return true;
  }
  /// Gives a slot back and wakes the acceptors paused at the limit (defined below ServerWorker).
  void release_slot();
  /// Wakes the acceptors paused at the limit: they try again (take a slot, or evict).
  void wake_paused();
  /// Above pressure_percent of max_connections: idle waits shrink.
  bool under_pressure() const {
    const auto limit = limits.max_connections;
    return limit != 0 &&
           slots.load(std::memory_order_relaxed) * 100 >= limit * static_cast<std::size_t>(limits.pressure_percent);
  }
};

/// One connection as its worker sees it (lives in the session's coroutine frame).
struct SessionSlot {
  beast::tcp_stream* stream = nullptr;
  ResponseWriter* writer = nullptr;  ///< while a handler runs
  bool idle = true;                  ///< waiting for the first byte of a request
  bool evicted = false;              ///< closed to make room at the limit (its read is cancelled)
  std::string peer;                  ///< the client's address, once a handler asked for it
};

struct ServerWorker {
  /// Declared before the context: frames the context destroys unregister from it. Idle
  /// sessions are in the order they became idle (a session moves to the back when it starts
  /// waiting for a request), so the first idle one is the one idle the longest.
  std::list<SessionSlot*> sessions;
  IoContext ioc{1};
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;
  /// The accept loop waits on this timer while the table is full (worker thread only).
  net::steady_timer* pause_timer = nullptr;
  /// Set by the accept loop before it waits at the limit; any thread that frees a slot wakes it.
  std::atomic<bool> paused{false};
};

void ServerState::release_slot() {
  --slots;
  // Paired with the accept loop's `paused = true` then re-try (both sequentially consistent):
  // either it sees this slot free or this sees it paused and wakes it.
  wake_paused();
}

void ServerState::wake_paused() {
  if (stopped) return;
  for (auto* w : workers)
    if (w->paused.load())
      net::post(w->ioc, [w] {
        if (w->pause_timer) w->pause_timer->cancel();
      });
}

}  // namespace detail

namespace {

using detail::PerIpTable;
using detail::ServerState;
using detail::ServerWorker;
using detail::SessionSlot;

Response error_response(const ServerState& ctx, int status, std::string_view message) {
  Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = ctx.error_body(status, message);
  return res;
}

/// Answers a protocol-level error and closes: after the response, drain what the client is
/// still sending for a moment so the close does not turn into a reset that hides the answer.
net::awaitable<void> reject(beast::tcp_stream& stream, const ServerState& ctx, int status,
                            std::string_view message, unsigned version) {
  auto res = error_response(ctx, status, message);
  res.version(version ? version : 11);
  res.keep_alive(false);
  res.set(bhttp::field::connection, "close");  // said for HTTP/1.0 too, where it is the default
  res.prepare_payload();
  stream.expires_after(ctx.limits.idle_timeout);
  auto [ec, n] = co_await bhttp::async_write(stream, res, use_nothrow);
  if (ec) co_return;
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  std::array<char, 16384> sink{};
  std::size_t drained = 0;
  stream.expires_after(std::chrono::milliseconds(500));
  while (drained < 4 * 1024 * 1024) {
    auto [rec, got] = co_await stream.async_read_some(net::buffer(sink), use_nothrow);
    if (rec) break;
    drained += got;
  }
}

/// One accepted connection's share of the server: its slot, its place in the open count and
/// in its IP's count. Taken by the accept loop, moved into the connection's coroutine, given
/// back when that ends (or when its frame is destroyed unstarted, at teardown).
class ConnectionHold {
 public:
  ConnectionHold(std::shared_ptr<ServerState> st, std::optional<PerIpTable::Key> ip) : st_(std::move(st)), ip_(ip) {
    ++st_->connections;
    ++st_->counters->open;
    ++st_->counters->accepted;
  }
  ConnectionHold(ConnectionHold&& o) noexcept : st_(std::move(o.st_)), ip_(o.ip_) { o.st_.reset(); }
  ConnectionHold& operator=(ConnectionHold&&) = delete;
  ConnectionHold(const ConnectionHold&) = delete;
  ConnectionHold& operator=(const ConnectionHold&) = delete;
  ~ConnectionHold() {
    if (!st_) return;
    if (ip_) st_->per_ip.remove(*ip_);
    --st_->counters->open;
    st_->release_slot();
    --st_->connections;  // last: a drain waiting for zero connections sees the rest done
    st_->notify();
  }

 private:
  std::shared_ptr<ServerState> st_;
  std::optional<PerIpTable::Key> ip_;
};

/// The session's entry in its worker's list.
struct Registration {
  Registration(ServerWorker& w, SessionSlot* slot) : worker(w), it(w.sessions.insert(w.sessions.end(), slot)) {}
  ~Registration() { worker.sessions.erase(it); }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  /// The session starts waiting for a request: it becomes the newest idle one.
  void to_back() { worker.sessions.splice(worker.sessions.end(), worker.sessions, it); }
  ServerWorker& worker;
  std::list<SessionSlot*>::iterator it;
};

/// One request in flight: from the first byte of its head until its handler returned.
struct InFlight {
  explicit InFlight(ServerState& s) : st(s) { ++st.in_flight; }
  ~InFlight() {
    ++st.finished;
    --st.in_flight;
    st.notify();
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ServerState& st;
};

/// Reads the rest of a request whose first bytes are in `buf`: its head, checked (RFC 9112
/// framing, request_framing.hpp) before Beast reads it, then its body. nullopt when the
/// connection ends here: a refusal was sent, or the peer broke off or was too slow.
// A coroutine of its own: the session's frame lives as long as its connection (a stream's whole
// length), and the parser and the refusals' temporaries would stay in it.
net::awaitable<std::optional<Request>> read_request(beast::tcp_stream& stream, beast::flat_buffer& buf,
                                                    const ServerState& st) {
  const auto& lim = st.limits;
  const auto buffered = [&buf] {
    const auto data = buf.cdata();
    return std::string_view(static_cast<const char*>(data.data()), data.size());
  };
  stream.expires_after(lim.header_timeout);
  // The whole head first: its raw lines are checked before Beast reads them.
  std::size_t end = head_end(buffered());
  while (end == std::string_view::npos) {
    if (auto bad = check_partial_head(buffered(), lim.max_header_bytes)) {
      co_await reject(stream, st, bad->status, bad->message, 11);
      co_return std::nullopt;
    }
    auto [ec, n] = co_await stream.async_read_some(buf.prepare(8192), use_nothrow);
    if (ec) co_return std::nullopt;  // timeout, close or reset before the head was whole
    buf.commit(n);
    end = head_end(buffered());
  }
  if (auto bad = check_raw_head(buffered().substr(0, end))) {
    co_await reject(stream, st, bad->status, bad->message, 11);
    co_return std::nullopt;
  }
  // The reading rules (limits, chunk extensions, what a read error answers) are
  // request_framing.hpp's, shared with the fuzz target (tests/fuzz/request_framing_fuzz.cpp).
  const auto max_body = static_cast<std::size_t>(lim.max_body_bytes);
  RequestParser parser;
  configure_request_parser(parser, lim.max_header_bytes, max_body);
  {
    auto [ec, n] = co_await bhttp::async_read_header(stream, buf, parser, use_nothrow);
    if (ec) {
      if (auto bad = read_refusal(ec, false, max_body)) co_await reject(stream, st, bad->status, bad->message, 11);
      co_return std::nullopt;
    }
    if (auto bad = check_request_head(parser.get())) {
      co_await reject(stream, st, bad->status, bad->message, parser.get().version());
      co_return std::nullopt;
    }
  }
  // Trailer fields of a chunked body would be added to the head after it was checked (a second
  // Host, an Authorization no front proxy saw): a request with any is refused.
  const auto head_fields = static_cast<std::size_t>(std::distance(parser.get().begin(), parser.get().end()));
  if (!parser.is_done()) {
    stream.expires_after(lim.body_timeout);
    auto [ec, n] = co_await bhttp::async_read(stream, buf, parser, use_nothrow);
    if (ec) {
      if (auto bad = read_refusal(ec, true, max_body)) co_await reject(stream, st, bad->status, bad->message, 11);
      co_return std::nullopt;
    }
    if (auto bad = check_no_trailers(head_fields, parser.get())) {
      co_await reject(stream, st, bad->status, bad->message, 11);
      co_return std::nullopt;
    }
  }
  stream.expires_never();
  co_return parser.release();
}

/// The 500 of a handler that threw before it answered.
net::awaitable<void> send_internal_error(ResponseWriter& writer, const ServerState& st) {
  co_await writer.send(error_response(st, 500, "internal error"));
}

net::awaitable<void> session(beast::tcp_stream stream, std::shared_ptr<ServerState> state, ServerWorker* worker,
                             [[maybe_unused]] ConnectionHold hold) {
  ServerState& st = *state;
  SessionSlot slot;
  slot.stream = &stream;
  Registration registration(*worker, &slot);
  const auto& lim = st.limits;
  // Bounded: a head, one read of the body beyond it, a chunk header with its extensions; a
  // chunk header that does not fit is refused (bhttp::error::buffer_overflow) instead of grown.
  beast::flat_buffer buf(lim.max_header_bytes + 128 * 1024);
  bool first = true;
  for (;;) {
    // Wait for the first byte of the next request (idle limit), then give the whole head a
    // deadline from that moment (slowloris guard).
    if (buf.size() == 0) {
      if (st.closing_idle) break;  // draining and nothing in flight: no more requests here
      if (!first) registration.to_back();
      slot.idle = true;
      auto wait = first ? lim.header_timeout : lim.idle_timeout;
      if (st.under_pressure()) wait = std::min(wait, lim.pressure_idle_timeout);
      stream.expires_after(wait);
      auto [ec, n] = co_await stream.async_read_some(buf.prepare(8192), use_nothrow);
      if (ec) co_return;  // idle limit, peer closed, or evicted (its read cancelled)
      if (slot.evicted) {
        // The read had already completed when the eviction ran: a request is arriving, so the
        // connection is not idle after all. It stays; the acceptor tries again elsewhere.
        slot.evicted = false;
        --st.counters->evicted;
        st.wake_paused();
      }
      buf.commit(n);
    }
    slot.idle = false;
    InFlight in_flight(st);
    first = false;
    std::optional<Request> req = co_await read_request(stream, buf, st);
    if (!req) co_return;
    // Nothing pipelined behind this request: the read buffer (8 KiB or more) is given back for
    // the time the handler runs, which for a stream is its whole length.
    if (buf.size() == 0) buf.shrink_to_fit();
    // While draining every response says `Connection: close` (begin_drain also clears it on
    // the writers of requests already in flight).
    ResponseWriter writer(stream, lim.idle_timeout, req->keep_alive() && !st.draining, req->version());
    writer.remember_peer_in(&slot.peer);
    slot.writer = &writer;
    struct Unlink {
      SessionSlot& s;
      ~Unlink() { s.writer = nullptr; }
    } unlink{slot};
    bool threw = false;
    try {
      co_await st.handler(*req, writer);
    } catch (const std::exception& e) {
      spdlog::error("handler threw: {}", e.what());
      threw = true;
    } catch (...) {
      spdlog::error("handler threw a non-standard exception");
      threw = true;
    }
    if (threw) {
      writer.set_keep_alive(false);
      if (!writer.started()) co_await send_internal_error(writer, st);
    }
    if (writer.started() && !writer.finished()) writer.set_keep_alive(false);
    if (!writer.keep_alive() || st.draining) break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

/// Answers a connection whose IP is at max_connections_per_ip: 429 with `Connection: close`,
/// written before anything is read; then a short drain of what the client sent (so the close
/// does not turn into a reset that hides the answer), and the close.
net::awaitable<void> refuse_connection(beast::tcp_stream stream, std::shared_ptr<ServerState> state,
                                       [[maybe_unused]] ConnectionHold hold) {
  auto res = error_response(*state, 429, "too many connections from this address");
  res.keep_alive(false);
  res.set(bhttp::field::connection, "close");
  res.set(bhttp::field::retry_after, "1");
  res.prepare_payload();
  stream.expires_after(std::chrono::milliseconds(1000));
  auto [ec, n] = co_await bhttp::async_write(stream, res, use_nothrow);
  if (ec) co_return;
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  std::array<char, 4096> sink{};
  std::size_t drained = 0;
  stream.expires_after(std::chrono::milliseconds(250));
  while (drained < 64 * 1024) {
    auto [rec, got] = co_await stream.async_read_some(net::buffer(sink), use_nothrow);
    if (rec) break;
    drained += got;
  }
}

/// Whether bytes wait unread on the session's socket (a request is arriving: not idle).
bool bytes_waiting(const SessionSlot& s) {
  char c;
  const auto n = ::recv(s.stream->socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0;
}

/// Closes this worker's oldest idle connection (worker thread only). False when none is idle.
bool evict_oldest_idle(ServerWorker& w, ServerState& st) {
  for (auto* s : w.sessions) {
    if (!s->idle || s->evicted || bytes_waiting(*s)) continue;
    s->evicted = true;
    s->idle = false;
    ++st.counters->evicted;
    s->stream->cancel();  // its read ends with operation_aborted; the session returns and closes
    return true;
  }
  return false;
}

/// Asks the other workers, one after the other, to evict their oldest idle connection; the
/// first that has one does. Runs on worker `index`; `left` more workers may be asked after it.
void evict_elsewhere(std::shared_ptr<ServerState> state, std::size_t index, std::size_t left) {
  auto* w = state->workers[index];
  net::post(w->ioc, [state, w, index, left] {
    auto& st = *state;
    if (st.stopped || !st.limits.max_connections || st.slots.load() < st.limits.max_connections) return;
    if (evict_oldest_idle(*w, st)) return;
    if (left > 0)
      evict_elsewhere(state, (index + 1) % st.workers.size(), left - 1);
    else
      ++st.counters->backpressure;  // nothing idle anywhere: the acceptor waits for a connection to end
  });
}

/// Takes a connection slot for a connection waiting in `worker`'s backlog, making room or
/// waiting at the limit. False when the listener closed (or the server stopped) meanwhile.
net::awaitable<bool> take_slot(ServerState& st, ServerWorker& worker, std::size_t index, net::steady_timer& pause,
                               const std::shared_ptr<ServerState>& state) {
  for (;;) {
    if (st.try_take_slot()) co_return true;
    worker.paused = true;  // before the re-check: a slot freed from now on wakes this loop
    if (st.try_take_slot()) {
      worker.paused = false;
      co_return true;
    }
    bool evicted = evict_oldest_idle(worker, st);
    if (!evicted && st.workers.size() > 1)
      evict_elsewhere(state, (index + 1) % st.workers.size(), st.workers.size() - 2);
    else if (!evicted)
      ++st.counters->backpressure;
    // Woken when any connection ends (ServerState::release_slot); the bound only re-asks for
    // an eviction in case an idle connection appeared meanwhile.
    pause.expires_after(std::chrono::milliseconds(evicted ? 1000 : 250));
    co_await pause.async_wait(use_nothrow);
    worker.paused = false;
    if (st.stopped || !worker.acceptor || !worker.acceptor->is_open()) co_return false;
  }
}

net::awaitable<void> accept_loop(tcp::acceptor& acceptor, std::shared_ptr<ServerState> state, ServerWorker* worker,
                                 std::size_t index) {
  auto exec = co_await net::this_coro::executor;
  auto& st = *state;
  net::steady_timer pause(exec);
  worker->pause_timer = &pause;
  struct Unset {
    ServerWorker* w;
    ~Unset() { w->pause_timer = nullptr; }
  } unset{worker};
  boost::system::error_code ignored;
  acceptor.non_blocking(true, ignored);
  auto last_warning = std::chrono::steady_clock::time_point{};
  net::steady_timer back_off(exec);
  for (;;) {
    // A slot is taken only once a connection waits in this listener's backlog: a worker whose
    // backlog is empty never holds one that another worker's newcomer needs.
    auto [wec] = co_await acceptor.async_wait(tcp::acceptor::wait_read, use_nothrow);
    if (wec == net::error::operation_aborted || !acceptor.is_open()) co_return;
    if (wec) {
      back_off.expires_after(std::chrono::milliseconds(50));
      co_await back_off.async_wait(use_nothrow);
      continue;
    }
    if (!co_await take_slot(st, *worker, index, pause, state)) co_return;
    tcp::socket socket(exec);
    boost::system::error_code ec;
    acceptor.accept(socket, ec);
    if (ec) {
      st.release_slot();
      if (!acceptor.is_open()) co_return;
      if (ec == net::error::would_block || ec == net::error::try_again || ec == net::error::connection_aborted ||
          ec == net::error::interrupted)
        continue;  // the newcomer left the backlog before it was accepted
      // Out of descriptors and the like: count it, warn at most once a second, back off
      // instead of spinning.
      ++st.counters->accept_errors;
      if (const auto now = std::chrono::steady_clock::now(); now - last_warning > std::chrono::seconds(1)) {
        last_warning = now;
        spdlog::warn("accept failed: {} ({} connection(s) open)", ec.message(), st.connections.load());
      }
      back_off.expires_after(std::chrono::milliseconds(50));
      co_await back_off.async_wait(use_nothrow);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ignored);
    std::optional<PerIpTable::Key> ip;
    bool refused = false;
    if (st.limits.max_connections_per_ip != 0) {
      boost::system::error_code pec;
      const auto peer = socket.remote_endpoint(pec);
      if (!pec) {
        const auto key = PerIpTable::key_of(peer.address());
        if (st.per_ip.try_add(key, st.limits.max_connections_per_ip))
          ip = key;
        else
          refused = true;
      }
    }
    // Counted from the accept, so a drain never misses a session not yet started.
    ConnectionHold hold(state, ip);
    const auto on_end = [](std::exception_ptr ep) {
      if (!ep) return;
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        spdlog::error("connection ended by exception: {}", e.what());
      } catch (...) {
        spdlog::error("connection ended by a non-standard exception");
      }
    };
    if (refused) {
      ++st.counters->refused_per_ip;
      net::co_spawn(exec, refuse_connection(beast::tcp_stream(std::move(socket)), state, std::move(hold)), on_end);
      continue;
    }
    net::co_spawn(exec, session(beast::tcp_stream(std::move(socket)), state, worker, std::move(hold)), on_end);
  }
}

/// Closes a connection under whatever it is doing: pending reads and writes fail at once.
void close_under(SessionSlot& s) {
  boost::system::error_code ignored;
  s.stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
  s.stream->cancel();
}

}  // namespace

Server::Server(ServerLimits limits, Handler handler, ErrorBodyFn error_body, int threads)
    : limits_(limits),
      handler_(std::move(handler)),
      error_body_(std::move(error_body)),
      state_(std::make_shared<detail::ServerState>()) {
  state_->limits = limits_;
  state_->handler = handler_;
  state_->error_body = error_body_;
  state_->counters->limit = limits_.max_connections;
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; ++i) {
    workers_.push_back(std::make_unique<detail::ServerWorker>());
    state_->workers.push_back(workers_.back().get());
  }
}

Server::~Server() {
  stop();
  join();
}

unsigned short Server::listen(const std::string& host, unsigned short port) {
  auto address = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host);
  if (port != 0) {
    // SO_REUSEPORT would let a second process share the port silently; a plain bind first
    // makes "port already in use" an error, as users expect.
    tcp::acceptor probe(workers_.front()->ioc);
    tcp::endpoint ep{address, port};
    probe.open(ep.protocol());
    probe.set_option(net::socket_base::reuse_address(true));
    boost::system::error_code ec;
    probe.bind(ep, ec);
    if (ec) throw std::runtime_error("port " + std::to_string(port) + " is in use: " + ec.message());
    probe.close();
  }
  for (auto& w : workers_) {
    auto acc = std::make_unique<tcp::acceptor>(w->ioc);
    tcp::endpoint ep{address, port};
    acc->open(ep.protocol());
    acc->set_option(net::socket_base::reuse_address(true));
    int one = 1;
    ::setsockopt(acc->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    acc->bind(ep);
    acc->listen(net::socket_base::max_listen_connections);
    port = acc->local_endpoint().port();  // the first worker picks the port; the rest share it
    w->acceptor = std::move(acc);
  }
  return port;
}

void Server::start(const std::function<void(net::io_context&)>& on_thread_start) {
  // A client socket and an upstream socket for each connection (reactor_reserve.hpp), within
  // kMaxReservedReactorStates for the whole process, shared out between the workers.
  const std::size_t states = std::min(kMaxReservedReactorStates, 2 * state_->limits.max_connections) /
                             std::max<std::size_t>(1, workers_.size());
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    detail::ServerWorker* worker = workers_[i].get();
    if (worker->acceptor) net::co_spawn(worker->ioc, accept_loop(*worker->acceptor, state_, worker, i), net::detached);
    worker->thread = std::thread([worker, on_thread_start, states] {
      reserve_reactor_states(worker->ioc, states);  // on this thread: in its malloc arena
      if (on_thread_start) on_thread_start(worker->ioc);
      for (;;) {
        try {
          worker->ioc.run();
          break;
        } catch (const std::exception& e) {
          spdlog::error("worker loop exception: {}", e.what());
        } catch (...) {
          spdlog::error("worker loop: non-standard exception");
        }
      }
    });
  }
}

void Server::join() {
  if (joined_) return;
  joined_ = true;
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
  // No worker runs any more: what the contexts still hold (connections abandoned by stop())
  // is destroyed now, on this thread, while everything it refers to is alive.
  for (auto& w : workers_) w->ioc.abandon_pending();
}

void Server::run(const std::function<void(net::io_context&)>& on_thread_start) {
  start(on_thread_start);
  join();
}

void Server::post_to_workers(const std::function<void(detail::ServerWorker&)>& fn) {
  for (auto& w : workers_) {
    detail::ServerWorker* worker = w.get();
    net::post(worker->ioc, [worker, fn] { fn(*worker); });
  }
}

std::size_t Server::begin_drain() {
  auto& st = *state_;
  {
    std::lock_guard lk(st.mu);
    if (st.draining) return 0;
    st.finished_at_drain = st.finished;
    st.in_flight_at_drain = st.in_flight;
    st.drain_started = std::chrono::steady_clock::now();
    st.draining = true;
  }
  post_to_workers([](detail::ServerWorker& w) {
    if (w.acceptor) {
      boost::system::error_code ignored;
      w.acceptor->close(ignored);  // the accept loop ends; the port is released once every worker's is closed
    }
    if (w.pause_timer) w.pause_timer->cancel();  // an accept loop paused at the limit ends too
    for (auto* s : w.sessions)
      if (s->writer) s->writer->set_keep_alive(false);
  });
  return st.in_flight_at_drain;
}

DrainReport Server::finish_drain(std::chrono::steady_clock::time_point deadline, milliseconds cut_grace) {
  using clock = std::chrono::steady_clock;
  begin_drain();
  auto& st = *state_;
  DrainReport report;
  bool cut_done = false;
  bool idle_closed = false;
  clock::time_point grace_end{};
  {
    std::unique_lock lk(st.mu);
    report.in_flight_at_start = st.in_flight_at_drain;
    for (;;) {
      if (st.stopped || st.connections == 0) break;
      const auto now = clock::now();
      if (!cut_done && (st.hurry || now >= deadline)) {
        // The drain's time is over: every request still in flight is ended now.
        cut_done = idle_closed = true;
        report.cut = st.in_flight;
        grace_end = now + cut_grace;
        st.closing_idle = true;
        lk.unlock();
        post_to_workers([](detail::ServerWorker& w) {
          const std::vector<SessionSlot*> sessions(w.sessions.begin(), w.sessions.end());
          for (auto* s : sessions) {
            if (s->idle) s->stream->cancel();
            else if (!s->writer || !s->writer->cut()) close_under(*s);
          }
        });
        lk.lock();
        continue;
      }
      if (cut_done && now >= grace_end) break;
      if (!idle_closed && st.in_flight == 0) {
        // Nothing in flight any more: the keep-alive connections waiting for a request close.
        idle_closed = true;
        st.closing_idle = true;
        lk.unlock();
        post_to_workers([](detail::ServerWorker& w) {
          for (auto* s : w.sessions)
            if (s->idle) s->stream->cancel();
        });
        lk.lock();
        continue;
      }
      // Woken by every change of the counts; the 50 ms bound only guards against a missed one.
      st.cv.wait_until(lk, std::min(cut_done ? grace_end : deadline, now + milliseconds(50)));
    }
  }
  report.abandoned = st.connections;
  if (report.abandoned > 0)
    spdlog::warn("drain: {} connection(s) did not end within {} ms of the cut; closing them", report.abandoned,
                 cut_grace.count());
  stop();
  join();
  const std::size_t ended = st.finished - st.finished_at_drain;
  report.drained = ended > report.cut ? ended - report.cut : 0;
  report.elapsed = std::chrono::duration_cast<milliseconds>(clock::now() - st.drain_started);
  return report;
}

void Server::hurry() {
  auto& st = *state_;
  std::lock_guard lk(st.mu);
  st.hurry = true;
  st.cv.notify_all();
}

void Server::stop() {
  auto& st = *state_;
  {
    std::lock_guard lk(st.mu);
    st.stopped = true;
    st.cv.notify_all();
  }
  for (auto& w : workers_) w->ioc.stop();
}

std::size_t Server::in_flight() const { return state_->in_flight; }
std::size_t Server::connections() const { return state_->connections; }

ConnectionStats Server::connection_stats() const { return state_->counters->snapshot(); }

std::function<ConnectionStats()> Server::connection_stats_reader() const {
  return [counters = state_->counters] { return counters->snapshot(); };
}

}  // namespace tollgate::http
