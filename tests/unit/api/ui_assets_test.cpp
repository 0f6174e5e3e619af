// ui_response: the web UI's static files at /ui — SPA fallback, 404 for a missing file, content
// types, security headers, ETag / If-None-Match, cache lifetimes, methods, and the embedded table.
#include "api/ui_assets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace tollgate::api {
namespace {
namespace bhttp = boost::beast::http;

// Sorted by path, as the generator writes it.
constexpr UiAsset kAssets[] = {
    {"assets/index-3f2a.css", "body{color:red}", "\"css1\""},
    {"assets/index-3f2a.js", "console.log(1)", "\"js1\""},
    {"favicon.svg", "<svg/>", "\"svg1\""},
    {"index.html", "<!doctype html><div id=app></div>", "\"idx1\""},
};

http::Request get(std::string target, bhttp::verb method = bhttp::verb::get) {
  http::Request req{method, target, 11};
  return req;
}

http::Response serve(const http::Request& req) {
  std::string_view target = req.target();
  return ui_response(req, target.substr(0, target.find('?')), kAssets);
}

std::string header(const http::Response& res, std::string_view name) {
  auto it = res.find(name);
  return it == res.end() ? std::string() : std::string(it->value());
}

TEST(UiAssets, IsUiPath) {
  EXPECT_TRUE(is_ui_path("/ui"));
  EXPECT_TRUE(is_ui_path("/ui/"));
  EXPECT_TRUE(is_ui_path("/ui/keys"));
  EXPECT_TRUE(is_ui_path("/ui/assets/index-3f2a.js"));
  EXPECT_FALSE(is_ui_path("/uix"));
  EXPECT_FALSE(is_ui_path("/u"));
  EXPECT_FALSE(is_ui_path("/v1/ui"));
  EXPECT_FALSE(is_ui_path("/"));
}

TEST(UiAssets, IndexAndSpaRoutesServeIndexHtmlUncached) {
  for (const char* target : {"/ui", "/ui/", "/ui/keys", "/ui/logs/chatcmpl-123", "/ui/models/", "/ui/keys?q=a.b"}) {
    SCOPED_TRACE(target);
    auto res = serve(get(target));
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "<!doctype html><div id=app></div>");
    EXPECT_EQ(header(res, "Content-Type"), "text/html; charset=utf-8");
    EXPECT_EQ(header(res, "Cache-Control"), "no-cache");
    EXPECT_EQ(header(res, "ETag"), "\"idx1\"");
  }
}

