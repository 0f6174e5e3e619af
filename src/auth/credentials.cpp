#include "auth/credentials.hpp"

#include <cctype>

namespace tollgate::auth {

namespace {
std::string_view trim(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  return v;
}
/// "Bearer <key>" → "<key>" (scheme case-insensitive); other values unchanged.
std::string_view strip_bearer(std::string_view v) {
  v = trim(v);
  constexpr std::string_view want = "bearer ";
  // "Bearer" with no key is no key (another header may carry one).
  if (v.size() == want.size() - 1) {
    bool scheme_only = true;
    for (std::size_t i = 0; i < v.size(); ++i)
      scheme_only = scheme_only && std::tolower(static_cast<unsigned char>(v[i])) == want[i];
    if (scheme_only) return {};
  }
  if (v.size() <= want.size()) return v;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(v[i])) != want[i]) return v;
  return trim(v.substr(want.size()));
}
}  // namespace

std::string_view presented_key(const HeaderLookup& header) {
  for (std::string_view name : {"authorization", "x-litellm-api-key", "x-api-key", "api-key"}) {
    auto v = strip_bearer(header(name));
    if (!v.empty()) return v;
  }
  return {};
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace tollgate::auth
