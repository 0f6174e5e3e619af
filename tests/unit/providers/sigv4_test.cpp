// AWS Signature V4 against the published aws-sig-v4-test-suite vectors (AKIDEXAMPLE,
// 20150830T123600Z, us-east-1, service "service"; signatures as the suite publishes them, see
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv4.html and the suite's *.authz files).
#include "providers/bedrock/sigv4.hpp"

#include <gtest/gtest.h>

using namespace tollgate::providers::aws;

namespace {

const Credentials kSuite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const Scope kScope{"us-east-1", "service"};
constexpr const char* kDate = "20150830T123600Z";

std::string authorization(const Request& r, const Credentials& c = kSuite) {
  for (const auto& [k, v] : sign(r, c, kScope, kDate))
    if (k == "Authorization") return v;
  return {};
}

std::string expected(std::string_view signed_headers, std::string_view signature) {
  return "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=" +
         std::string(signed_headers) + ", Signature=" + std::string(signature);
}

}  // namespace

TEST(SigV4, GetVanilla) {
  Request r{"GET", "example.amazonaws.com", "/", {}, {}, ""};
  EXPECT_EQ(authorization(r), expected("host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"));
}

TEST(SigV4, PostVanilla) {
  Request r{"POST", "example.amazonaws.com", "/", {}, {}, ""};
  EXPECT_EQ(authorization(r), expected("host;x-amz-date", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"));
}

TEST(SigV4, GetVanillaQuerySortsParameters) {
  // get-vanilla-query-order-key-case: Param2=value2&Param1=value1 is signed sorted.
  Request r{"GET", "example.amazonaws.com", "/", {{"Param2", "value2"}, {"Param1", "value1"}}, {}, ""};
  EXPECT_EQ(authorization(r), expected("host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
}

TEST(SigV4, PostVanillaQuery) {
  Request r{"POST", "example.amazonaws.com", "/", {{"Param1", "value1"}}, {}, ""};
  EXPECT_EQ(authorization(r), expected("host;x-amz-date", "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"));
}

TEST(SigV4, PostVanillaQueryNonUnreserved) {
  Request r{"POST", "example.amazonaws.com", "/", {{"@#$%^", ""}, {"+", "/,?><`\";:\\|][{}"}}, {}, ""};
  EXPECT_EQ(authorization(r), expected("host;x-amz-date", "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"));
}

TEST(SigV4, PostXWwwFormUrlencoded) {
  Request r{"POST", "example.amazonaws.com", "/", {}, {{"Content-Type", "application/x-www-form-urlencoded"}}, "Param1=value1"};
  EXPECT_EQ(authorization(r),
            expected("content-type;host;x-amz-date", "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"));
}

TEST(SigV4, HeaderValueCaseKeptAndNamesLowered) {
  Request r{"POST", "example.amazonaws.com", "/", {}, {{"My-Header1", "VALUE1"}}, ""};
  EXPECT_EQ(authorization(r),
            expected("host;my-header1;x-amz-date", "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"));
}

TEST(SigV4, SessionTokenIsSentAndSigned) {
  // post-sts-header-before: the token is a signed header.
  Credentials c = kSuite;
  c.session_token =
      "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/"
      "qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+"
      "xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";
  Request r{"POST", "example.amazonaws.com", "/", {}, {}, ""};
  const auto headers = sign(r, c, kScope, kDate);
  std::string auth, token;
  for (const auto& [k, v] : headers) {
    if (k == "Authorization") auth = v;
    if (k == "x-amz-security-token") token = v;
  }
  EXPECT_EQ(token, c.session_token);
  EXPECT_EQ(auth, expected("host;x-amz-date;x-amz-security-token",
                           "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"));
}

TEST(SigV4, BedrockModelIdColonIsEncodedTwiceInTheCanonicalUri) {
  // The wire path carries %3A; the canonical URI of a non-S3 service encodes it again (%253A),
  // as botocore signs Bedrock requests.
  Request r{"POST", "bedrock-runtime.us-east-1.amazonaws.com",
            "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse", {}, {}, R"({"messages":[]})"};
  std::string signed_headers;
  const std::string creq = canonical_request(r, kDate, "", signed_headers);
  EXPECT_EQ(creq.substr(0, creq.find('\n', 5)), "POST\n/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse");
  EXPECT_EQ(signed_headers, "host;x-amz-date");
  EXPECT_NE(creq.find("host:bedrock-runtime.us-east-1.amazonaws.com\n"), std::string::npos);
  EXPECT_TRUE(creq.ends_with(sha256_hex(R"({"messages":[]})")));
}

TEST(SigV4, EmptyPayloadHashAndAmzDateShape) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string now = amz_date_now();
  ASSERT_EQ(now.size(), 16u);
  EXPECT_EQ(now[8], 'T');
  EXPECT_EQ(now.back(), 'Z');
}
