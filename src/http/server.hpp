#pragma once
/// The HTTP/1.1 server: one io_context per worker thread, each with its own SO_REUSEPORT
/// acceptor on the same port (connections stay on the thread that accepted them), so request
/// handling never crosses threads. Limits and timeouts on every read (slowloris, body size).
///
/// The application is a Handler: a coroutine from a parsed request to a response written
/// through a ResponseWriter (whole, or chunked/SSE event by event).
///
/// Graceful stop (rolling restarts, docs/operations.md): begin_drain() closes the listeners
/// and marks the connections draining; finish_drain() waits for the requests in flight, cuts
/// those still running at its deadline, closes the rest and ends the workers.
///
/// Connection limits (docs/operations.md "Connection limits"): at most
/// ServerLimits::max_connections client connections over all workers. A worker takes a slot
/// (one atomic counter) only once a connection waits in its listener's backlog. At the limit it
/// first evicts an idle connection — one waiting for its next (or first) request, never one
/// with a request in flight — the oldest idle on its own thread, else the oldest idle of another
/// worker (posted to that worker, which owns it); with nothing idle anywhere it stops accepting
/// until a connection ends (back-pressure: the kernel backlog holds the newcomers). Per client
/// IP, ServerLimits::max_connections_per_ip; one more is answered 429 and closed.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "http/connection_stats.hpp"
#include "http/wire_head.hpp"

namespace tollgate::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using std::chrono::milliseconds;

using Request = bhttp::request<bhttp::string_body>;
using Response = bhttp::response<bhttp::string_body>;

struct ServerLimits {
  std::int64_t max_body_bytes = 8 * 1024 * 1024;  ///< larger bodies → 413
  std::uint32_t max_header_bytes = 64 * 1024;     ///< larger heads → 431
  milliseconds header_timeout{10000};             ///< the whole head, from its first byte
  milliseconds body_timeout{30000};               ///< the whole body
  milliseconds idle_timeout{60000};               ///< keep-alive wait for the next request; also per write
  /// Open client connections over all workers; 0 = no limit. At the limit idle connections are
  /// evicted (oldest first), else accepting pauses until one ends.
  std::size_t max_connections = 0;
  /// Open connections from one client IP; 0 = no limit. One more is answered 429 (with
  /// `Connection: close`, no request read) and closed.
  std::size_t max_connections_per_ip = 0;
  /// Above this share of max_connections, percent (1..100), idle waits (a keep-alive
  /// connection's wait for its next request, a new connection's wait for its first byte) are
  /// at most pressure_idle_timeout, so an almost full table frees itself.
  int pressure_percent = 90;
  milliseconds pressure_idle_timeout{2000};
};

/// Writes the response to one request. Owned by the connection; valid during the handler call.
/// Every method returns false once the client is gone (write failed or peer closed).
class ResponseWriter {
 public:
  ResponseWriter(beast::tcp_stream& stream, milliseconds write_timeout, bool keep_alive, unsigned version);
  ~ResponseWriter();
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;

  /// Sends a complete response (Content-Length set here; keep-alive from the request).
  net::awaitable<bool> send(Response res);
  /// The same for a response held as `fields` (written in order; each name once, none of them
  /// Connection, Content-Length or Transfer-Encoding) and `body`, without building a Response:
  /// the bytes send() writes for a Response holding those fields (wire_head's field-view form).
  /// `status` has a body (not 1xx, 204, 304).
  net::awaitable<bool> send_fields(unsigned status, std::span<const FieldView> fields, std::string body);
  /// Starts a chunked response (e.g. text/event-stream) with the given status and headers. An
  /// HTTP/1.0 client has no chunked coding (RFC 9112 §7.1): its body ends with the connection,
  /// which is then not kept alive.
  net::awaitable<bool> begin_stream(bhttp::response<bhttp::empty_body> head);
  /// Writes one chunk of a started stream (one SSE event or more).
  net::awaitable<bool> write_chunk(std::string_view data);
  /// Ends a started stream: the last chunk, with `trailers` as its trailer fields (RFC 9112
  /// §7.1.2; a client that does not read trailers ignores them).
  net::awaitable<bool> end_stream(const std::vector<std::pair<std::string, std::string>>& trailers = {});

  bool started() const { return started_; }
  bool finished() const { return finished_; }
  bool client_gone() const { return *gone_; }
  /// `fn` runs once, on this connection's thread, if the peer closes the connection before the
  /// handler returns (the pipeline uses it to cancel the upstream request).
  void on_client_gone(std::function<void()> fn);
  /// Whether the connection may serve another request after this one.
  bool keep_alive() const { return keep_alive_ && !*gone_; }
  void set_keep_alive(bool k) { keep_alive_ = k; }
  /// `fn` runs once, on this connection's thread, when the server's drain ends with this
  /// request still in flight (Server::finish_drain: its deadline passed, or hurry()): the
  /// handler should end its response now and cleanly — a complete error answer, or an error
  /// event and the end of the stream — and return. nullptr clears it. A request without one is
  /// ended by the server closing its connection.
  void on_shutdown(std::function<void()> fn) { shutdown_hook_ = std::move(fn); }
  /// The server's drain cut: runs the on_shutdown callback; false when none is registered.
  bool cut();
  /// The client's IP address (the TCP peer, e.g. "127.0.0.1"); empty when the socket is closed.
  /// Read from the socket once per connection when a cache is set (remember_peer_in).
  std::string peer_address() const;
  /// Keeps the peer address in `*cache` (owned by the connection, outliving this writer; empty =
  /// not read yet), so that a connection's requests ask the kernel for it once.
  void remember_peer_in(std::string* cache) { peer_cache_ = cache; }

