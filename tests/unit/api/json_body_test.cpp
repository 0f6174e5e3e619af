// Request bodies: parse_json_object (api/json_body.hpp).
#include "api/json_body.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace tollgate::api {
namespace {

TEST(JsonBody, AcceptsAnObjectAndRefusesOtherValues) {
  auto ok = parse_json_object(R"({"model":"m","temperature":0.5,"n":1e300})", 64, false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->at("model").as_string(), "m");
  EXPECT_EQ(parse_json_object("[]", 64, false).error().status, 400);
  EXPECT_EQ(parse_json_object("{", 64, false).error().status, 400);
  EXPECT_TRUE(parse_json_object("", 32, true));
  EXPECT_FALSE(parse_json_object("", 64, false));
}

// Found by fuzz_json_body (tests/fuzz/regressions/json_body/non-finite-number): Boost.JSON reads
// 1e400 as infinity and writes it back as `Infinity`, which is not JSON, so the body the gateway
// passed on (upstream, into the store) was broken. Such a number is refused.
TEST(JsonBody, ANumberBeyondADoubleIsRefusedNotPassedOnAsInfinity) {
  for (const char* body : {R"({"n":1e400})", R"({"temperature":-1e400})", R"({"a":[{"b":[1,2,1E+999]}]})"}) {
    auto r = parse_json_object(body, 64, false);
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().status, 400);
    EXPECT_NE(r.error().message.find("out of range"), std::string::npos) << r.error().message;
  }
  // Every accepted body re-serialises to JSON that parses back to the same object.
  auto ok = parse_json_object(R"({"n":1.7e308,"m":-4.9e-324,"z":1e-400})", 64, false);
  ASSERT_TRUE(ok);
  boost::system::error_code ec;
  const auto back = boost::json::parse(boost::json::serialize(*ok), ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(back.as_object(), *ok);
}

}  // namespace
}  // namespace tollgate::api
