// Base64 and data: URL decoding for the media carried inline in prompts (images, PDFs), on the
// gateway's own in-place reader (src/budget/inline_data.hpp): one decoder in the project.
#include "mock.hpp"
#include "operations.hpp"

#include <cctype>

#include "budget/inline_data.hpp"

namespace tollgate::mock {

std::optional<std::string> base64_decode(std::string_view in) {
  budget::Base64Reader reader(in);
  std::string out;
  out.resize(static_cast<std::size_t>(budget::base64_decoded_size_bound(in)));
  const std::size_t n = reader.read({reinterpret_cast<std::uint8_t*>(out.data()), out.size()});
  if (reader.failed()) return std::nullopt;
  out.resize(n);
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16) |
                   (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                   static_cast<unsigned char>(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(n >> k) & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> data_url_decode(std::string_view url, std::string* media_type) {
  while (!url.empty() && std::isspace(static_cast<unsigned char>(url.front()))) url.remove_prefix(1);
  const auto parts = budget::parse_base64_data_url(url);
  if (!parts) return std::nullopt;
  if (media_type) {
    media_type->clear();
    for (char ch : parts->media_type) *media_type += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return base64_decode(parts->base64);
}

}  // namespace tollgate::mock
