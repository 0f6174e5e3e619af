#pragma once
/// RS256 JSON Web Signatures (RFC 7515 compact serialization, RFC 7518 §3.3: RSASSA-PKCS1-v1_5
/// with SHA-256) and the service-account JWT Google's OAuth token endpoint takes
/// (https://developers.google.com/identity/protocols/oauth2/service-account#authorizingrequests).
/// OpenSSL (EVP_DigestSign); no state; thread-safe.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace tollgate::providers::gemini {

/// RFC 4648 §5 base64url without padding (JWS's base64url, RFC 7515 §2).
std::string base64url(std::string_view bytes);

/// The RS256 signature (raw bytes, the modulus' length) of `signing_input` with the PEM private
/// key `pem` (PKCS#8 "BEGIN PRIVATE KEY" or PKCS#1 "BEGIN RSA PRIVATE KEY"). PKCS#1 v1.5 is
/// deterministic: the same key and input give the same bytes (RFC 7515 Appendix A.2).
/// Errors: the key does not parse or is not RSA, or signing failed.
std::expected<std::string, std::string> rs256_sign(std::string_view pem, std::string_view signing_input);

/// A service-account key file's fields (Google's JSON key format).
struct ServiceAccount {
  std::string client_email;
  std::string private_key;     ///< PEM
  std::string private_key_id;  ///< the JWT header's `kid`
  std::string token_uri;       ///< default https://oauth2.googleapis.com/token
};

/// Reads a service-account key (JSON text). Errors: not JSON, `type` other than
/// "service_account", or no client_email / private_key.
std::expected<ServiceAccount, std::string> parse_service_account(std::string_view json_text);

/// The compact JWS `header.claims.signature` asserting `sa` for `scope`: header
/// {alg:RS256, typ:JWT, kid}, claims {iss: client_email, scope, aud: token_uri, iat, exp: iat+3600}.
std::expected<std::string, std::string> service_account_assertion(const ServiceAccount& sa, std::string_view scope,
                                                                  std::int64_t iat_unix);

}  // namespace tollgate::providers::gemini
