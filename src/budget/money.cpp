#include "budget/money.hpp"

#include <charconv>
#include <cstddef>

namespace tollgate::budget {
namespace {

// 128-bit intermediates; __extension__ keeps -Wpedantic quiet about the GNU type.
__extension__ typedef __int128 i128;

constexpr int kMaxExponentMagnitude = 400;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Parses a non-negative decimal "D × 10^e" and returns ceil(value × 10^scale) as int64.
// Works on the digit string directly, so no precision is lost and nothing goes through a double.
std::expected<std::int64_t, std::string> parse_scaled(std::string_view input, int scale, const char* what) {
  const std::string_view text = trim(input);
  auto fail = [&](std::string_view why) {
    return std::unexpected(std::string(what) + " '" + std::string(input) + "': " + std::string(why));
  };
  if (text.empty()) return fail("empty");

  std::size_t i = 0;
  if (text[i] == '-') return fail("must not be negative");
  if (text[i] == '+') ++i;

  std::string digits;  // mantissa digits, leading zeros dropped
  long long exp10 = 0; // value = digits × 10^exp10
  bool any_digit = false;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    any_digit = true;
    if (!(digits.empty() && text[i] == '0')) digits.push_back(text[i]);
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      any_digit = true;
      --exp10;
      if (!(digits.empty() && text[i] == '0')) digits.push_back(text[i]);
    }
  }
  if (!any_digit) return fail("not a decimal number");
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative_exp = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative_exp = text[i++] == '-';
    if (i >= text.size() || !is_digit(text[i])) return fail("malformed exponent");
    long long e = 0;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      e = e * 10 + (text[i] - '0');
      if (e > kMaxExponentMagnitude) return fail("exponent out of range");
    }
    exp10 += negative_exp ? -e : e;
  }
  if (i != text.size()) return fail("unexpected character '" + std::string(1, text[i]) + "'");
  if (digits.empty()) return 0;  // zero, whatever the exponent

  // result = ceil(digits × 10^k)
  const long long k = exp10 + scale;
  const long long n = static_cast<long long>(digits.size());
  const long long kept = k >= 0 ? n : n + k;  // digits that land at or above the unit
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  i128 acc = 0;
  for (long long d = 0; d < kept && d < n; ++d) {
    acc = acc * 10 + (digits[static_cast<std::size_t>(d)] - '0');
    if (acc > max) return fail("too large");
  }
  bool round_up = false;
  for (long long d = kept < 0 ? 0 : kept; d < n; ++d) {
    if (digits[static_cast<std::size_t>(d)] != '0') round_up = true;
  }
  for (long long z = 0; z < k; ++z) {
    acc *= 10;
    if (acc > max) return fail("too large");
  }
  if (round_up) ++acc;
  if (acc > max) return fail("too large");
  return static_cast<std::int64_t>(acc);
}

// Formats |amount| / 10^scale exactly, trailing fractional zeros trimmed.
std::string format_scaled(std::int64_t amount, int scale) {
  const bool negative = amount < 0;
  const std::uint64_t magnitude =
      negative ? static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(amount) : static_cast<std::uint64_t>(amount);
  std::uint64_t unit = 1;
  for (int s = 0; s < scale; ++s) unit *= 10;
  const std::uint64_t whole = magnitude / unit;
  std::uint64_t frac = magnitude % unit;

  // "-", 20 digits, ".", at most 19 fractional digits (unit fits in 64 bits).
  char buf[48];
  char* p = buf;
  if (negative) *p++ = '-';
  p = std::to_chars(p, buf + sizeof buf, whole).ptr;
  if (frac != 0) {
    *p++ = '.';
    char* const digits = p;
    p += scale;
    for (char* d = p; d != digits;) {
      *--d = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    while (p[-1] == '0') --p;  // frac != 0: a non-zero digit stops it
  }
  return std::string(buf, p);
}

}  // namespace

std::expected<Nanos, std::string> parse_dollars(std::string_view decimal) {
  return parse_scaled(decimal, 9, "dollar amount");
}

std::expected<PerTokenPrice, std::string> parse_price_per_token(std::string_view decimal) {
  auto picos = parse_scaled(decimal, 12, "price per token");
  if (!picos) return std::unexpected(std::move(picos.error()));
  return PerTokenPrice{*picos};
}

std::string format_dollars(Nanos amount) { return format_scaled(amount, 9); }

std::string format_price_per_token(PerTokenPrice price) { return format_scaled(price.picos, 12); }

double to_dollars_for_display(Nanos amount) noexcept {
  // Split so that large amounts keep their nano-dollar digits as well as a double can.
  return static_cast<double>(amount / kNanosPerDollar) +
         static_cast<double>(amount % kNanosPerDollar) / static_cast<double>(kNanosPerDollar);
}

Nanos cost(std::int64_t tokens, PerTokenPrice price) noexcept {
  if (tokens <= 0 || price.picos <= 0) return 0;
  const i128 picos = static_cast<i128>(tokens) * static_cast<i128>(price.picos);  // < 2^126: no overflow
  const i128 nanos = (picos + (kPicosPerNano - 1)) / kPicosPerNano;                 // ceil
  return nanos > kMaxNanos ? kMaxNanos : static_cast<Nanos>(nanos);
}

Nanos saturating_add(Nanos a, Nanos b) noexcept {
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  return a > kMaxNanos - b ? kMaxNanos : a + b;
}

}  // namespace tollgate::budget
