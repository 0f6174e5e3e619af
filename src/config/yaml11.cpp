#include "config/yaml11.hpp"

#include <yaml-cpp/yaml.h>

#include <limits>

namespace tollgate::config {
namespace {

/// Digits of `base` and underscores, at least one digit; accumulates into `out` (false on
/// overflow or a bad character).
bool digits(std::string_view s, int base, std::uint64_t& out) {
  bool any = false;
  for (const char c : s) {
    if (c == '_') continue;
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0 || d >= base) return false;
    if (out > (std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base))
      return false;
    out = out * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    any = true;
  }
  return any;
}

std::optional<std::int64_t> signed_value(bool negative, std::uint64_t v) {
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!negative) {
    if (v > max) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }
  if (v > max + 1) return std::nullopt;
  return v == max + 1 ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(v);
}

bool is_float_text(std::string_view s) {
  // PyYAML: [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)? | [-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
  std::size_t i = 0;
  const auto run = [&](bool underscores) {
    const auto from = i;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || (underscores && s[i] == '_'))) ++i;
    return i > from;
  };
  const bool whole = i < s.size() && s[i] >= '0' && s[i] <= '9' && run(true);
  if (i >= s.size() || s[i] != '.') return false;
  ++i;
  const bool frac = run(true);
  if (!whole && !frac) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i >= s.size() || (s[i] != '+' && s[i] != '-')) return false;
    ++i;
    if (!run(false)) return false;
  }
  return i == s.size();
}

}  // namespace

std::optional<std::int64_t> yaml11_int(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() == '_') return std::nullopt;
  std::uint64_t v = 0;
  if (s.starts_with("0b")) return digits(s.substr(2), 2, v) ? signed_value(negative, v) : std::nullopt;
  if (s.starts_with("0x")) return digits(s.substr(2), 16, v) ? signed_value(negative, v) : std::nullopt;
  if (s.find(':') != std::string_view::npos) {
    // Base 60: [1-9][0-9_]*(:[0-5]?[0-9])+
    if (s.front() < '1' || s.front() > '9') return std::nullopt;
    std::uint64_t total = 0;
    std::size_t start = 0;
    bool first = true;
    while (start <= s.size()) {
      const auto colon = s.find(':', start);
      const auto part = s.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
      std::uint64_t p = 0;
      if (first) {
        if (!digits(part, 10, p)) return std::nullopt;
      } else {
        if (part.empty() || part.size() > 2 || part.find('_') != std::string_view::npos || !digits(part, 10, p) || p > 59 ||
            (part.size() == 2 && part[0] > '5'))
          return std::nullopt;
        if (total > std::numeric_limits<std::uint64_t>::max() / 60) return std::nullopt;
        total *= 60;
      }
      if (p > std::numeric_limits<std::uint64_t>::max() - total) return std::nullopt;
      total += p;
      first = false;
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    return signed_value(negative, total);
  }
  if (s.size() > 1 && s.front() == '0') return digits(s.substr(1), 8, v) ? signed_value(negative, v) : std::nullopt;
  if (s == "0") return 0;
  if (s.front() < '1' || s.front() > '9') return std::nullopt;
  return digits(s, 10, v) ? signed_value(negative, v) : std::nullopt;
}

std::string yaml11_number_text(std::string_view plain) {
  if (plain.find('_') == std::string_view::npos) return std::string(plain);
  if (!is_float_text(plain)) {
    // A decimal int with separators (the only other number a price or budget can be).
    auto t = plain;
    if (!t.empty() && (t.front() == '+' || t.front() == '-')) t.remove_prefix(1);
    if (t.empty() || t.front() < '1' || t.front() > '9') return std::string(plain);
    for (const char c : t)
      if (!(c == '_' || (c >= '0' && c <= '9'))) return std::string(plain);
  }
  std::string out;
  for (const char c : plain)
    if (c != '_') out.push_back(c);
  return out;
}

namespace {

/// Position just past the quoted scalar opening at `open`, or npos when it never closes.
std::size_t quote_end(std::string_view src, std::size_t open) {
  const char q = src[open];
  for (std::size_t i = open + 1; i < src.size(); ++i) {
    if (q == '"' && src[i] == '\\') {
      ++i;  // an escape: the next character is part of the string
      continue;
    }
    if (src[i] == q) {
      if (q == '\'' && i + 1 < src.size() && src[i + 1] == '\'') {
        ++i;  // '' is a quote inside a single-quoted string
        continue;
      }
      return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<TextPosition> check(const YAML::Node& n, std::string_view src, int depth) {
  if (depth > 256) return std::nullopt;
  if (n.IsScalar() && n.Tag() == "!") {
    const auto m = n.Mark();
    const auto pos = m.pos >= 0 ? static_cast<std::size_t>(m.pos) : std::string_view::npos;
    if (pos < src.size() && (src[pos] == '"' || src[pos] == '\'') && quote_end(src, pos) == std::string_view::npos)
      return TextPosition{m.line + 1, m.column + 1};
    return std::nullopt;
  }
  if (n.IsSequence()) {
    for (const auto& c : n)
      if (auto p = check(c, src, depth + 1)) return p;
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      if (auto p = check(kv.first, src, depth + 1)) return p;
      if (auto p = check(kv.second, src, depth + 1)) return p;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<TextPosition> unterminated_quote(const YAML::Node& root, std::string_view source) {
  return check(root, source, 0);
}

}  // namespace tollgate::config
