#include "providers/bedrock/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <ctime>

namespace tollgate::providers::aws {

namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string hex(const unsigned char* p, std::size_t n) {
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kHex[p[i] >> 4]);
    out.push_back(kHex[p[i] & 0xF]);
  }
  return out;
}

using Mac = std::array<unsigned char, 32>;

Mac hmac(std::string_view key, std::string_view data) {
  Mac out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &len);
  return out;
}

std::string_view view(const Mac& m) { return {reinterpret_cast<const char*>(m.data()), m.size()}; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Header value as SigV4 canonicalises it: leading/trailing spaces removed, inner runs of
/// spaces folded to one.
std::string trim_fold(std::string_view v) {
  std::string out;
  bool space = false;
  for (const char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string uri_encode(std::string_view s, bool keep_slash) {
  static constexpr char up[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(up[c >> 4]);
      out.push_back(up[c & 0xF]);
    }
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr);
  return hex(md.data(), len);
}

std::string canonical_request(const Request& req, std::string_view amz_date, std::string_view session_token,
                              std::string& signed_headers_out) {
  std::string out(req.method);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out += '\n';
  // Non-S3 services: each segment of the (encoded) wire path is encoded again.
  const std::string path = req.path.empty() ? std::string("/") : std::string(req.path);
  out += uri_encode(path, true);
  out += '\n';
  std::vector<std::pair<std::string, std::string>> q;
  q.reserve(req.query.size());
  for (const auto& [k, v] : req.query) q.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(q.begin(), q.end());
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (i) out += '&';
    out += q[i].first + "=" + q[i].second;
  }
  out += '\n';
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("host", trim_fold(req.host));
  h.emplace_back("x-amz-date", std::string(amz_date));
  if (!session_token.empty()) h.emplace_back("x-amz-security-token", std::string(session_token));
  for (const auto& [k, v] : req.headers) {
    std::string name = lower(k);
    auto it = std::find_if(h.begin(), h.end(), [&](const auto& e) { return e.first == name; });
    if (it != h.end()) it->second += "," + trim_fold(v);  // repeated header: values joined
    else h.emplace_back(std::move(name), trim_fold(v));
  }
  std::sort(h.begin(), h.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  signed_headers_out.clear();
  for (const auto& [k, v] : h) {
    out += k + ":" + v + "\n";
    if (!signed_headers_out.empty()) signed_headers_out += ';';
    signed_headers_out += k;
  }
  out += '\n';
  out += signed_headers_out;
  out += '\n';
  out += sha256_hex(req.payload);
  return out;
}

std::vector<std::pair<std::string, std::string>> sign(const Request& req, const Credentials& creds, const Scope& scope,
                                                      std::string_view amz_date) {
  std::string signed_headers;
  const std::string creq = canonical_request(req, amz_date, creds.session_token, signed_headers);
  const std::string_view date = amz_date.substr(0, 8);
  const std::string credential_scope = std::string(date) + "/" + scope.region + "/" + scope.service + "/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + credential_scope + "\n" + sha256_hex(creq);
  const Mac k_date = hmac("AWS4" + creds.secret_access_key, date);
  const Mac k_region = hmac(view(k_date), scope.region);
  const Mac k_service = hmac(view(k_region), scope.service);
  const Mac k_signing = hmac(view(k_service), "aws4_request");
  const Mac sig = hmac(view(k_signing), to_sign);
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("x-amz-date", std::string(amz_date));
  if (!creds.session_token.empty()) out.emplace_back("x-amz-security-token", creds.session_token);
  out.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + creds.access_key_id + "/" + credential_scope +
                                        ", SignedHeaders=" + signed_headers + ", Signature=" + hex(sig.data(), sig.size()));
  return out;
}

std::string amz_date_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[17];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace tollgate::providers::aws
