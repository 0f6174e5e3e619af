// http::Exchange over a real socket: a scripted upstream answers each request with bytes of
// its own choosing (framings, cut bodies, bytes beyond the answer), and the test reads the
// answer the way the attempt loop does (read_all, or read_some until 0). Waits are bounded; no
// test asserts a timing.
#include "http/client.hpp"

#include <atomic>
#include <cstdio>
#include <optional>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace tollgate::http;

namespace {

/// Accepts connections one after another; for each request read on a connection, writes the
/// next scripted answer (then closes the connection when the answer says so).
struct ScriptedUpstream {
  struct Answer {
    std::string bytes;
    bool close_after = false;
  };
  explicit ScriptedUpstream(std::vector<Answer> answers) : script(std::move(answers)), acceptor(ioc) {
    acceptor.open(tcp::v4());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    acceptor.listen();
    port = acceptor.local_endpoint().port();
    thread = std::thread([this] { serve(); });
  }
  ~ScriptedUpstream() {
    // A test that failed early leaves serve() waiting in accept(), which closing the acceptor
    // from here would not wake: a connection of our own does, and serve() then sees `stopping`.
    stopping = true;
    boost::system::error_code ec;
    tcp::socket wake(ioc);
    wake.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    if (thread.joinable()) thread.join();
  }
  void serve() {
    std::size_t next = 0;
    while (next < script.size()) {
      boost::system::error_code ec;
      tcp::socket s(ioc);
      acceptor.accept(s, ec);
      if (ec || stopping) return;
      ++accepted;
      net::streambuf in;
      while (next < script.size()) {
        // A request: its head, then Content-Length bytes.
        const auto head = net::read_until(s, in, "\r\n\r\n", ec);
        if (ec) break;
        std::string h(net::buffers_begin(in.data()), net::buffers_begin(in.data()) + static_cast<std::ptrdiff_t>(head));
        in.consume(head);
        std::size_t length = 0;
        if (auto at = h.find("Content-Length: "); at != std::string::npos) length = std::stoul(h.substr(at + 16));
        while (in.size() < length && !ec) in.commit(s.read_some(in.prepare(length - in.size()), ec));
        in.consume(length);
        const auto& a = script[next++];
        net::write(s, net::buffer(a.bytes), ec);
        if (a.close_after || ec) break;
      }
      s.shutdown(tcp::socket::shutdown_both, ec);
    }
  }
  std::vector<Answer> script;
  net::io_context ioc;
  tcp::acceptor acceptor;
  unsigned short port = 0;
  std::atomic<int> accepted{0};
  std::atomic<bool> stopping{false};
  std::thread thread;
};

struct Result {
  int status = 0;
  std::string content_type, retry_after, body;
  std::optional<TransportError::Kind> error;
};

/// One exchange against 127.0.0.1:`port` on `pool`: the body by read_all (`limit` bytes at most)
/// or, when `streamed`, by read_some until it returns 0.
Result exchange(net::io_context& ioc, UpstreamPool& pool, unsigned short port, bool streamed, std::size_t limit = 1 << 20) {
  Result r;
  OutgoingRequest req;
  req.target = *parse_url("http://127.0.0.1:" + std::to_string(port) + "/v1/chat/completions");
  req.body = R"({"model":"m","messages":[]})";
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        auto ex = co_await Exchange::start(pool, req, deadline);
        if (!ex) {
          r.error = ex.error().kind;
          co_return;
        }
        r.status = (*ex)->status();
        r.content_type = std::string((*ex)->header("content-type"));
        r.retry_after = std::string((*ex)->header("Retry-After"));
        if (streamed) {
          for (;;) {
            auto n = co_await (*ex)->read_some(r.body, deadline);
            if (!n) {
              r.error = n.error().kind;
              co_return;
            }
            if (*n == 0) break;
          }
        } else {
          auto body = co_await (*ex)->read_all(limit, deadline);
          if (!body) {
            r.error = body.error().kind;
            co_return;
          }
          r.body = std::move(*body);
        }
        (*ex)->finish();
      },
      net::detached);
  ioc.restart();
  ioc.run();
  return r;
}

const std::string kJson = R"({"id":"chatcmpl-1","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3}})";

std::string with_length(std::string_view status_line, std::string_view fields, std::string_view body) {
  return std::string(status_line) + "\r\n" + std::string(fields) + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + std::string(body);
}

}  // namespace

