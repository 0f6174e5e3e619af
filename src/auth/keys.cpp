#include "auth/keys.hpp"

#include <array>
#include <memory>

#include <openssl/evp.h>
#include <openssl/rand.h>

namespace tollgate::auth {

std::string sha256_hex(std::string_view key) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  // EVP_Digest is a one-shot convenience over EVP_MD_CTX; it cannot fail for SHA-256 on a
  // working OpenSSL, but an empty string is returned rather than a wrong hash if it does.
  if (EVP_Digest(key.data(), key.size(), md.data(), &len, EVP_sha256(), nullptr) != 1) return {};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 0xf]);
  }
  return out;
}

std::expected<std::string, std::string> generate_key() {
  std::array<unsigned char, 32> raw{};
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1)
    return std::unexpected(std::string("OpenSSL RAND_bytes failed"));
  static constexpr char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out = "sk-";
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : raw) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(b64[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(b64[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::string mask_key(std::string_view key) {
  if (key.size() <= 4) return "sk-...";
  return "sk-..." + std::string(key.substr(key.size() - 4));
}

bool is_token_hash(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace tollgate::auth
