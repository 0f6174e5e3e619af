#include "providers/path_segment.hpp"

#include <cctype>

namespace tollgate::providers {

std::string path_segment(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  const bool dots = s == "." || s == "..";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (!dots && (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

}  // namespace tollgate::providers
