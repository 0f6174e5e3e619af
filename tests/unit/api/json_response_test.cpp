// json_response: the headers a run adds go on a response as `set` would put them, one after
// another, and every value is one safe line.
#include "api/sinks.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tollgate::api {
namespace {

std::vector<std::pair<std::string, std::string>> fields_of(const http::Response& res) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : res) out.emplace_back(std::string(f.name_string()), std::string(f.value()));
  return out;
}

TEST(JsonResponse, HeadersKeepTheirOrderAndANameGivenTwiceKeepsItsLastValueInItsPlace) {
  const pipeline::Headers h = {{"x-a", "1"}, {"x-litellm-response-cost", "0.1"}, {"x-b", "2"}, {"X-LiteLLM-Response-Cost", "0"}};
  const auto res = json_response(200, "{}", h);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"Content-Type", "application/json"}, {"x-a", "1"}, {"x-b", "2"}, {"X-LiteLLM-Response-Cost", "0"}};
  EXPECT_EQ(fields_of(res), want);
  EXPECT_EQ(res.body(), "{}");
  EXPECT_EQ(res.result_int(), 200);
}

TEST(JsonResponse, AContentTypeHeaderReplacesTheDefault) {
  const auto res = json_response(200, "x", {{"content-type", "text/plain"}});
  ASSERT_EQ(res.count(boost::beast::http::field::content_type), 1u);
  EXPECT_EQ(res[boost::beast::http::field::content_type], "text/plain");
}

TEST(JsonResponse, ControlCharactersBecomeSpacesAndLongValuesAreCut) {
  const auto res = json_response(400, "{}", {{"x-reason", "a\r\nSet-Cookie: s=1\x7f\tb"}, {"x-long", std::string(9000, 'v')}});
  EXPECT_EQ(res["x-reason"], "a  Set-Cookie: s=1  b");
  EXPECT_EQ(res.count("set-cookie"), 0u);
  const std::string_view long_value = res["x-long"];
  ASSERT_EQ(long_value.size(), 8192u);
  EXPECT_EQ(long_value.substr(8189), "...");
  EXPECT_EQ(long_value.substr(0, 8189), std::string(8189, 'v'));
}

}  // namespace
}  // namespace tollgate::api
