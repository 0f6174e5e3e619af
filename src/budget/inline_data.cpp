#include "budget/inline_data.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace tollgate::budget {
namespace {

constexpr std::uint8_t kInvalid = 0xFF;
constexpr std::uint8_t kSpace = 0xFE;
constexpr std::uint8_t kPad = 0xFD;

// Character → 6-bit value; both the standard (+/) and the URL-safe (-_) alphabets are accepted.
constexpr std::array<std::uint8_t, 256> make_table() {
  std::array<std::uint8_t, 256> t{};
  for (auto& v : t) v = kInvalid;
  for (int i = 0; i < 26; ++i) {
    t[static_cast<std::size_t>('A' + i)] = static_cast<std::uint8_t>(i);
    t[static_cast<std::size_t>('a' + i)] = static_cast<std::uint8_t>(26 + i);
  }
  for (int i = 0; i < 10; ++i) t[static_cast<std::size_t>('0' + i)] = static_cast<std::uint8_t>(52 + i);
  t['+'] = 62;
  t['-'] = 62;
  t['/'] = 63;
  t['_'] = 63;
  t['='] = kPad;
  for (char c : {' ', '\t', '\r', '\n', '\f', '\v'}) t[static_cast<unsigned char>(c)] = kSpace;
  return t;
}
constexpr auto kTable = make_table();

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::optional<DataUrl> parse_base64_data_url(std::string_view url) noexcept {
  // Leading whitespace is tolerated (lenient); "data:" is case-insensitive (RFC 2397 / URL scheme).
  while (!url.empty() && (url.front() == ' ' || url.front() == '\t' || url.front() == '\n' || url.front() == '\r')) {
    url.remove_prefix(1);
  }
  if (url.size() < 5 || !iequals(url.substr(0, 5), "data:")) return std::nullopt;
  url.remove_prefix(5);
  const auto comma = url.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  const std::string_view header = url.substr(0, comma);
  // The last parameter must be ";base64".
  const auto semi = header.rfind(';');
  if (semi == std::string_view::npos || !iequals(header.substr(semi + 1), "base64")) return std::nullopt;
  const std::string_view before = header.substr(0, semi);
  const auto first_param = before.find(';');
  return DataUrl{before.substr(0, first_param), url.substr(comma + 1)};
}

std::int64_t base64_decoded_size_bound(std::string_view base64) noexcept {
  std::size_t n = base64.size();
  while (n > 0 && base64[n - 1] == '=') --n;
  const auto chars = static_cast<std::uint64_t>(n);
  return static_cast<std::int64_t>(chars / 4 * 3 + (chars % 4) * 3 / 4);
}

bool Base64Reader::refill() noexcept {
  pending_len_ = 0;
  pending_pos_ = 0;
  if (done_) return false;
  std::uint32_t acc = 0;
  int got = 0;
  while (got < 4 && pos_ < in_.size()) {
    const std::uint8_t v = kTable[static_cast<unsigned char>(in_[pos_])];
    if (v < 64) {
      acc = (acc << 6) | v;
      ++got;
      ++pos_;
    } else if (v == kSpace) {
      ++pos_;
    } else {
      if (v == kInvalid) failed_ = true;
      done_ = true;
      break;
    }
  }
  if (pos_ >= in_.size()) done_ = true;
  // 4 characters → 3 bytes, 3 → 2, 2 → 1, 1 → nothing (a stray character carries < 8 bits).
  switch (got) {
    case 4:
      pending_[0] = static_cast<std::uint8_t>(acc >> 16);
      pending_[1] = static_cast<std::uint8_t>(acc >> 8);
      pending_[2] = static_cast<std::uint8_t>(acc);
      pending_len_ = 3;
      break;
    case 3:
      acc <<= 6;
      pending_[0] = static_cast<std::uint8_t>(acc >> 16);
      pending_[1] = static_cast<std::uint8_t>(acc >> 8);
      pending_len_ = 2;
      done_ = true;
      break;
    case 2:
      acc <<= 12;
      pending_[0] = static_cast<std::uint8_t>(acc >> 16);
      pending_len_ = 1;
      done_ = true;
      break;
    default:
      done_ = true;
      break;
  }
  return pending_len_ > 0;
}

std::optional<std::uint8_t> Base64Reader::next() noexcept {
  if (pending_pos_ >= pending_len_ && !refill()) return std::nullopt;
  ++produced_;
  return pending_[pending_pos_++];
}

std::size_t Base64Reader::read(std::span<std::uint8_t> out) noexcept {
  std::size_t n = 0;
  for (;;) {
    // Drain a partially consumed group first.
    while (n < out.size() && pending_pos_ < pending_len_) out[n++] = pending_[pending_pos_++];
    if (n == out.size()) break;
    // Fast path: whole groups of four alphabet characters straight into the output.
    while (!done_ && out.size() - n >= 3 && in_.size() - pos_ >= 4) {
      const std::uint8_t a = kTable[static_cast<unsigned char>(in_[pos_])];
      const std::uint8_t b = kTable[static_cast<unsigned char>(in_[pos_ + 1])];
      const std::uint8_t c = kTable[static_cast<unsigned char>(in_[pos_ + 2])];
      const std::uint8_t d = kTable[static_cast<unsigned char>(in_[pos_ + 3])];
      if ((a | b | c | d) >= 64) break;  // whitespace, padding or an invalid character: slow path
      const std::uint32_t acc = (std::uint32_t{a} << 18) | (std::uint32_t{b} << 12) | (std::uint32_t{c} << 6) | d;
      out[n] = static_cast<std::uint8_t>(acc >> 16);
      out[n + 1] = static_cast<std::uint8_t>(acc >> 8);
      out[n + 2] = static_cast<std::uint8_t>(acc);
      n += 3;
      pos_ += 4;
    }
    if (n == out.size()) break;
    if (!refill()) break;  // slow path: one group, skipping whitespace
  }
  produced_ += n;
  return n;
}

bool Base64Reader::skip(std::uint64_t n) noexcept {
  std::array<std::uint8_t, 768> scratch{};
  while (n > 0) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(n, scratch.size()));
    const std::size_t got = read(std::span<std::uint8_t>(scratch.data(), want));
    n -= got;
    if (got < want) return false;
  }
  return true;
}

}  // namespace tollgate::budget
