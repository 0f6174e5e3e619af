#pragma once
/// The upstream HTTP/1.1 client: keep-alive connection pools per upstream (scheme, host, port),
/// one pool per worker thread (no locks), TLS through OpenSSL with certificate and host-name
/// verification against the system CA store (or tollgate_settings.ca_file).

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

namespace tollgate::http {

namespace net = boost::asio;
using std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

/// A parsed absolute http(s) URL.
struct Target {
  bool tls = false;
  std::string host;
  std::string port;             ///< "443"/"80" when not given
  std::string path_and_query;   ///< starts with '/'
};

/// Parses "http(s)://host[:port]/path?query". Errors name what is wrong.
std::expected<Target, std::string> parse_url(std::string_view url);

/// Why an exchange failed below HTTP. `sent` tells whether the request may have reached the
/// upstream (then the outcome is unknown: it may have been processed and billed).
struct TransportError {
  enum class Kind { connect_failed, write_failed, reset, timeout, protocol_error, body_too_large, cancelled };
  Kind kind = Kind::connect_failed;
  bool sent = false;
  std::string message;
};

/// The request method: model calls POST; stored-response reads and deletes (the Responses API's
/// GET / DELETE /v1/responses/{id}) pass through with theirs.
enum class Method { post, get, del };

struct OutgoingRequest {
  Target target;
  Method method = Method::post;
  std::vector<std::pair<std::string, std::string>> headers;  ///< besides Host/Content-Length/Content-Type
  std::string body;                                          ///< JSON
};

struct ClientOptions {
  milliseconds connect_timeout{5000};
  std::string ca_file;            ///< empty = system CA store
  bool verify = true;
  std::size_t max_idle_per_upstream = 64;
};

class Connection;

/// Lets the owner abort an exchange that is still connecting or waiting for its response head
/// (e.g. the client went away). Single-threaded: use on the exchange's thread.
struct CancelToken {
  bool cancelled = false;
  std::function<void()> hook;  ///< set by Exchange::start while it waits on a connection
  void cancel() {
    cancelled = true;
    if (auto h = std::move(hook)) h();
  }
};

/// Upstream connection figures summed over every worker thread's pool (process-wide, since
/// start; read for /metrics).
struct PoolCounters {
  std::uint64_t opened = 0;          ///< new connections (TCP connect, plus TLS handshake for https)
  std::uint64_t reused = 0;          ///< exchanges sent on an idle pooled connection
  std::uint64_t connect_failed = 0;  ///< connects that failed or timed out
  std::uint64_t connect_wait_us = 0;  ///< microseconds spent connecting, in total (resolve + connect + TLS)
  std::uint64_t idle = 0;            ///< idle connections held now
};
/// The current figures.
PoolCounters pool_counters();

/// Idle keep-alive connections of one worker thread. Not thread-safe: use from its io_context only.
class UpstreamPool {
 public:
  UpstreamPool(net::io_context& ioc, ClientOptions options);
  ~UpstreamPool();
  /// The pool of the calling worker thread (set by install()); nullptr elsewhere.
  static UpstreamPool* current();
  /// Makes `pool` the calling thread's pool.
  static void install(UpstreamPool* pool);

  net::io_context& io() { return ioc_; }
  const ClientOptions& options() const { return options_; }
  net::ssl::context& tls() { return tls_; }
  /// An idle live connection for `key`, or nullptr.
  std::unique_ptr<Connection> take(const std::string& key);
  /// Returns a reusable connection.
  void give_back(std::unique_ptr<Connection> c);

 private:
  net::io_context& ioc_;
  ClientOptions options_;
  net::ssl::context tls_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;
};

/// One upstream request/response exchange as the attempt loop uses it: the response head is in,
/// the body is read with read_all() or streamed with read_some(). An interface so that the
/// policy simulator (`tollgate simulate`) can replay scripted outcomes through the same attempt
/// loop without a network.
class UpstreamExchange {
 public:
  virtual ~UpstreamExchange() = default;
  virtual int status() const = 0;
  /// Header value or empty.
  virtual std::string_view header(std::string_view name) const = 0;
  /// Reads the whole body (at most `limit` bytes, else body_too_large) before `deadline`.
  virtual net::awaitable<std::expected<std::string, TransportError>> read_all(std::size_t limit, SteadyTime deadline) = 0;
  /// Appends the next available body bytes to `out` before `deadline`; returns how many were
  /// appended, 0 at the end of the body.
  virtual net::awaitable<std::expected<std::size_t, TransportError>> read_some(std::string& out, SteadyTime deadline) = 0;
  virtual bool done() const = 0;
  /// Aborts the exchange now (client gone, deadline): pending reads fail with `cancelled`.
  virtual void cancel() = 0;
  /// Releases the exchange (a pooled connection goes back to its pool when reusable).
  virtual void finish() = 0;
};

/// Starts upstream exchanges: connects (or reuses), sends the request and reads the response
/// head before `deadline`; `token` (optional) aborts the wait with a `cancelled` error.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual net::awaitable<std::expected<std::unique_ptr<UpstreamExchange>, TransportError>> start(
      const OutgoingRequest& req, SteadyTime deadline, CancelToken* token) = 0;
};

/// The network transport: Exchange::start on the calling worker thread's UpstreamPool.
class PooledTransport final : public Transport {
 public:
  net::awaitable<std::expected<std::unique_ptr<UpstreamExchange>, TransportError>> start(
      const OutgoingRequest& req, SteadyTime deadline, CancelToken* token) override;
};

/// One request/response exchange on a pooled connection. Created by start(); read the body
/// with read_all() or stream it with read_some(); destroy (or finish()) to release.
class Exchange final : public UpstreamExchange {
 public:
  ~Exchange() override;
  /// Connects (or reuses), sends the request and reads the response head before `deadline`.
  /// `token` (optional) aborts the wait: the result is then a `cancelled` error.
  static net::awaitable<std::expected<std::unique_ptr<Exchange>, TransportError>> start(
      UpstreamPool& pool, const OutgoingRequest& req, SteadyTime deadline, CancelToken* token = nullptr);

  int status() const override;
  std::string_view header(std::string_view name) const override;
  net::awaitable<std::expected<std::string, TransportError>> read_all(std::size_t limit, SteadyTime deadline) override;
  net::awaitable<std::expected<std::size_t, TransportError>> read_some(std::string& out, SteadyTime deadline) override;
  bool done() const override;
  /// Safe to call from a callback on the same thread.
  void cancel() override;
  /// Returns the connection to the pool when the body was read completely and keep-alive holds.
  void finish() override;

 private:
  struct State;
  explicit Exchange(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace tollgate::http
