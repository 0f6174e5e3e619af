#include "config/redis_endpoint.hpp"

#include <boost/url/parse.hpp>
#include <charconv>

namespace tollgate::config {

std::expected<RedisEndpoint, std::string> parse_redis_url(const std::string& url) {
  auto u = boost::urls::parse_uri(url);
  if (!u) return std::unexpected("redis_url is not a URL (" + u.error().message() + ")");
  if (u->scheme() == "rediss") return std::unexpected("rediss:// (TLS to Redis) is not supported; use redis://");
  if (u->scheme() != "redis") return std::unexpected("redis_url must start with redis://");
  if (!u->has_authority() || u->host().empty()) return std::unexpected("redis_url has no host");
  RedisEndpoint e;
  e.host = u->host();
  if (u->has_port()) {
    const std::string port = u->port();
    int v = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || p != port.data() + port.size() || v < 1 || v > 65535)
      return std::unexpected("redis_url has an invalid port '" + port + "'");
    e.port = v;
  }
  if (u->has_userinfo()) {
    e.username = u->user();
    e.password = u->password();
  }
  const std::string path = u->path();
  if (!path.empty() && path != "/") {
    const std::string db = path.substr(1);
    int v = -1;
    auto [p, ec] = std::from_chars(db.data(), db.data() + db.size(), v);
    if (ec != std::errc() || p != db.data() + db.size() || v < 0 || v > 1000)
      return std::unexpected("redis_url path must be a database number, e.g. redis://host:6379/0");
    e.db = v;
  }
  return e;
}

}  // namespace tollgate::config
