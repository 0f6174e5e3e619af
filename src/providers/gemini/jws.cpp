#include "providers/gemini/jws.hpp"

#include <memory>

#include <boost/json.hpp>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

namespace tollgate::providers::gemini {
namespace json = boost::json;

std::string base64url(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = at(i) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (at(i) << 16) | (at(i + 1) << 8);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
  }
  return out;
}

std::expected<std::string, std::string> rs256_sign(std::string_view pem, std::string_view input) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  if (!bio) return std::unexpected("out of memory");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr),
                                                          EVP_PKEY_free);
  if (!key) return std::unexpected("private_key is not a PEM private key");
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) return std::unexpected("private_key is not an RSA key");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    return std::unexpected("RS256 signing failed");
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    return std::unexpected("RS256 signing failed");
  sig.resize(len);
  return sig;
}

std::expected<ServiceAccount, std::string> parse_service_account(std::string_view text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::unexpected("vertex credentials are not a JSON object");
  const auto& o = v.get_object();
  const auto field = [&](std::string_view k) {
    const auto* f = o.if_contains(k);
    return f && f->is_string() ? std::string(f->get_string()) : std::string();
  };
  if (const auto type = field("type"); !type.empty() && type != "service_account")
    return std::unexpected("vertex credentials of type \"" + type + "\" are not supported (a service-account key is)");
  ServiceAccount sa{field("client_email"), field("private_key"), field("private_key_id"), field("token_uri")};
  if (sa.client_email.empty() || sa.private_key.empty())
    return std::unexpected("vertex credentials have no client_email or private_key");
  if (sa.token_uri.empty()) sa.token_uri = "https://oauth2.googleapis.com/token";
  return sa;
}

std::expected<std::string, std::string> service_account_assertion(const ServiceAccount& sa, std::string_view scope,
                                                                  std::int64_t iat) {
  json::object header{{"alg", "RS256"}, {"typ", "JWT"}};
  if (!sa.private_key_id.empty()) header["kid"] = sa.private_key_id;
  const json::object claims{{"iss", sa.client_email}, {"scope", scope}, {"aud", sa.token_uri}, {"iat", iat},
                            {"exp", iat + 3600}};
  std::string input = base64url(json::serialize(header)) + "." + base64url(json::serialize(claims));
  auto sig = rs256_sign(sa.private_key, input);
  if (!sig) return std::unexpected(sig.error());
  return input + "." + base64url(*sig);
}

}  // namespace tollgate::providers::gemini
