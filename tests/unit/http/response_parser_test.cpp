// http::ResponseParser: the upstream answer's head kept compact, its body appended to the
// reader's string. Checked against Beast's own response_parser on the same bytes, fed in pieces
// of every size, for the framings an upstream uses.
#include "http/response_parser.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace bhttp = boost::beast::http;
using tollgate::http::ResponseParser;

namespace {

struct Parsed {
  int status = 0;
  bool done = false, keep_alive = false;
  std::string body;
  boost::beast::error_code ec;
};

/// Feeds `wire` to `p` in pieces of `piece` bytes (what a socket may deliver), keeping what the
/// parser did not take for the next piece, and signals the end of input when `eof`.
template <class Parser>
boost::beast::error_code feed(Parser& p, const std::string& wire, std::size_t piece, bool eof) {
  std::string pending;
  std::size_t at = 0;
  boost::beast::error_code ec;
  while (at < wire.size() || !pending.empty()) {
    const std::size_t n = std::min(piece, wire.size() - at);
    pending.append(wire, at, n);
    at += n;
    for (;;) {
      if (pending.empty() || p.is_done()) break;
      const std::size_t used = p.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;
      }
      if (ec) return ec;
      if (used == 0) break;
    }
    if (p.is_done()) break;
    if (n == 0) break;
  }
  if (eof && !p.is_done()) p.put_eof(ec);
  return ec;
}

Parsed ours(const std::string& wire, std::size_t piece, bool eof) {
  ResponseParser p;
  p.body_limit(boost::none);
  p.eager(true);
  Parsed r;
  p.body_to(&r.body);
  r.ec = feed(p, wire, piece, eof);
  r.status = p.status();
  r.done = p.is_done();
  r.keep_alive = r.done && p.keep_alive();
  return r;
}

Parsed beasts(const std::string& wire, std::size_t piece, bool eof) {
  bhttp::response_parser<bhttp::string_body> p;
  p.body_limit(boost::none);
  p.eager(true);
  Parsed r;
  r.ec = feed(p, wire, piece, eof);
  r.status = static_cast<int>(p.get().result_int());
  r.done = p.is_done();
  r.keep_alive = r.done && p.keep_alive();
  r.body = p.get().body();
  return r;
}

/// One chunk of the chunked transfer coding (RFC 9112 section 7.1), with `ext` as its extension.
std::string chunk(std::string_view data, std::string_view ext = {}) {
  char size[20];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + std::string(ext) + "\r\n" + std::string(data) + "\r\n";
}

std::string length_field(std::string_view body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n"; }

const std::string kJson = R"({"id":"x","choices":[1,2]})";

/// (the bytes, whether the answer ends with the connection's close)
const std::vector<std::pair<std::string, bool>> kAnswers = {
    // Content-Length, keep-alive.
    {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: req_1\r\n" + length_field(kJson) + "\r\n" + kJson,
     false},
    // Chunked, with a chunk extension and a trailer.
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n" +
         chunk("data: a", ";ext=1") + chunk("\n\nd") + chunk("data: [DONE]\n\ndata: more\n") + "0\r\nX-Trailer: t\r\n\r\n",
     false},
    // No length, no chunking: the body runs to the connection's close (HTTP/1.0 style).
    {"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"usage\":{\"prompt_tokens\":3}}", true},
    // Connection: close with a length, an empty body, an error status.
    {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
    {"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n", false},
    // Padded values, a field without a value.
    {"HTTP/1.1 500 Internal Server Error\r\nX-Padded:   spaced value   \r\nX-Empty:\r\nContent-Length: 2\r\n\r\nno", false},
};

}  // namespace

TEST(ResponseParser, ParsesWhatBeastsParserParsesInPiecesOfEverySize) {
  for (const auto& [wire, eof] : kAnswers) {
    for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}, wire.size()}) {
      const auto a = ours(wire, piece, eof);
      const auto b = beasts(wire, piece, eof);
      EXPECT_EQ(a.ec, b.ec) << wire << " piece " << piece << ": " << a.ec.message() << " / " << b.ec.message();
      EXPECT_EQ(a.status, b.status) << wire;
      EXPECT_EQ(a.done, b.done) << wire << " piece " << piece;
      EXPECT_EQ(a.keep_alive, b.keep_alive) << wire;
      EXPECT_EQ(a.body, b.body) << wire << " piece " << piece;
      EXPECT_TRUE(a.done) << wire << " piece " << piece << " " << a.ec.message();
    }
  }
}

