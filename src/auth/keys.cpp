#include "auth/keys.hpp"

#include <array>
#include <memory>

#include <openssl/evp.h>
#include <openssl/rand.h>

namespace tollgate::auth {

namespace {

// SHA-256 fetched from OpenSSL's default provider once: the legacy EVP_sha256() makes every
// digest fetch it again (a lookup under a lock shared by all threads), about 3x the hash itself.
const EVP_MD* sha256_md() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};

}  // namespace

std::string sha256_hex(std::string_view key) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  // One context per thread, set up again for each digest. The calls cannot fail for SHA-256 on
  // a working OpenSSL, but an empty string is returned rather than a wrong hash if they do.
  thread_local const std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  const EVP_MD* type = sha256_md();
  if (!ctx || type == nullptr) {
    // Without a fetched digest or a context (out of memory at the first use): the one-shot call.
    if (EVP_Digest(key.data(), key.size(), md.data(), &len, EVP_sha256(), nullptr) != 1) return {};
  } else if (EVP_DigestInit_ex2(ctx.get(), type, nullptr) != 1 || EVP_DigestUpdate(ctx.get(), key.data(), key.size()) != 1 ||
             EVP_DigestFinal_ex(ctx.get(), md.data(), &len) != 1) {
    return {};
  }
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
