#include "core/json_parse.hpp"

#include <boost/json/error.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <string>

using tollgate::core::has_non_finite;
using tollgate::core::parse_json;

TEST(JsonParse, ParsesLikeBoost) {
  boost::system::error_code ec;
  const auto v = parse_json(R"({"a":[1,2.5,-1e308,{"b":null}],"c":"x"})", ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(boost::json::serialize(v), R"({"a":[1,2.5E0,-1E308,{"b":null}],"c":"x"})");
  EXPECT_FALSE(has_non_finite(v));
  parse_json("{not json", ec);
  EXPECT_TRUE(ec);
}

// Boost.JSON 1.81 reads these as ±infinity and would write them back as `Infinity`, which is not
// JSON (docs/fuzzing.md): refused wherever they are nested.
TEST(JsonParse, RefusesNumbersBeyondADoublesRange) {
  for (const char* text : {"1e400", "-1e400", R"({"n":1e4001})", R"([0,[1,{"x":[-9e999]}]])",
                           R"({"choices":[{"delta":{"content":"hi"},"logprobs":{"p":1E+400}}]})"}) {
    boost::system::error_code ec;
    const auto v = parse_json(text, ec);
    EXPECT_EQ(ec, boost::json::error::exponent_overflow) << text;
    EXPECT_TRUE(v.is_null()) << text;
  }
}

TEST(JsonParse, KeepsTheParseOptions) {
  boost::json::parse_options shallow;
  shallow.max_depth = 2;
  boost::system::error_code ec;
  parse_json("[[[1]]]", ec, shallow);
  EXPECT_TRUE(ec);
  parse_json("[[1]]", ec, shallow);
  EXPECT_FALSE(ec);
}
