#include "core/json_out.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

namespace tollgate::core {

namespace {

/// Bytes a JSON string cannot hold as they are: control characters, '"' and '\\'.
constexpr auto kEscaped = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t['"'] = t['\\'] = true;
  return t;
}();

/// Index of the first byte of `s` at or after `i` that must be escaped, or s.size(). Eight bytes
/// at a time (SWAR): a byte below 0x20, or equal to '"' or '\\', sets its high bit in `hit`.
std::size_t next_escaped(std::string_view s, std::size_t i) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  while (i + 8 <= s.size()) {
    std::uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    const auto zero_in = [&](std::uint64_t v) { return (v - ones) & ~v & highs; };
    const std::uint64_t hit = ((x - ones * 0x20) & ~x & highs) | zero_in(x ^ (ones * '"')) | zero_in(x ^ (ones * '\\'));
    if (hit != 0) break;  // the byte-wise scan below finds which one
    i += 8;
  }
  while (i < s.size() && !kEscaped[static_cast<unsigned char>(s[i])]) ++i;
  return i;
}

/// Appends, in one write, a comma if `comma`, then `"` + s + `"` (s needs no escaping), then a
/// colon if `colon`.
/// (The new length is returned as computed: g++ 12's libstdc++ passes the grown capacity, not the
/// size asked, as the operation's second argument.)
void append_plain(std::string& out, bool comma, std::string_view s, bool colon) {
  if (!s.empty() && std::less_equal<>{}(out.data(), s.data()) && std::less<>{}(s.data(), out.data() + out.capacity())) {
    // Text of `out` itself: growing frees it before the copy below could read it.
    const std::string copy(s);
    append_plain(out, comma, copy, colon);
    return;
  }
  const std::size_t at = out.size(), len = at + (comma ? 1 : 0) + s.size() + 2 + (colon ? 1 : 0);
  out.resize_and_overwrite(len, [&](char* p, std::size_t) {
    char* w = p + at;
    if (comma) *w++ = ',';
    *w++ = '"';
    if (!s.empty()) std::memcpy(w, s.data(), s.size());
    w += s.size();
    *w++ = '"';
    if (colon) *w = ':';
    return len;
  });
}

}  // namespace

bool json_safe(std::string_view s) noexcept { return next_escaped(s, 0) == s.size(); }

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::size_t i = next_escaped(s, 0);
  if (i == s.size()) {
    append_plain(out, false, s, false);
    return;
  }
  out.push_back('"');
  std::size_t start = 0;
  for (; i < s.size(); i = next_escaped(s, start)) {
    const auto c = static_cast<unsigned char>(s[i]);
    out.append(s.data() + start, i - start);
    start = i + 1;
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default:
        out.append("\\u00");
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 0xF]);
    }
  }
  out.append(s.data() + start, s.size() - start);
  out.push_back('"');
}

namespace {

template <class T>
void append_number(std::string& out, T v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace

JsonOut& JsonOut::key(std::string_view k) {
  if (json_safe(k)) {
    append_plain(out_, !first_, k, true);
  } else {
    separate();
    append_json_string(out_, k);
    out_.push_back(':');
  }
  first_ = true;  // the value that follows takes no comma
  return *this;
}

JsonOut& JsonOut::value(std::string_view s) {
  if (json_safe(s)) {
    append_plain(out_, !first_, s, false);
    first_ = false;
    return *this;
  }
  separate();
  append_json_string(out_, s);
  return *this;
}

JsonOut& JsonOut::value(std::int64_t n) {
  separate();
  append_number(out_, n);
  return *this;
}

JsonOut& JsonOut::value(std::uint64_t n) {
  separate();
  append_number(out_, n);
  return *this;
}

JsonOut& JsonOut::value(double d) {
  if (!std::isfinite(d)) return null();
  separate();
  append_number(out_, d);
  return *this;
}

JsonOut& JsonOut::value(bool b) {
  separate();
  out_.append(b ? "true" : "false");
  return *this;
}

JsonOut& JsonOut::null() {
  separate();
  out_.append("null");
  return *this;
}

JsonOut& JsonOut::raw(std::string_view json) {
  separate();
  out_.append(json);
  return *this;
}

JsonOut& JsonOut::open(char c) {
  separate();
  out_.push_back(c);
  first_ = true;
  return *this;
}

JsonOut& JsonOut::close(char c) {
  out_.push_back(c);
  first_ = false;
  return *this;
}

}  // namespace tollgate::core
