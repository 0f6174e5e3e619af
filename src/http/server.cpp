#include "http/server.hpp"

#include <sys/socket.h>

#include <condition_variable>
#include <list>
#include <mutex>

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
  boost::system::error_code ec;
  const auto ep = stream_.socket().remote_endpoint(ec);
  return ec ? std::string() : ep.address().to_string();
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
  res.prepare_payload();
  stream_.expires_after(write_timeout_);
  auto [ec, n] = co_await bhttp::async_write(stream_, res, use_nothrow);
  started_ = finished_ = true;
  if (ec) mark_gone();
  co_return !ec;
}

net::awaitable<bool> ResponseWriter::begin_stream(bhttp::response<bhttp::empty_body> head) {
  if (*gone_) co_return false;
  head.version(version_);
  head.keep_alive(keep_alive_);
  head.chunked(true);
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
  auto chunk = bhttp::make_chunk(net::const_buffer(data.data(), data.size()));
  auto [ec, n] = co_await net::async_write(stream_, chunk, use_nothrow);
  if (ec) mark_gone();
  co_return !ec;
}

net::awaitable<bool> ResponseWriter::end_stream() {
  if (*gone_) co_return false;
  stream_.expires_after(write_timeout_);
  auto last = bhttp::make_chunk_last();
  auto [ec, n] = co_await net::async_write(stream_, last, use_nothrow);
  finished_ = true;
  if (ec) mark_gone();
  co_return !ec;
}

// ---------------------------------------------------------------------------------------------
// Server

namespace detail {

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
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> finished{0};  ///< requests ended since the start
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
};

/// One connection as its worker sees it (lives in the session's coroutine frame).
struct SessionSlot {
  beast::tcp_stream* stream = nullptr;
  ResponseWriter* writer = nullptr;  ///< while a handler runs
  bool idle = true;                  ///< waiting for the first byte of a request
};

struct ServerWorker {
  /// Declared before the context: frames the context destroys unregister from it.
  std::list<SessionSlot*> sessions;
  IoContext ioc{1};
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;
};

}  // namespace detail

namespace {

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

/// The session's entry in its worker's list; the connection count (raised by the accept loop)
/// falls when the session ends.
struct Registration {
  Registration(ServerWorker& w, ServerState& s, SessionSlot* slot)
      : worker(w), st(s), it(w.sessions.insert(w.sessions.end(), slot)) {}
  ~Registration() {
    worker.sessions.erase(it);
    --st.connections;
    st.notify();
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ServerWorker& worker;
  ServerState& st;
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

net::awaitable<void> session(beast::tcp_stream stream, std::shared_ptr<ServerState> state, ServerWorker* worker) {
  ServerState& st = *state;
  SessionSlot slot;
  slot.stream = &stream;
  Registration registration(*worker, st, &slot);
  beast::flat_buffer buf;
  const auto& lim = st.limits;
  bool first = true;
  for (;;) {
    // Wait for the first byte of the next request (idle limit), then give the whole head a
    // deadline from that moment (slowloris guard).
    if (buf.size() == 0) {
      if (st.closing_idle) break;  // draining and nothing in flight: no more requests here
      slot.idle = true;
      stream.expires_after(first ? lim.header_timeout : lim.idle_timeout);
      auto [ec, n] = co_await stream.async_read_some(buf.prepare(8192), use_nothrow);
      if (ec) co_return;
      buf.commit(n);
    }
    slot.idle = false;
    InFlight in_flight(st);
    first = false;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(lim.max_header_bytes);
    parser.body_limit(static_cast<std::uint64_t>(lim.max_body_bytes));
    stream.expires_after(lim.header_timeout);
    {
      auto [ec, n] = co_await bhttp::async_read_header(stream, buf, parser, use_nothrow);
      if (ec == bhttp::error::body_limit) {
        co_await reject(stream, st, 413, "request body exceeds the limit of " + std::to_string(lim.max_body_bytes) + " bytes", 11);
        co_return;
      }
      if (ec == bhttp::error::header_limit) {
        co_await reject(stream, st, 431, "request header fields too large", 11);
        co_return;
      }
      if (ec == beast::error::timeout || ec == bhttp::error::end_of_stream || ec == net::error::eof ||
          ec == net::error::connection_reset || ec == net::error::operation_aborted)
        co_return;
      if (ec) {
        co_await reject(stream, st, 400, "malformed HTTP request: " + ec.message(), 11);
        co_return;
      }
    }
    if (!parser.is_done()) {
      stream.expires_after(lim.body_timeout);
      auto [ec, n] = co_await bhttp::async_read(stream, buf, parser, use_nothrow);
      if (ec == bhttp::error::body_limit) {
        co_await reject(stream, st, 413, "request body exceeds the limit of " + std::to_string(lim.max_body_bytes) + " bytes", 11);
        co_return;
      }
      if (ec) {
        if (ec != beast::error::timeout && ec != net::error::eof && ec != bhttp::error::partial_message &&
            ec != net::error::operation_aborted)
          co_await reject(stream, st, 400, "malformed HTTP request: " + ec.message(), 11);
        else if (ec == beast::error::timeout)
          co_await reject(stream, st, 408, "request body not received in time", 11);
        co_return;
      }
    }
    stream.expires_never();
    Request req = parser.release();
    // While draining every response says `Connection: close` (begin_drain also clears it on
    // the writers of requests already in flight).
    ResponseWriter writer(stream, lim.idle_timeout, req.keep_alive() && !st.draining, req.version());
    slot.writer = &writer;
    struct Unlink {
      SessionSlot& s;
      ~Unlink() { s.writer = nullptr; }
    } unlink{slot};
    bool threw = false;
    try {
      co_await st.handler(req, writer);
    } catch (const std::exception& e) {
      spdlog::error("handler threw: {}", e.what());
      threw = true;
    } catch (...) {
      spdlog::error("handler threw a non-standard exception");
      threw = true;
    }
    if (threw) {
      writer.set_keep_alive(false);
      if (!writer.started()) {
        auto res = error_response(st, 500, "internal error");
        co_await writer.send(std::move(res));
      }
    }
    if (writer.started() && !writer.finished()) writer.set_keep_alive(false);
    if (!writer.keep_alive() || st.draining) break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

net::awaitable<void> accept_loop(tcp::acceptor& acceptor, std::shared_ptr<ServerState> state, ServerWorker* worker) {
  auto exec = co_await net::this_coro::executor;
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(use_nothrow);
    if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors and the like: back off instead of spinning.
      spdlog::warn("accept failed: {}", ec.message());
      net::steady_timer t(exec, std::chrono::milliseconds(50));
      co_await t.async_wait(use_nothrow);
      continue;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    ++state->connections;  // counted from the accept, so a drain never misses a session not yet started
    net::co_spawn(exec, session(beast::tcp_stream(std::move(socket)), state, worker), [](std::exception_ptr ep) {
      if (!ep) return;
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        spdlog::error("connection ended by exception: {}", e.what());
      } catch (...) {
        spdlog::error("connection ended by a non-standard exception");
      }
    });
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
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; ++i) workers_.push_back(std::make_unique<detail::ServerWorker>());
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
  for (auto& w : workers_) {
    detail::ServerWorker* worker = w.get();
    if (worker->acceptor) net::co_spawn(worker->ioc, accept_loop(*worker->acceptor, state_, worker), net::detached);
    worker->thread = std::thread([worker, on_thread_start] {
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

}  // namespace tollgate::http