TEST(UiAssets, HashedAssetsAreImmutableWithTheirType) {
  auto js = serve(get("/ui/assets/index-3f2a.js"));
  EXPECT_EQ(js.result_int(), 200);
  EXPECT_EQ(js.body(), "console.log(1)");
  EXPECT_EQ(header(js, "Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(header(js, "Cache-Control"), "public, max-age=31536000, immutable");
  auto css = serve(get("/ui/assets/index-3f2a.css"));
  EXPECT_EQ(header(css, "Content-Type"), "text/css; charset=utf-8");
  // A file outside assets/ has no hash in its name: revalidated every time.
  auto svg = serve(get("/ui/favicon.svg"));
  EXPECT_EQ(svg.result_int(), 200);
  EXPECT_EQ(header(svg, "Content-Type"), "image/svg+xml");
  EXPECT_EQ(header(svg, "Cache-Control"), "no-cache");
}

TEST(UiAssets, MissingFileIs404NeverIndexHtml) {
  for (const char* target :
       {"/ui/assets/index-0000.js", "/ui/x.png", "/ui/assets/", "/ui/../index.html.bak", "/ui/index.htm"}) {
    SCOPED_TRACE(target);
    auto res = serve(get(target));
    if (std::string_view(target) == "/ui/assets/") {
      // A directory-like path is an SPA route, not a file.
      EXPECT_EQ(res.result_int(), 200);
      continue;
    }
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(res.body().find("<!doctype"), std::string::npos);
    EXPECT_EQ(header(res, "Content-Type"), "text/plain; charset=utf-8");
  }
}

TEST(UiAssets, SecurityHeadersOnEveryAnswer) {
  for (const char* target : {"/ui", "/ui/assets/index-3f2a.js", "/ui/nope.js"}) {
    SCOPED_TRACE(target);
    auto res = serve(get(target));
    EXPECT_EQ(header(res, "Content-Security-Policy"), std::string(kUiContentSecurityPolicy));
    EXPECT_EQ(header(res, "X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(header(res, "Referrer-Policy"), "no-referrer");
  }
  EXPECT_NE(kUiContentSecurityPolicy.find("script-src 'self'"), std::string_view::npos);
  EXPECT_EQ(kUiContentSecurityPolicy.find("unsafe-inline"), std::string_view::npos);
  EXPECT_NE(kUiContentSecurityPolicy.find("frame-ancestors 'none'"), std::string_view::npos);
}

TEST(UiAssets, IfNoneMatchGives304) {
  auto req = get("/ui/assets/index-3f2a.js");
  req.set(bhttp::field::if_none_match, "\"js1\"");
  auto res = serve(req);
  EXPECT_EQ(res.result_int(), 304);
  EXPECT_TRUE(res.body().empty());
  EXPECT_EQ(header(res, "ETag"), "\"js1\"");
  EXPECT_EQ(header(res, "Cache-Control"), "public, max-age=31536000, immutable");

  req.set(bhttp::field::if_none_match, "\"other\", W/\"js1\"");
  EXPECT_EQ(serve(req).result_int(), 304);
  req.set(bhttp::field::if_none_match, "*");
  EXPECT_EQ(serve(req).result_int(), 304);
  req.set(bhttp::field::if_none_match, "\"other\"");
  EXPECT_EQ(serve(req).result_int(), 200);
  // An SPA route revalidates against index.html's tag.
  auto route = get("/ui/keys");
  route.set(bhttp::field::if_none_match, "\"idx1\"");
  EXPECT_EQ(serve(route).result_int(), 304);
}

TEST(UiAssets, MethodsOtherThanGetAndHeadAre405) {
  auto head = serve(get("/ui/assets/index-3f2a.js", bhttp::verb::head));
  EXPECT_EQ(head.result_int(), 200);
  EXPECT_TRUE(head.body().empty());
  EXPECT_EQ(header(head, "Content-Type"), "text/javascript; charset=utf-8");
  auto post = serve(get("/ui/keys", bhttp::verb::post));
  EXPECT_EQ(post.result_int(), 405);
  EXPECT_EQ(header(post, "Allow"), "GET, HEAD");
  EXPECT_EQ(header(post, "X-Content-Type-Options"), "nosniff");
}

TEST(UiAssets, EmptyTableSaysTheUiWasNotBuilt) {
  http::Request req = get("/ui");
  auto res = ui_response(req, "/ui", {});
  EXPECT_EQ(res.result_int(), 404);
  EXPECT_NE(res.body().find("TOLLGATE_UI"), std::string::npos);
}

TEST(UiAssets, ContentTypes) {
  EXPECT_EQ(ui_content_type("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(ui_content_type("assets/a.b.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ui_content_type("assets/x.woff2"), "font/woff2");
  EXPECT_EQ(ui_content_type("a.png"), "image/png");
  EXPECT_EQ(ui_content_type("noext"), "application/octet-stream");
  EXPECT_EQ(ui_content_type("dir.d/noext"), "application/octet-stream");
  EXPECT_EQ(ui_content_type("x.exe"), "application/octet-stream");
}

// The table the build embedded (empty with TOLLGATE_UI=OFF): sorted, unique, quoted tags, an
// index.html whenever anything is there, and every file served with its own bytes.
TEST(UiAssets, EmbeddedTableIsWellFormed) {
  const auto assets = embedded_ui_assets();
  EXPECT_TRUE(
      std::is_sorted(assets.begin(), assets.end(), [](const UiAsset& a, const UiAsset& b) { return a.path < b.path; }));
  for (std::size_t i = 1; i < assets.size(); ++i) EXPECT_NE(assets[i - 1].path, assets[i].path);
  if (assets.empty()) GTEST_SKIP() << "built with TOLLGATE_UI=OFF";
  bool has_index = false;
  for (const auto& a : assets) {
    SCOPED_TRACE(std::string(a.path));
    has_index |= a.path == "index.html";
    EXPECT_FALSE(a.path.starts_with('/'));
    ASSERT_GE(a.etag.size(), 3u);
    EXPECT_EQ(a.etag.front(), '"');
    EXPECT_EQ(a.etag.back(), '"');
    auto res = ui_response(get("/ui/" + std::string(a.path)), "/ui/" + std::string(a.path));
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), a.body);
  }
  EXPECT_TRUE(has_index);
  // The page loads its scripts from files (CSP script-src 'self'): no inline script.
  for (const auto& a : assets)
    if (a.path == "index.html") {
      EXPECT_NE(a.body.find("<script type=\"module\" crossorigin src=\"/ui/assets/"), std::string_view::npos) << a.body;
      EXPECT_EQ(a.body.find("<script>"), std::string_view::npos);
      EXPECT_EQ(a.body.find("style="), std::string_view::npos);
    }
}

}  // namespace
}  // namespace tollgate::api
