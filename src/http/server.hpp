#pragma once
/// The HTTP/1.1 server: one io_context per worker thread, each with its own SO_REUSEPORT
/// acceptor on the same port (connections stay on the thread that accepted them), so request
/// handling never crosses threads. Limits and timeouts on every read (slowloris, body size).
///
/// The application is a Handler: a coroutine from a parsed request to a response written
/// through a ResponseWriter (whole, or chunked/SSE event by event).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

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
  /// Starts a chunked response (e.g. text/event-stream) with the given status and headers.
  net::awaitable<bool> begin_stream(bhttp::response<bhttp::empty_body> head);
  /// Writes one chunk of a started stream (one SSE event or more).
  net::awaitable<bool> write_chunk(std::string_view data);
  /// Ends a started stream (last chunk).
  net::awaitable<bool> end_stream();

  bool started() const { return started_; }
  bool finished() const { return finished_; }
  bool client_gone() const { return *gone_; }
  /// `fn` runs once, on this connection's thread, if the peer closes the connection before the
  /// handler returns (the pipeline uses it to cancel the upstream request).
  void on_client_gone(std::function<void()> fn);
  /// Whether the connection may serve another request after this one.
  bool keep_alive() const { return keep_alive_ && !*gone_; }
  void set_keep_alive(bool k) { keep_alive_ = k; }

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
  std::shared_ptr<bool> gone_;
  std::shared_ptr<Watch> watch_;
};

/// The application: handles one request. Must not throw (a throw is caught, logged and
/// answered with 500 if nothing was sent yet).
using Handler = std::function<net::awaitable<void>(Request&, ResponseWriter&)>;

/// Builds the JSON body for protocol-level errors the server answers itself (400, 413, 431...).
using ErrorBodyFn = std::function<std::string(int status, std::string_view message)>;

class Server {
 public:
  Server(ServerLimits limits, Handler handler, ErrorBodyFn error_body, int threads);
  ~Server();
  /// Binds host:port (port 0 = any) on every worker; returns the bound port. Throws on failure.
  unsigned short listen(const std::string& host, unsigned short port);
  /// Runs the workers; returns after stop(). `on_thread_start` runs first on each worker thread.
  void run(const std::function<void(net::io_context&)>& on_thread_start);
  /// Stops accepting and ends the workers (in-flight requests are abandoned). Thread-safe.
  void stop();

 private:
  struct Worker;
  ServerLimits limits_;
  Handler handler_;
  ErrorBodyFn error_body_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace tollgate::http
