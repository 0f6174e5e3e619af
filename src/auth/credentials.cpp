#include "auth/credentials.hpp"

#include <cctype>

namespace tollgate::auth {

std::string_view presented_key(const HeaderLookup& header) {
  auto auth = header("authorization");
  while (!auth.empty() && auth.front() == ' ') auth.remove_prefix(1);
  if (auth.size() > 7) {
    std::string_view scheme = auth.substr(0, 7);
    bool bearer = true;
    constexpr std::string_view want = "bearer ";
    for (std::size_t i = 0; i < 7; ++i)
      if (std::tolower(static_cast<unsigned char>(scheme[i])) != want[i]) bearer = false;
    if (bearer) {
      auth.remove_prefix(7);
      while (!auth.empty() && auth.front() == ' ') auth.remove_prefix(1);
      while (!auth.empty() && auth.back() == ' ') auth.remove_suffix(1);
      if (!auth.empty()) return auth;
    }
  }
  for (std::string_view name : {"x-litellm-api-key", "x-api-key", "api-key"}) {
    auto v = header(name);
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
