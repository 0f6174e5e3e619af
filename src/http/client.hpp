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
#include <boost/beast/http/fields.hpp>

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

struct OutgoingRequest {
  Target target;
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

/// One request/response exchange on a pooled connection. Created by start(); read the body
/// with read_all() or stream it with read_some(); destroy (or finish()) to release.
class Exchange {
 public:
  ~Exchange();
  /// Connects (or reuses), sends the request and reads the response head before `deadline`.
  /// `token` (optional) aborts the wait: the result is then a `cancelled` error.
  static net::awaitable<std::expected<std::unique_ptr<Exchange>, TransportError>> start(
      UpstreamPool& pool, const OutgoingRequest& req, SteadyTime deadline, CancelToken* token = nullptr);

  int status() const;
  const boost::beast::http::fields& headers() const;
  /// Header value or empty.
  std::string_view header(std::string_view name) const;

  /// Reads the whole body (at most `limit` bytes, else body_too_large) before `deadline`.
  net::awaitable<std::expected<std::string, TransportError>> read_all(std::size_t limit, SteadyTime deadline);
  /// Appends the next available body bytes to `out` before `deadline`; returns how many were
  /// appended, 0 at the end of the body.
  net::awaitable<std::expected<std::size_t, TransportError>> read_some(std::string& out, SteadyTime deadline);
  bool done() const;
  /// Aborts the exchange now (client gone, deadline): pending reads fail with `cancelled`.
  /// Safe to call from a callback on the same thread.
  void cancel();
  /// Returns the connection to the pool when the body was read completely and keep-alive holds.
  void finish();

 private:
  struct State;
  explicit Exchange(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace tollgate::http
