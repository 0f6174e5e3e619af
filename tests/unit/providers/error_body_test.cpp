// An error answer settles at zero only when it is the API's own error shape (evidence that the
// provider answered with an error it documents as unbilled).
#include "providers/openai_errors.hpp"
#include "providers/provider.hpp"

#include <gtest/gtest.h>

using namespace tollgate;

TEST(ErrorBody, OpenAiShapesAreEvidenceOthersAreNot) {
  EXPECT_TRUE(providers::outcome_from_openai_body(429, R"({"error":{"message":"slow down","type":"requests"}})").error_body);
  EXPECT_TRUE(providers::outcome_from_openai_body(500, R"({"error":"boom"})").error_body);
  EXPECT_TRUE(providers::outcome_from_openai_body(422, R"({"detail":[{"loc":["body"],"msg":"bad"}]})").error_body);
  EXPECT_TRUE(providers::outcome_from_openai_body(400, R"({"object":"error","message":"bad","type":"BadRequestError"})").error_body);
  EXPECT_FALSE(providers::outcome_from_openai_body(504, R"({"statusCode":504,"message":"Gateway Timeout"})").error_body);
  EXPECT_FALSE(providers::outcome_from_openai_body(500, R"({"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1000}})").error_body);
  EXPECT_FALSE(providers::outcome_from_openai_body(502, "<html>bad gateway</html>").error_body);
}

TEST(ErrorBody, AnthropicShapeIsEvidenceOthersAreNot) {
  const auto& p = providers::provider_for(config::ProviderKind::anthropic);
  EXPECT_TRUE(p.parse_error(529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})").error_body);
  EXPECT_FALSE(p.parse_error(504, R"({"message":"upstream request timeout"})").error_body);
  EXPECT_FALSE(p.parse_error(502, "not json").error_body);
}