TEST(Exchange, ReadsALengthFramedAnswerAndReusesTheConnection) {
  ScriptedUpstream up({{with_length("HTTP/1.1 200 OK", "Content-Type: application/json\r\n", kJson)},
                       {with_length("HTTP/1.1 429 Too Many Requests", "Retry-After: 7\r\nContent-Type: application/json\r\n",
                                    R"({"error":{"message":"slow down"}})")}});
  net::io_context ioc;
  UpstreamPool pool(ioc, {});
  const auto reused_before = pool_counters().reused;
  auto a = exchange(ioc, pool, up.port, false);
  ASSERT_FALSE(a.error);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body, kJson);
  auto b = exchange(ioc, pool, up.port, false);
  ASSERT_FALSE(b.error);
  EXPECT_EQ(b.status, 429);
  EXPECT_EQ(b.retry_after, "7");
  EXPECT_EQ(b.body, R"({"error":{"message":"slow down"}})");
  EXPECT_EQ(up.accepted.load(), 1);  // the second exchange went on the kept connection
  EXPECT_EQ(pool_counters().reused, reused_before + 1);
}

TEST(Exchange, StreamsAChunkedAnswerWithoutItsFraming) {
  const std::string events = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
  std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t at = 0; at < events.size(); at += 9) {
    const auto piece = events.substr(at, 9);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", piece.size());
    wire += std::string(size) + (at == 0 ? ";name=value" : "") + "\r\n" + piece + "\r\n";
  }
  wire += "0\r\n\r\n";
  ScriptedUpstream up({{wire}});
  net::io_context ioc;
  UpstreamPool pool(ioc, {});
  auto r = exchange(ioc, pool, up.port, true);
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.content_type, "text/event-stream");
  EXPECT_EQ(r.body, events);
}

TEST(Exchange, AnAnswerToTheConnectionsCloseIsReadWhole) {
  ScriptedUpstream up({{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + kJson, true}});
  net::io_context ioc;
  UpstreamPool pool(ioc, {});
  auto r = exchange(ioc, pool, up.port, false);
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.body, kJson);
}

TEST(Exchange, ABodyCutShortIsAResetNotAnAnswer) {
  const std::string full = with_length("HTTP/1.1 200 OK", "Content-Type: application/json\r\n", kJson);
  ScriptedUpstream up({{full.substr(0, full.size() - 10), true}});
  net::io_context ioc;
  UpstreamPool pool(ioc, {});
  auto r = exchange(ioc, pool, up.port, false);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(*r.error, TransportError::Kind::reset);
}

TEST(Exchange, ABodyOverTheLimitIsRefused) {
  const std::string big(300 * 1024, 'x');
  ScriptedUpstream up({{with_length("HTTP/1.1 200 OK", "Content-Type: application/json\r\n", big)}});
  net::io_context ioc;
  UpstreamPool pool(ioc, {});
  auto r = exchange(ioc, pool, up.port, false, 100 * 1024);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(*r.error, TransportError::Kind::body_too_large);
  // Read whole under a limit it fits: every byte, in order.
  ScriptedUpstream up2({{with_length("HTTP/1.1 200 OK", "", big)}});
  auto ok = exchange(ioc, pool, up2.port, false, big.size());
  ASSERT_FALSE(ok.error);
  EXPECT_EQ(ok.body, big);
}

TEST(Exchange, BytesBeyondTheAnswerKeepTheConnectionOutOfThePool) {
  // A wrong Content-Length (or an unasked second answer): the extra bytes must never be read as
  // the answer to the next request, so the connection is closed and the next one is new.
  ScriptedUpstream up({{with_length("HTTP/1.1 200 OK", "", kJson) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno"},
                       {with_length("HTTP/1.1 200 OK", "", kJson)}});
  net::io_context ioc;
  UpstreamPool pool(ioc, {});
  auto a = exchange(ioc, pool, up.port, false);
  ASSERT_FALSE(a.error);
  EXPECT_EQ(a.body, kJson);
  // The upstream serves the second answer on a new connection only.
  auto b = exchange(ioc, pool, up.port, false);
  EXPECT_EQ(b.body, kJson);
  EXPECT_EQ(up.accepted.load(), 2);
}
