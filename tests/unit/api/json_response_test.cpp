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

// json_response_fields (what the sinks send without building a Response) lists exactly the
// fields json_response puts on its Response, in the same order, for every shape of headers.
TEST(JsonResponse, TheFieldViewsAreJsonResponsesFields) {
  const std::vector<pipeline::Headers> cases = {
      {},
      {{"x-a", "1"}, {"x-litellm-response-cost", "0.1"}, {"x-b", "2"}, {"X-LiteLLM-Response-Cost", "0"}},
      {{"x-first", "1"}, {"content-type", "text/plain"}, {"x-last", "2"}},
      {{"x-reason", "a\r\nSet-Cookie: s=1"}, {"x-long", std::string(9000, 'v')}, {"x-reason", "b\n"}},
      {{"x-dup", "1"}, {"x-dup", "2"}, {"x-dup", "3"}},
      {{"x-spaces", "  padded\t "}, {"x-blank", " \t "}, {"x-inner", "a  b"}},
  };
  for (const auto& headers : cases) {
    std::vector<std::string> safe;
    const auto views = json_response_fields(headers, safe);
    ASSERT_TRUE(views);
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& [name, value] : *views) got.emplace_back(std::string(name), std::string(value));
    EXPECT_EQ(got, fields_of(json_response(200, "{}", headers))) << headers.size();
  }
}

TEST(JsonResponse, FieldsTheWriterSetsItselfAreLeftToTheResponse) {
  std::vector<std::string> safe;
  EXPECT_FALSE(json_response_fields({{"Connection", "close"}}, safe));
  EXPECT_FALSE(json_response_fields({{"x-a", "1"}, {"content-length", "5"}}, safe));
  EXPECT_FALSE(json_response_fields({{"Transfer-Encoding", "chunked"}}, safe));
}

}  // namespace
}  // namespace tollgate::api
