#pragma once
// The real-server fixture of the server tests (drain, connection limits): a Server on
// 127.0.0.1:0 with a test handler, a blocking HTTP/1.1 client on one connection, and a bounded
// wait for a condition. Waits are for conditions, bounded generously; no test asserts a timing.
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "http/server.hpp"

namespace tollgate::http::testing {

using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

/// The server's error body: {"status":N,"message":"..."}.
inline std::string error_body(int status, std::string_view message) {
  return "{\"status\":" + std::to_string(status) + ",\"message\":\"" + std::string(message) + "\"}";
}

/// Polls `pred` every 2 ms until it holds (true) or `limit` passes (false).
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  const auto end = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

/// A server on 127.0.0.1:0 running `handler` on `threads` workers, started on construction,
/// stopped and joined on destruction.
struct TestServer {
  TestServer(ServerLimits limits, Handler handler, int threads) : server(limits, std::move(handler), error_body, threads) {
    port = server.listen("127.0.0.1", 0);
    server.start(nullptr);
  }
  ~TestServer() {
    server.stop();
    server.join();
  }
  ConnectionStats stats() const { return server.connection_stats(); }
  Server server;
  unsigned short port = 0;
};

/// A blocking HTTP/1.1 client on one connection to 127.0.0.1:`port`; reads give up after 10 s.
struct Client {
  explicit Client(unsigned short port) {
    sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    timeval tv{10, 0};
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  /// Sends GET `target` (keep-alive) without reading the answer.
  void send(const std::string& target) {
    bhttp::request<bhttp::empty_body> req{bhttp::verb::get, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.keep_alive(true);
    bhttp::write(sock, req);
  }
  /// The next response; nullopt when the connection ended (or 10 s passed) instead.
  std::optional<bhttp::response<bhttp::string_body>> read() {
    bhttp::response<bhttp::string_body> res;
    boost::system::error_code ec;
    bhttp::read(sock, buf, res, ec);
    if (ec) return std::nullopt;
    return res;
  }
  /// send() then read().
  std::optional<bhttp::response<bhttp::string_body>> get(const std::string& target) {
    send(target);
    return read();
  }
  /// True when the server closed the connection (EOF or reset) within 10 s, sending nothing.
  bool closed() {
    char c;
    boost::system::error_code ec;
    sock.read_some(net::buffer(&c, 1), ec);
    return ec == net::error::eof || ec == net::error::connection_reset;
  }
  net::io_context ioc;
  tcp::socket sock{ioc};
  beast::flat_buffer buf;
};

}  // namespace tollgate::http::testing
