#pragma once
/// Where Tollgate's shared state lives when scaled out: the Redis server named by LiteLLM's
/// `router_settings.redis_host` / `redis_port` / `redis_password`, or `redis_url`
/// (docs/scale_out.md). Parsed once by the config loader, so a bad value is a `config check` error.

#include <expected>
#include <string>

namespace tollgate::config {

/// A Redis server to connect to.
struct RedisEndpoint {
  std::string host;      ///< empty = no Redis configured (one instance, in-process ledger)
  int port = 6379;
  std::string username;  ///< ACL user (Redis 6+); empty = the default user
  std::string password;  ///< empty = no AUTH
  int db = 0;            ///< SELECT index, 0..1000
  /// Whether a Redis server is configured.
  [[nodiscard]] bool configured() const noexcept { return !host.empty(); }
};

/// Parses `redis://[[user]:password@]host[:port][/db]`. Errors (a message for the config error):
/// not a URL, another scheme (`rediss://`: TLS to Redis is not built in), no host, a port outside
/// 1..65535, a path that is not a database number.
std::expected<RedisEndpoint, std::string> parse_redis_url(const std::string& url);

}  // namespace tollgate::config
