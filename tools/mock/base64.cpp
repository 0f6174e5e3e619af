// Base64 and data: URL decoding for the media carried inline in prompts (images, PDFs), on the
// gateway's own in-place reader (src/budget/inline_data.hpp): one decoder in the project.
#include "mock.hpp"

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

std::string base64_encode(std::string_view in) {
  static constexpr char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const auto b = [&](std::size_t k) { return i + k < in.size() ? static_cast<unsigned char>(in[i + k]) : 0u; };
    const unsigned v = (b(0) << 16) | (b(1) << 8) | b(2);
    out.push_back(abc[(v >> 18) & 63]);
    out.push_back(abc[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? abc[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < in.size() ? abc[v & 63] : '=');
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
