#pragma once
/// JSON text (RFC 8259) appended straight to a string, without building a document: for the hot
/// paths that render a fixed shape on every request (OTLP spans, access lines, translated
/// stream events). Strings are escaped per RFC 8259 §7; UTF-8 passes through unchanged (the
/// caller's strings come from parsed JSON or validated headers). The writer places commas; the
/// caller is responsible for the nesting (every begin_* closed by its end_*).

#include <cstdint>
#include <string>
#include <string_view>

namespace tollgate::core {

/// Appends the JSON string literal of `s` (quotes included) to `out`.
void append_json_string(std::string& out, std::string_view s);

/// True when no byte of `s` needs escaping in a JSON string (no control character, '"' or '\\'):
/// then `"` + s + `"` is its literal.
[[nodiscard]] bool json_safe(std::string_view s) noexcept;

/// A streaming writer over one string. Example:
///   JsonOut j(out); j.begin_object().key("a").value(1).key("b").begin_array().value("x").end_array().end_object();
class JsonOut {
 public:
  explicit JsonOut(std::string& out) noexcept : out_(out) {}

  JsonOut& begin_object() { return open('{'); }
  JsonOut& end_object() { return close('}'); }
  JsonOut& begin_array() { return open('['); }
  JsonOut& end_array() { return close(']'); }
  /// An object member's name; the next call writes its value.
  JsonOut& key(std::string_view k);
  /// The same for a name written in the code (a string literal): written as it is, unscanned.
  /// Only for literals without '"', '\\' or control characters.
  template <std::size_t N>
  JsonOut& key(const char (&k)[N]) {
    // One write: the comma if one is due, the quoted name and the colon.
    // (The new length is returned as computed: g++ 12's libstdc++ passes the grown capacity,
    // not the size asked, as the operation's second argument.)
    const bool comma = !first_;
    const std::size_t at = out_.size(), len = at + (comma ? 1 : 0) + N + 2;
    out_.resize_and_overwrite(len, [&](char* p, std::size_t) {
      char* w = p + at;
      if (comma) *w++ = ',';
      *w++ = '"';
      for (std::size_t i = 0; i + 1 < N; ++i) *w++ = k[i];
      *w++ = '"';
      *w = ':';
      return len;
    });
    first_ = true;
    return *this;
  }
  JsonOut& value(std::string_view s);
  JsonOut& value(const char* s) { return value(std::string_view(s)); }
  JsonOut& value(const std::string& s) { return value(std::string_view(s)); }
  JsonOut& value(std::int64_t n);
  JsonOut& value(int n) { return value(static_cast<std::int64_t>(n)); }
  JsonOut& value(std::uint64_t n);
  /// Shortest round-trip form; NaN and infinities (not JSON) are written as null.
  JsonOut& value(double d);
  JsonOut& value(bool b);
  JsonOut& null();
  /// JSON text the caller already holds, written as one value unchanged.
  JsonOut& raw(std::string_view json);

 private:
  JsonOut& open(char c);
  JsonOut& close(char c);
  void separate() {
    if (!first_) out_.push_back(',');
    first_ = false;
  }

  std::string& out_;
  bool first_ = true;  ///< nothing written yet at this level (or a key was just written)
};

}  // namespace tollgate::core
