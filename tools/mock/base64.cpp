// Base64 and data: URL decoding for the media carried inline in prompts (images, PDFs), on the
// gateway's own in-place reader and encoder (src/budget/inline_data.hpp): one codec in the project.
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

std::string base64_encode(std::string_view bytes) { return budget::base64_encode(bytes); }

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
