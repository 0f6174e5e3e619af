#pragma once
/// The admin web UI (docs/ui.md): the files of the built bundle (ui/, built by Vite during the
/// CMake build, option TOLLGATE_UI), embedded in the binary and served at `/ui` with no key.
/// Every data call the UI makes goes to the JSON endpoints, each with its own authentication.
///
/// Routing (`ui_response`):
/// - `/ui`, `/ui/` and every `/ui/...` path whose last segment has no dot (an SPA route such as
///   `/ui/keys` or `/ui/logs/REQUEST_ID`) → `index.html`, `Cache-Control: no-cache`;
/// - `/ui/<file>` → that embedded file; files under `assets/` carry a content hash in their name
///   (Vite) and are sent with `Cache-Control: public, max-age=31536000, immutable`, the others
///   `no-cache`;
/// - a file path not in the bundle (`/ui/assets/missing.js`, `/ui/x.png`) → 404, never
///   index.html (a missing script must not be answered with HTML);
/// - methods other than GET and HEAD → 405 (`Allow: GET, HEAD`).
///
/// Every answer carries `Content-Security-Policy` (kUiContentSecurityPolicy),
/// `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`; 200s carry the file's
/// `ETag` (a strong validator: a hash of its bytes) and a matching `If-None-Match` (one tag, a
/// list, a weak `W/` tag or `*`) is answered 304 with no body.
///
/// Thread safety: the asset table is immutable static data; every function here is pure.

#include <span>
#include <string_view>

#include "api/ui_bundle.hpp"
#include "http/server.hpp"

namespace tollgate::api {

/// The policy sent with every /ui answer: the bundle's own scripts, styles and images only (and
/// data: images), data calls to this origin only, never framed.
inline constexpr std::string_view kUiContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Whether `path` (without its query) is the UI's: `/ui` or below `/ui/`.
bool is_ui_path(std::string_view path);

/// The Content-Type served for a file name, by its extension ("application/octet-stream" for
/// an unknown one; text types with "; charset=utf-8").
std::string_view ui_content_type(std::string_view file_name);

/// Answers a request for `path` (is_ui_path) from `assets` (sorted by path), as the header
/// comment describes. An empty table (UI not built) answers 404 with a plain-text explanation.
http::Response ui_response(const http::Request& req, std::string_view path, std::span<const UiAsset> assets);

/// ui_response over embedded_ui_assets().
inline http::Response ui_response(const http::Request& req, std::string_view path) {
  return ui_response(req, path, embedded_ui_assets());
}

}  // namespace tollgate::api
