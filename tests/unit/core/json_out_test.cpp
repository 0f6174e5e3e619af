// core::JsonOut: the DOM-free JSON writer the hot paths render with. Every output is read back
// by Boost.JSON's parser, so a wrong escape or a misplaced comma fails here.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "core/json_out.hpp"

using tollgate::core::append_json_string;
using tollgate::core::JsonOut;

TEST(JsonOut, EveryByteBelowSpaceQuoteAndBackslashRoundTrips) {
  std::string raw;
  for (int c = 0; c < 0x20; ++c) raw.push_back(static_cast<char>(c));
  raw += "\"\\/plain é ✓";
  std::string out;
  append_json_string(out, raw);
  EXPECT_EQ(boost::json::parse(out).as_string(), raw);
}

TEST(JsonOut, AnEscapedByteIsFoundAtEveryOffsetOfTheWordScan) {
  // The scan reads eight bytes at a time: put each kind of byte at each offset of strings long
  // and short, next to bytes at the edges of the ranges (0x1f/0x20, 0x21/0x23, 0x5b/0x5d, 0x80+).
  for (const char special : {'\x00', '\x1f', '"', '\\', '\n', '\x7f', '\x80', '\xff', ' ', '#', ']'}) {
    for (std::size_t len = 1; len <= 40; ++len) {
      for (std::size_t at = 0; at < len; ++at) {
        std::string raw(len, 'a');
        raw[at] = special;
        if (at + 1 < len) raw[at + 1] = '\x21';
        std::string out;
        append_json_string(out, raw);
        if ((special & 0x80) != 0) {  // not valid UTF-8 alone: passed through, checked byte-wise
          EXPECT_EQ(out, "\"" + raw + "\"");
          continue;
        }
        ASSERT_EQ(boost::json::parse(out).as_string(), raw) << "len " << len << " at " << at;
      }
    }
  }
}

TEST(JsonOut, CommasAndNestingAreRight) {
  std::string out;
  JsonOut j(out);
  j.begin_object().key("a").value(1).key("b").begin_array().end_array().key("c").begin_array();
  j.value("x").begin_object().end_object().value(true).null().end_array();
  j.key("d").begin_object().key("e").value(std::int64_t{-9007199254740993}).end_object();
  j.key("f").value(std::numeric_limits<std::uint64_t>::max()).key("g").value(0.1).key("h").raw("[1,2]");
  j.end_object();
  const auto v = boost::json::parse(out);
  EXPECT_EQ(v.at("a"), 1);
  EXPECT_TRUE(v.at("b").as_array().empty());
  EXPECT_EQ(v.at("c").as_array().size(), 4u);
  EXPECT_EQ(v.at("d").at("e").as_int64(), -9007199254740993);
  EXPECT_EQ(v.at("f").as_uint64(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(v.at("g").as_double(), 0.1) << "shortest form reads back exactly";
  EXPECT_EQ(v.at("h").as_array().size(), 2u);
}

TEST(JsonOut, NonFiniteNumbersAreNull) {
  std::string out;
  JsonOut(out).begin_array().value(std::nan("")).value(std::numeric_limits<double>::infinity()).end_array();
  EXPECT_EQ(out, "[null,null]");
}

namespace tollgate::core {
namespace {

// A string or name taken from the output itself is written whole, however the output grows.
TEST(JsonOut, TextOfTheOutputItselfIsCopiedBeforeTheOutputGrows) {
  for (const std::size_t n : {3u, 14u, 15u, 40u, 1000u}) {
    std::string out(n, 'a');
    out.shrink_to_fit();
    JsonOut j(out);
    j.begin_object().key(std::string_view(out).substr(0, n)).value(std::string_view(out).substr(0, n)).end_object();
    const std::string a(n, 'a');
    EXPECT_EQ(out, a + "{\"" + a + "\":\"" + a + "\"}") << n;
  }
}

}  // namespace
}  // namespace tollgate::core
