#include "routing/backoff.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

namespace tollgate::routing {

milliseconds backoff_delay(const BackoffPolicy& p, int retry, std::optional<milliseconds> hint, double r) {
  const int exponent = std::clamp(retry - 1, 0, 30);
  const long long base = p.initial.count() << std::min(exponent, 20);
  const long long capped = std::min<long long>(base, p.max.count());
  const double factor = 1.0 - p.jitter * std::clamp(r, 0.0, 1.0);
  milliseconds d{static_cast<long long>(std::llround(static_cast<double>(capped) * factor))};
  if (hint && *hint > d) d = *hint;
  return std::max(d, p.minimum);
}

std::optional<milliseconds> parse_retry_after_ms(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  if (v.empty()) return std::nullopt;
  double ms = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
  if (ec != std::errc{} || p != v.data() + v.size() || !(ms >= 0) || ms > 1e10) return std::nullopt;
  return milliseconds{static_cast<long long>(std::ceil(ms))};
}

std::optional<milliseconds> parse_retry_after(std::string_view v, long long now) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  if (v.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(v.front()))) {
    double s = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
    if (ec != std::errc{} || p != v.data() + v.size() || !(s >= 0) || s > 1e8) return std::nullopt;
    return milliseconds{static_cast<long long>(std::ceil(s * 1000.0))};
  }
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
  std::tm tm{};
  std::string s(v);
  if (!strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm)) return std::nullopt;
  const long long when = timegm(&tm);
  return milliseconds{std::max(0LL, when - now) * 1000};
}

}  // namespace tollgate::routing
