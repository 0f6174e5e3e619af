#pragma once
/// The HTTP server's connection figures (http::Server::connection_stats), apart from server.hpp
/// so that readers (metrics, /tollgate/stats) need no Asio headers.

#include <cstddef>
#include <cstdint>

namespace tollgate::http {

/// Connection figures over all workers (Server::connection_stats), read from any thread.
struct ConnectionStats {
  std::size_t open = 0;              ///< client connections open now (refusals being answered included)
  std::size_t limit = 0;             ///< ServerLimits::max_connections (0 = none)
  std::uint64_t accepted = 0;        ///< connections accepted since the start
  std::uint64_t evicted = 0;         ///< idle connections closed to make room at the limit
  std::uint64_t refused_per_ip = 0;  ///< answered 429: their IP was at max_connections_per_ip
  std::uint64_t accept_errors = 0;   ///< accept() failures (out of descriptors...), each followed by a 50 ms pause
  std::uint64_t backpressure = 0;    ///< times the limit was reached with nothing idle to evict (accepting paused)
};

}  // namespace tollgate::http
