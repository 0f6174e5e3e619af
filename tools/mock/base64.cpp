// Base64 and data: URL decoding for the media carried inline in prompts (images, PDFs).
#include "mock.hpp"

#include <array>
#include <cctype>

namespace tollgate::mock {

namespace {

constexpr std::uint8_t kInvalid = 0xff;
constexpr std::uint8_t kSpace = 0xfe;
constexpr std::uint8_t kPad = 0xfd;

// Sextet value of every byte: both the standard (+/) and the URL-safe (-_) alphabets.
constexpr std::array<std::uint8_t, 256> make_table() {
  std::array<std::uint8_t, 256> t{};
  for (auto& v : t) v = kInvalid;
  for (int i = 0; i < 26; ++i) {
    t[static_cast<std::size_t>('A' + i)] = static_cast<std::uint8_t>(i);
    t[static_cast<std::size_t>('a' + i)] = static_cast<std::uint8_t>(26 + i);
  }
  for (int i = 0; i < 10; ++i) t[static_cast<std::size_t>('0' + i)] = static_cast<std::uint8_t>(52 + i);
  t['+'] = t['-'] = 62;
  t['/'] = t['_'] = 63;
  t[' '] = t['\t'] = t['\r'] = t['\n'] = t['\f'] = t['\v'] = kSpace;
  t['='] = kPad;
  return t;
}

constexpr auto kTable = make_table();

}  // namespace

std::optional<std::string> base64_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size() / 4 * 3 + 3);
  std::uint32_t acc = 0;
  int have = 0;  // sextets in acc
  bool padded = false;
  for (unsigned char ch : in) {
    std::uint8_t v = kTable[ch];
    if (v == kSpace) continue;
    if (v == kInvalid) return std::nullopt;
    if (v == kPad) {
      padded = true;
      continue;
    }
    if (padded) return std::nullopt;  // data after padding
    acc = (acc << 6) | v;
    if (++have == 4) {
      out += static_cast<char>((acc >> 16) & 0xff);
      out += static_cast<char>((acc >> 8) & 0xff);
      out += static_cast<char>(acc & 0xff);
      acc = 0;
      have = 0;
    }
  }
  // A tail of 2 or 3 sextets holds 1 or 2 bytes; a single sextet cannot be decoded.
  if (have == 1) return std::nullopt;
  if (have == 2) {
    out += static_cast<char>((acc >> 4) & 0xff);
  } else if (have == 3) {
    out += static_cast<char>((acc >> 10) & 0xff);
    out += static_cast<char>((acc >> 2) & 0xff);
  }
  return out;
}

std::optional<std::string> data_url_decode(std::string_view url, std::string* media_type) {
  // Leading whitespace is tolerated, the scheme is case-insensitive.
  while (!url.empty() && std::isspace(static_cast<unsigned char>(url.front()))) url.remove_prefix(1);
  if (url.size() < 5) return std::nullopt;
  for (std::size_t i = 0; i < 5; ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != "data:"[i]) return std::nullopt;
  }
  url.remove_prefix(5);
  auto comma = url.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  std::string_view header = url.substr(0, comma);
  std::string lower;
  lower.reserve(header.size());
  for (char ch : header) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!lower.ends_with(";base64")) return std::nullopt;
  if (media_type) *media_type = lower.substr(0, lower.find(';'));
  return base64_decode(url.substr(comma + 1));
}

}  // namespace tollgate::mock
