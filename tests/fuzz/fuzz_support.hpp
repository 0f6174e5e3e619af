#pragma once
/// What the fuzz targets of tests/fuzz/ share (docs/fuzzing.md): a property check that ends the
/// run as a crash (libFuzzer then saves the input), JSON helpers that never throw, and a reader
/// of the few leading control bytes a target takes before its payload.

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "core/json_parse.hpp"
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

// The fuzz build sends Boost's assertions here (BOOST_ENABLE_ASSERT_HANDLER, CMakeLists.txt). Each
// one is a crash libFuzzer records, except Beast 1.81's `n >= 5` in basic_parser's
// parse_chunk_header: a chunked body read in pieces reaches it with a final chunk's "0\r\n" and
// less (3 or 4 bytes), and the code after it asks for more input, as it should (boostorg/beast pull
// request 2861, merged in 2024 after 1.81, relaxed the assertion). Release builds compile Boost's
// assertions out. Defined here, not inline: each fuzz target is one translation unit including this.
namespace boost {
void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file, long line) {
  if (std::strcmp(expr, "n >= 5") == 0 && std::strstr(file, "beast/http/impl/basic_parser.ipp") != nullptr) return;
  std::fprintf(stderr, "==fuzz== Boost assertion failed: %s%s%s in %s (%s:%ld)\n", expr, msg ? ": " : "", msg ? msg : "",
               function, file, line);
  std::fflush(stderr);
  std::abort();
}
void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  assertion_failed_msg(expr, nullptr, function, file, line);
}
}  // namespace boost

namespace tollgate::fuzz {

/// Reports a broken property and aborts: libFuzzer records the input as a crash.
[[noreturn]] inline void property_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "==fuzz== property failed: %s (%s:%d)\n", what, file, line);
  std::fflush(stderr);
  std::abort();
}

/// The input as text.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Takes the first byte of `in` (0 when empty).
inline std::uint8_t take_byte(std::string_view& in) {
  if (in.empty()) return 0;
  const auto b = static_cast<std::uint8_t>(in.front());
  in.remove_prefix(1);
  return b;
}

/// Parses `text` as JSON; nullopt when it is not JSON (never throws).
inline std::optional<boost::json::value> parse_json(std::string_view text) {
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec) return std::nullopt;
  return v;
}

/// core::has_non_finite: a DOM holding a number beyond a double's range. The gateway never hands
/// one to a translation (core::parse_json refuses it where upstream JSON is read), so the targets
/// that build their DOM themselves skip such inputs.
using core::has_non_finite;

/// Prints two texts that should be equal (to the crash log) and fails.
[[noreturn]] inline void texts_differ(const char* what, std::string_view a, std::string_view b, const char* file,
                                      int line) {
  std::fprintf(stderr, "==fuzz== first:  [%.*s]\n==fuzz== second: [%.*s]\n", static_cast<int>(std::min<std::size_t>(a.size(), 2000)),
               a.data(), static_cast<int>(std::min<std::size_t>(b.size(), 2000)), b.data());
  property_failed(what, file, line);
}

}  // namespace tollgate::fuzz

/// Checks a property of the code under test; a failure aborts (a finding, saved by libFuzzer).
#define TG_FUZZ_CHECK(cond)                                                    \
  do {                                                                         \
    if (!(cond)) ::tollgate::fuzz::property_failed(#cond, __FILE__, __LINE__); \
  } while (0)

/// Checks that two texts are equal; a failure prints both.
#define TG_FUZZ_CHECK_TEXT(a, b)                                                             \
  do {                                                                                       \
    if ((a) != (b)) ::tollgate::fuzz::texts_differ(#a " == " #b, (a), (b), __FILE__, __LINE__); \
  } while (0)
