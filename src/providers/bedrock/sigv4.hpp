#pragma once
/// AWS Signature Version 4 request signing (header form), as the AWS IAM user guide specifies it:
/// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv4.html ("Create a signed AWS
/// API request": canonical request, string to sign, signing key, signature). Checked against the
/// published aws-sig-v4-test-suite vectors (tests/unit/providers/sigv4_test.cpp). Shared by
/// Bedrock (service "bedrock") and SageMaker (service "sagemaker"). Pure; thread-safe.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tollgate::providers::aws {

/// Long-term or temporary (STS) credentials. `session_token` empty for long-term keys.
struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
};

/// One HTTP request to sign. `path` is the path as sent on the wire (already percent-encoded,
/// e.g. `/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse`); `query` is the
/// decoded name/value pairs; `headers` are the request's other headers that must be signed
/// (names in any case; `host` and `x-amz-date` are added by sign()).
struct Request {
  std::string_view method;
  std::string_view host;  ///< the Host header: host, or host:port when the port is not the scheme's default
  std::string_view path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view payload;
};

/// The credential scope's region and service ("us-east-1", "bedrock").
struct Scope {
  std::string region;
  std::string service;
};

/// RFC 3986 percent-encoding as SigV4 wants it: unreserved bytes (A-Z a-z 0-9 - . _ ~) kept,
/// every other byte %XX in upper-case hex; "/" kept when `keep_slash`.
std::string uri_encode(std::string_view s, bool keep_slash);

/// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

/// The canonical request (its 6 lines joined with "\n"). Non-S3 rules: the canonical URI is the
/// wire path encoded once more (so a `%3A` in a Bedrock model id becomes `%253A`), query pairs
/// encoded and sorted by name then value, header names lower-cased, values trimmed with inner
/// runs of spaces folded, headers sorted by name. `amz_date` is `YYYYMMDDTHHMMSSZ`.
std::string canonical_request(const Request& req, std::string_view amz_date, std::string_view session_token,
                              std::string& signed_headers_out);

/// The headers to add to the request so that AWS accepts it: `x-amz-date`,
/// `x-amz-security-token` (when the credentials carry a session token; it is signed), and
/// `Authorization: AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/<service>/aws4_request,
/// SignedHeaders=<...>, Signature=<hex>`. `amz_date` is the signing time (`YYYYMMDDTHHMMSSZ`, UTC).
std::vector<std::pair<std::string, std::string>> sign(const Request& req, const Credentials& creds, const Scope& scope,
                                                      std::string_view amz_date);

/// The current UTC time as `YYYYMMDDTHHMMSSZ` (x-amz-date).
std::string amz_date_now();

}  // namespace tollgate::providers::aws
