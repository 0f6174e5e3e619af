#include "api/ui_assets.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace tollgate::api {
namespace bhttp = boost::beast::http;

namespace {

constexpr std::string_view kPrefix = "/ui";
constexpr std::string_view kIndex = "index.html";
constexpr std::string_view kImmutable = "public, max-age=31536000, immutable";

/// Headers every /ui answer carries, whatever its status.
void set_security_headers(http::Response& res) {
  res.set("Content-Security-Policy", kUiContentSecurityPolicy);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
}

http::Response plain(bhttp::status status, std::string_view text) {
  http::Response res{status, 11};
  res.set(bhttp::field::content_type, "text/plain; charset=utf-8");
  res.set(bhttp::field::cache_control, "no-cache");
  set_security_headers(res);
  res.body() = std::string(text);
  return res;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// Whether an If-None-Match value matches `etag` (RFC 9110 §13.1.2: weak comparison).
bool none_match(std::string_view header, std::string_view etag) {
  if (trim(header) == "*") return true;
  while (!header.empty()) {
    const auto comma = header.find(',');
    auto tag = trim(header.substr(0, comma));
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (!tag.empty() && tag == etag) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

const UiAsset* find(std::span<const UiAsset> assets, std::string_view path) {
  auto it = std::lower_bound(assets.begin(), assets.end(), path,
                             [](const UiAsset& a, std::string_view p) { return a.path < p; });
  return it != assets.end() && it->path == path ? &*it : nullptr;
}

}  // namespace

bool is_ui_path(std::string_view path) { return path == kPrefix || path.starts_with("/ui/"); }

std::string_view ui_content_type(std::string_view file_name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kTypes{{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".webp", "image/webp"},
      {".woff2", "font/woff2"},
      {".woff", "font/woff"},
      {".txt", "text/plain; charset=utf-8"},
      {".webmanifest", "application/manifest+json"},
  }};
  const auto slash = file_name.rfind('/');
  const auto base = slash == std::string_view::npos ? file_name : file_name.substr(slash + 1);
  const auto dot = base.rfind('.');
  if (dot == std::string_view::npos) return "application/octet-stream";
  const auto ext = base.substr(dot);
  for (const auto& [e, type] : kTypes)
    if (e == ext) return type;
  return "application/octet-stream";
}

http::Response ui_response(const http::Request& req, std::string_view path, std::span<const UiAsset> assets) {
  if (req.method() != bhttp::verb::get && req.method() != bhttp::verb::head) {
    auto res = plain(bhttp::status::method_not_allowed, "method not allowed: the UI's files are read with GET\n");
    res.set(bhttp::field::allow, "GET, HEAD");
    return res;
  }
  if (assets.empty())
    return plain(bhttp::status::not_found,
                 "this gateway was built without its web UI (cmake -DTOLLGATE_UI=OFF): rebuild with "
                 "TOLLGATE_UI=ON (needs npm), see docs/ui.md\n");
  std::string_view rel = path.substr(kPrefix.size());
  while (rel.starts_with('/')) rel.remove_prefix(1);
  const auto last = rel.substr(rel.rfind('/') == std::string_view::npos ? 0 : rel.rfind('/') + 1);
  // A path whose last segment names a file is that file or nothing; any other is an SPA route.
  const bool names_file = last.find('.') != std::string_view::npos;
  const UiAsset* asset = find(assets, names_file ? rel : kIndex);
  if (asset == nullptr) return plain(bhttp::status::not_found, "no such file in the UI bundle\n");

  const bool immutable = asset->path.starts_with("assets/");
  http::Response res{bhttp::status::ok, 11};
  set_security_headers(res);
  res.set(bhttp::field::etag, asset->etag);
  res.set(bhttp::field::cache_control, immutable ? kImmutable : std::string_view("no-cache"));
  if (auto inm = req.find(bhttp::field::if_none_match);
      inm != req.end() && none_match(std::string_view(inm->value().data(), inm->value().size()), asset->etag)) {
    res.result(bhttp::status::not_modified);
    return res;
  }
  res.set(bhttp::field::content_type, ui_content_type(asset->path));
  if (req.method() == bhttp::verb::get) res.body() = std::string(asset->body);
  return res;
}

}  // namespace tollgate::api
