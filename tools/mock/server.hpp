#pragma once
// tollgate-mock HTTP server: one accept loop per io_context, one coroutine per connection.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>

namespace tollgate::mock {

struct ServerConfig {
  std::int64_t default_latency_ms = 0;  ///< --latency-ms: delay before headers when unscripted
};

/// Accepts connections forever on `acceptor`, spawning a session for each on the acceptor's
/// executor. Never throws out; returns when the acceptor is closed.
boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor,
                                         ServerConfig cfg);

}  // namespace tollgate::mock