TEST(ResponseParser, FindsFieldsByNameCaseInsensitivelyTheFirstOfRepeatsAsBeastDoes) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-ratelimit-remaining-requests: 9\r\n"
      "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nRETRY-AFTER-MS:  1500 \r\nX-Empty:\r\nContent-Length: 0\r\n\r\n";
  ResponseParser p;
  boost::beast::error_code ec;
  p.put(boost::asio::buffer(wire), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(p.is_header_done());
  bhttp::response_parser<bhttp::empty_body> beast;
  beast.put(boost::asio::buffer(wire), ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(p.status(), 200);
  EXPECT_EQ(p.version(), 11);
  EXPECT_EQ(p.field_count(), 7u);
  for (const char* name : {"content-type", "CONTENT-TYPE", "X-RateLimit-Remaining-Requests", "set-cookie",
                           "retry-after-ms", "x-empty", "content-length", "absent", ""}) {
    const auto it = beast.get().find(name);
    const std::string_view want = it == beast.get().end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
    EXPECT_EQ(p.header(name), want) << name;
  }
  EXPECT_EQ(p.header("set-cookie"), "a=1");
  EXPECT_EQ(p.header("retry-after-ms"), "1500");
}

TEST(ResponseParser, ABodyWithNowhereToGoIsAnErrorNotLostBytes) {
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  ResponseParser p;
  p.eager(true);
  boost::beast::error_code ec;
  p.put(boost::asio::buffer(wire), ec);
  EXPECT_EQ(ec, bhttp::error::unexpected_body);
  EXPECT_FALSE(p.is_done());
}

TEST(ResponseParser, TheHeadLimitHolds) {
  std::string wire = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 2000; ++i) wire += "X-Field-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  wire += "Content-Length: 0\r\n\r\n";
  ResponseParser p;
  p.header_limit(64 * 1024);
  boost::beast::error_code ec;
  p.put(boost::asio::buffer(wire), ec);
  EXPECT_EQ(ec, bhttp::error::header_limit);
  // Within the limit, every field is kept and found.
  std::string ok = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 500; ++i) ok += "X-Field-" + std::to_string(i) + ": value " + std::to_string(i) + "\r\n";
  ok += "Content-Length: 0\r\n\r\n";
  ResponseParser q;
  q.header_limit(64 * 1024);
  q.put(boost::asio::buffer(ok), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(q.field_count(), 501u);
  EXPECT_EQ(q.header("x-field-0"), "value 0");
  EXPECT_EQ(q.header("X-FIELD-499"), "value 499");
}

// As the client reads: the head first (Beast's async_read_header parses with eager off, so a put
// stops at the end of the head even when body bytes came with it), then the body into the sink.
// A chunked body's trailer fields are not kept as head fields.
TEST(ResponseParser, TheHeadStopsAtItsEndAndTrailersAreNotHeadFields) {
  const std::string wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n" +
                           chunk("data: one\n\n") + chunk("data: two\n\n") + "0\r\nX-Trailer: t\r\n\r\n";
  ResponseParser p;
  boost::beast::error_code ec;
  const std::size_t head = p.put(boost::asio::buffer(wire), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(p.is_header_done());
  EXPECT_EQ(wire.substr(head), chunk("data: one\n\n") + chunk("data: two\n\n") + "0\r\nX-Trailer: t\r\n\r\n");  // unread
  const std::string_view content_type = p.header("content-type");
  std::string body;
  p.body_to(&body);
  p.eager(true);
  std::string rest = wire.substr(head);
  while (!rest.empty() && !p.is_done()) {
    const std::size_t used = p.put(boost::asio::buffer(rest), ec);
    ASSERT_FALSE(ec) << ec.message();
    rest.erase(0, used);
  }
  EXPECT_TRUE(p.is_done());
  EXPECT_EQ(body, "data: one\n\ndata: two\n\n");
  EXPECT_EQ(p.field_count(), 2u);
  EXPECT_EQ(p.header("x-trailer"), "");
  EXPECT_EQ(content_type, "text/event-stream");  // a view given out before the body stays valid
}