 public:
  struct Watch;  ///< the client-disconnect watch (implementation detail)

 private:
  void arm_watch();
  void mark_gone();
  beast::tcp_stream& stream_;
  milliseconds write_timeout_;
  bool keep_alive_;
  unsigned version_;
  bool started_ = false;
  bool finished_ = false;
  bool chunked_ = true;  ///< a started stream's framing: chunked (HTTP/1.1), else ended by the close
  std::shared_ptr<bool> gone_;
  std::string* peer_cache_ = nullptr;
  std::shared_ptr<Watch> watch_;
  std::function<void()> shutdown_hook_;
};

/// The application: handles one request. Must not throw (a throw is caught, logged and
/// answered with 500 if nothing was sent yet).
using Handler = std::function<net::awaitable<void>(Request&, ResponseWriter&)>;

/// Builds the JSON body for protocol-level errors the server answers itself (400, 413, 431...).
using ErrorBodyFn = std::function<std::string(int status, std::string_view message)>;

/// What a drain did (Server::finish_drain). Counts are requests: one whose head has begun to
/// arrive is in flight until its handler returned.
struct DrainReport {
  std::size_t in_flight_at_start = 0;  ///< in flight when begin_drain() ran
  std::size_t drained = 0;             ///< ended on their own during the drain (keep-alive arrivals included)
  std::size_t cut = 0;                 ///< still in flight at the deadline (or hurry()): ended by the server
  std::size_t abandoned = 0;  ///< connections still open after the cut's grace: destroyed with the workers
  milliseconds elapsed{0};    ///< from begin_drain() to the end of the workers
};

namespace detail {
struct ServerState;
struct ServerWorker;
}  // namespace detail

class Server {
 public:
  Server(ServerLimits limits, Handler handler, ErrorBodyFn error_body, int threads);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  /// Binds host:port (port 0 = any) on every worker; returns the bound port. Throws on failure.
  unsigned short listen(const std::string& host, unsigned short port);
  /// Starts the workers and returns; `on_thread_start` runs first on each worker thread.
  void start(const std::function<void(net::io_context&)>& on_thread_start);
  /// Waits until the workers have ended (stop(), finish_drain()), then destroys what they left
  /// pending (coroutine frames of abandoned connections: their destructors run here, so RAII
  /// settlement happens before join() returns). Call once, from a thread that is not a worker.
  void join();
  /// start() then join(): returns after stop() or finish_drain().
  void run(const std::function<void(net::io_context&)>& on_thread_start);

  /// Starts a graceful stop (thread-safe, once; later calls return 0): closes every listener
  /// (new connections are refused), and from now on every response is sent with
  /// `Connection: close` and its connection closed after it. A keep-alive connection with no
  /// request in flight stays open while requests are in flight elsewhere: the next request on
  /// it is served (with `Connection: close`), so a request a load balancer already sent is not
  /// dropped. Returns the number of requests in flight.
  std::size_t begin_drain();
  /// Waits (blocking; not on a worker) until no request is in flight or `deadline` passes (or
  /// hurry() is called); then cuts the requests still in flight (ResponseWriter::cut, else
  /// their connection is closed), closes the idle connections, waits up to `cut_grace` for the
  /// connections to end, and ends the workers. Call after begin_drain(), instead of join().
  DrainReport finish_drain(std::chrono::steady_clock::time_point deadline,
                           milliseconds cut_grace = milliseconds(2000));
  /// Ends the wait of finish_drain() now, as if its deadline had passed. Thread-safe.
  void hurry();
  /// Stops accepting and ends the workers at once (in-flight requests are abandoned: their
  /// frames are destroyed by join()). Thread-safe; also ends a finish_drain() in progress.
  void stop();

  /// Requests in flight now (head begun, handler not yet returned), over all workers.
  std::size_t in_flight() const;
  /// Open client connections now, over all workers.
  std::size_t connections() const;
  /// The connection figures now. Thread-safe.
  ConnectionStats connection_stats() const;
  /// A reader of connection_stats() that stays valid after the server is gone (it then reports
  /// the last figures): for scrape-time metrics.
  std::function<ConnectionStats()> connection_stats_reader() const;

 private:
  void post_to_workers(const std::function<void(detail::ServerWorker&)>& fn);
  ServerLimits limits_;
  Handler handler_;
  ErrorBodyFn error_body_;
  std::shared_ptr<detail::ServerState> state_;
  std::vector<std::unique_ptr<detail::ServerWorker>> workers_;
  bool joined_ = false;
};

}  // namespace tollgate::http
