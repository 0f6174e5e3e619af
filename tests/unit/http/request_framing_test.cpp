// RFC 9112 request framing rules Beast leaves to the server (http/request_framing.hpp).
#include "http/request_framing.hpp"

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <gtest/gtest.h>

namespace tollgate::http {
namespace {

namespace bhttp = boost::beast::http;

bhttp::request_header<> head(unsigned version, std::initializer_list<std::pair<const char*, const char*>> fields) {
  bhttp::request_header<> h;
  h.method(bhttp::verb::post);
  h.target("/v1/chat/completions");
  h.version(version);
  for (const auto& [k, v] : fields) h.insert(k, v);
  return h;
}

TEST(RequestFraming, HeadEndFindsTheEmptyLine) {
  EXPECT_EQ(head_end("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"), 27u);
  EXPECT_EQ(head_end("GET / HTTP/1.1\r\nHost: a\r\n"), std::string_view::npos);
  EXPECT_EQ(head_end("GET / HTTP/1.1\nHost: a\n\n"), 24u) << "bare LF: handed to Beast, which refuses it";
}

TEST(RequestFraming, ARequestLineStartsWithAMethodToken) {
  EXPECT_FALSE(check_request_start(""));
  EXPECT_FALSE(check_request_start("POS"));
  EXPECT_FALSE(check_request_start("get / HTTP/1.1"));
  EXPECT_EQ(check_request_start("\x16\x03\x01")->status, 400) << "a TLS ClientHello";
  EXPECT_TRUE(check_request_start("\r\nGET / HTTP/1.1"));
  EXPECT_TRUE(check_request_start(" GET"));
}

TEST(RequestFraming, ObsFoldIsRefused) {
  EXPECT_FALSE(check_raw_head("POST / HTTP/1.1\r\nHost: a\r\nX: b\r\n\r\n"));
  auto sp = check_raw_head("POST / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n");
  ASSERT_TRUE(sp);
  EXPECT_EQ(sp->status, 400);
  EXPECT_TRUE(check_raw_head("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\tchunked\r\n\r\n"));
}

TEST(RequestFraming, AtMostKMaxHeaderFieldsFields) {
  auto h = head(11, {{"Host", "a"}});
  for (std::size_t i = 1; i < kMaxHeaderFields; ++i) h.insert("x-f" + std::to_string(i), "v");
  EXPECT_FALSE(check_request_head(h));
  h.insert("x-one-more", "v");
  ASSERT_TRUE(check_request_head(h));
  EXPECT_EQ(check_request_head(h)->status, 431);
}

TEST(RequestFraming, HostExactlyOnceOnHttp11) {
  EXPECT_FALSE(check_request_head(head(11, {{"Host", "a"}})));
  EXPECT_EQ(check_request_head(head(11, {}))->status, 400);
  EXPECT_EQ(check_request_head(head(11, {{"Host", "a"}, {"host", "b"}}))->status, 400);
  EXPECT_FALSE(check_request_head(head(10, {}))) << "HTTP/1.0 need not send Host";
}

TEST(RequestFraming, TransferEncodingIsOneChunkedOnHttp11) {
  EXPECT_FALSE(check_request_head(head(11, {{"Host", "a"}, {"Transfer-Encoding", "chunked"}})));
  EXPECT_FALSE(check_request_head(head(11, {{"Host", "a"}, {"Transfer-Encoding", " Chunked "}})));
  EXPECT_EQ(check_request_head(head(11, {{"Host", "a"}, {"Transfer-Encoding", "gzip, chunked"}}))->status, 501);
  EXPECT_EQ(check_request_head(head(11, {{"Host", "a"}, {"Transfer-Encoding", "xchunked"}}))->status, 501);
  EXPECT_EQ(check_request_head(head(11, {{"Host", "a"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}))->status, 400);
  EXPECT_EQ(check_request_head(head(11, {{"Host", "a"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "x"}}))->status, 501);
  EXPECT_EQ(check_request_head(head(10, {{"Transfer-Encoding", "chunked"}}))->status, 400) << "faulty framing on HTTP/1.0";
  auto long_name = check_request_head(head(11, {{"Host", "a"}, {"Transfer-Encoding", std::string(5000, 'x').c_str()}}));
  ASSERT_TRUE(long_name);
  EXPECT_LT(long_name->message.size(), 200u) << "the message quotes a bounded part of the coding";
}

TEST(RequestFraming, APartialHeadIsRefusedWhenNotHttpOrTooLarge) {
  EXPECT_FALSE(check_partial_head("POST / HTTP/1.1\r\nHost: a\r\n", 64));
  EXPECT_EQ(check_partial_head("\x16\x03\x01", 64)->status, 400);
  const std::string big = "GET / HTTP/1.1\r\nX: " + std::string(100, 'a');
  EXPECT_EQ(check_partial_head(big, 64)->status, 431);
  EXPECT_FALSE(check_partial_head(big, big.size())) << "at the limit: read on";
}

/// Puts `bytes` into a parser configured as the server's; returns the error (none when whole).
boost::system::error_code parse(std::string_view bytes, std::size_t max_header, std::size_t max_body) {
  RequestParser p;
  configure_request_parser(p, max_header, max_body);
  boost::system::error_code ec;
  while (!bytes.empty() && !ec) {
    const auto n = p.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec == bhttp::error::need_more) return ec;
    bytes.remove_prefix(n);
    if (n == 0) break;
  }
  return ec;
}

TEST(RequestFraming, TheServerParserEnforcesItsLimits) {
  const std::string head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_FALSE(parse(head + "5;x=y\r\nhello\r\n0\r\n\r\n", 1024, 100));
  EXPECT_EQ(parse(head + "5;x=" + std::string(kMaxChunkExtensionBytes, 'y') + "\r\nhello\r\n0\r\n\r\n", 1024, 100),
            bhttp::error::bad_chunk_extension);
  EXPECT_EQ(parse(head + "65\r\n" + std::string(101, 'a') + "\r\n0\r\n\r\n", 1024, 100), bhttp::error::body_limit);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n", 1024, 100), bhttp::error::body_limit);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(2000, 'a') + "\r\n\r\n", 1024, 100),
            bhttp::error::header_limit);
}

TEST(RequestFraming, ReadErrorsAnswerAsTheServerDoes) {
  namespace net = boost::asio;
  EXPECT_EQ(read_refusal(bhttp::error::body_limit, false, 10)->status, 413);
  EXPECT_EQ(read_refusal(bhttp::error::body_limit, true, 10)->message, "request body exceeds the limit of 10 bytes");
  EXPECT_EQ(read_refusal(bhttp::error::header_limit, false, 10)->status, 431);
  EXPECT_EQ(read_refusal(bhttp::error::bad_chunk_extension, true, 10)->status, 400);
  EXPECT_EQ(read_refusal(bhttp::error::bad_field, false, 10)->status, 400);
  EXPECT_EQ(read_refusal(boost::beast::error::timeout, true, 10)->status, 408);
  // The peer went away: the connection ends without an answer.
  EXPECT_FALSE(read_refusal(boost::beast::error::timeout, false, 10));
  EXPECT_FALSE(read_refusal(bhttp::error::end_of_stream, false, 10));
  EXPECT_FALSE(read_refusal(net::error::connection_reset, false, 10));
  EXPECT_FALSE(read_refusal(bhttp::error::partial_message, true, 10));
  EXPECT_FALSE(read_refusal(net::error::eof, true, 10));
  EXPECT_EQ(read_refusal(net::error::connection_reset, true, 10)->status, 400) << "as before the move: answered";
}

TEST(RequestFraming, TrailerFieldsAreRefused) {
  auto h = head(11, {{"Host", "a"}, {"Transfer-Encoding", "chunked"}});
  EXPECT_FALSE(check_no_trailers(2, h));
  h.insert("Authorization", "Bearer x");
  EXPECT_EQ(check_no_trailers(2, h)->status, 400);
}

}  // namespace
}  // namespace tollgate::http
