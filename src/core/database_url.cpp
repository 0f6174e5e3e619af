#include "core/database_url.hpp"

#include <boost/url/parse.hpp>

namespace tollgate::core {
namespace {

// libpq's host list "h1:5432,h2,[::1]:5433": boost::url takes a non-numeric port as part of the
// host name, so each host's port is checked here.
bool valid_ports(std::string_view authority) {
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  while (!authority.empty()) {
    const auto comma = authority.find(',');
    std::string_view host = authority.substr(0, comma);
    authority = comma == std::string_view::npos ? std::string_view() : authority.substr(comma + 1);
    if (host.starts_with('[')) {
      const auto close = host.find(']');
      if (close == std::string_view::npos) return false;
      host.remove_prefix(close + 1);
      if (host.empty()) continue;
      if (!host.starts_with(':')) return false;
    }
    const auto colon = host.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view port = host.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    int n = 0;
    for (char c : port) {
      if (c < '0' || c > '9') return false;
      n = n * 10 + (c - '0');
    }
    if (n < 1 || n > 65535) return false;
  }
  return true;
}

}  // namespace

std::expected<DatabaseUrl, std::string> parse_database_url(std::string_view url) {
  if (url.empty()) return std::unexpected(std::string("database_url is empty"));
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return DatabaseUrl{DatabaseUrl::Kind::sqlite, std::string(url)};
  const std::string_view scheme = url.substr(0, scheme_end);
  if (scheme == "sqlite") {
    // sqlite:///abs (path "/abs") or sqlite://relative: not RFC 3986 authority syntax, taken verbatim.
    std::string path(url.substr(scheme_end + 3));
    if (path.empty()) return std::unexpected(std::string("the sqlite database path is empty"));
    return DatabaseUrl{DatabaseUrl::Kind::sqlite, std::move(path)};
  }
  if (scheme == "postgresql" || scheme == "postgres") {
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed)
      return std::unexpected("cannot parse the " + std::string(scheme) + ":// URL " + redact_database_url(url) + ": " +
                             parsed.error().message());
    if (!valid_ports(parsed->encoded_authority()))
      return std::unexpected("cannot parse the " + std::string(scheme) + ":// URL " + redact_database_url(url) +
                             ": a port must be a number from 1 to 65535");
    return DatabaseUrl{DatabaseUrl::Kind::postgres, std::string(url)};
  }
  return std::unexpected("unsupported database_url scheme '" + std::string(scheme) +
                         "://' (sqlite:///path/to/tollgate.db, a path, or postgresql://user:pass@host:port/db)");
}

std::string redact_database_url(std::string_view url) {
  // By hand rather than with boost::url: an unparsable URL must not leak its password either.
  std::string out(url);
  const auto scheme_end = out.find("://");
  if (scheme_end == std::string::npos) return out;
  const auto start = scheme_end + 3;
  const auto query = out.find('?', start);
  const auto at = out.rfind('@', query == std::string::npos ? std::string::npos : query);
  if (at == std::string::npos || at < start) return out;
  const auto colon = out.find(':', start);
  if (colon == std::string::npos || colon > at) return out;
  out.replace(colon + 1, at - colon - 1, "***");
  return out;
}

}  // namespace tollgate::core
