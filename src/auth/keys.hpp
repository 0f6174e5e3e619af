#pragma once
/// Virtual-key secrets: generation, hashing and display masking.
/// A key is `sk-` + 43 base64url characters (32 random bytes from OpenSSL RAND_bytes); only its
/// SHA-256 (lowercase hex, `store::KeyRecord::token_hash`) is ever stored (issue 3, item 2).

#include <expected>
#include <string>
#include <string_view>

namespace tollgate::auth {

/// Lowercase hex SHA-256 of `key` (64 characters), via OpenSSL EVP. Thread-safe.
std::string sha256_hex(std::string_view key);

/// A fresh secret `sk-<base64url of 32 random bytes>`; an error message when the OpenSSL
/// random generator fails (never falls back to a weaker source).
std::expected<std::string, std::string> generate_key();

/// Display form of a key, LiteLLM style: "sk-...abcd" (the last 4 characters).
std::string mask_key(std::string_view key);

/// Whether `s` looks like a token hash (64 lowercase hex characters) rather than a secret.
bool is_token_hash(std::string_view s);

}  // namespace tollgate::auth
