// Connection limits of the server (ServerLimits::max_connections, max_connections_per_ip, the
// near-limit idle wait) and the descriptor arithmetic behind the default: a real server on
// 127.0.0.1:0 and blocking clients. Every wait is for a condition, bounded generously.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <charconv>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/descriptor_limit.hpp"
#include "http/server.hpp"
#include "test_server.hpp"

namespace tollgate::http {
namespace {

using namespace std::chrono_literals;
using testing::Client;
using testing::error_body;
using testing::eventually;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

/// `/fast` answers at once; `/slow?ms=N` after N ms.
net::awaitable<void> handle(Request& req, ResponseWriter& w) {
  const std::string target(req.target());
  if (target.starts_with("/slow")) {
    long long ms = 0;
    if (const auto eq = target.find("ms="); eq != std::string::npos)
      std::from_chars(target.data() + eq + 3, target.data() + target.size(), ms);
    net::steady_timer timer(co_await net::this_coro::executor, std::chrono::milliseconds(ms));
    auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
  }
  Response res{bhttp::status::ok, 11};
  res.body() = target.starts_with("/slow") ? "slow done" : "fast";
  co_await w.send(std::move(res));
}

/// A test server running `handle`.
struct LimitServer : testing::TestServer {
  LimitServer(ServerLimits limits, int threads) : testing::TestServer(limits, handle, threads) {}
};

ServerLimits with_max(std::size_t max_connections) {
  ServerLimits l;
  l.max_connections = max_connections;
  return l;
}

TEST(ServerLimits, AtTheLimitTheOldestIdleConnectionIsEvictedAndTheNewcomerServed) {
  LimitServer t(with_max(3), 1);
  Client silent(t.port);  // connected, never sent a byte: idle too (a slowloris must not pin a slot)
  ASSERT_TRUE(eventually([&] { return t.server.connections() == 1; }));
  Client kept1(t.port);
  ASSERT_TRUE(kept1.get("/fast"));  // served, now waiting in keep-alive
  Client kept2(t.port);
  ASSERT_TRUE(kept2.get("/fast"));
  ASSERT_TRUE(eventually([&] { return t.server.connections() == 3 && t.server.in_flight() == 0; }));

  Client newcomer(t.port);
  auto res = newcomer.get("/fast");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "fast");
  EXPECT_TRUE(silent.closed());  // the one idle the longest
  EXPECT_EQ(t.stats().evicted, 1u);
  EXPECT_EQ(t.stats().open, 3u);
  EXPECT_EQ(t.stats().backpressure, 0u);
  // The others were left alone.
  auto again = kept1.get("/fast");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body(), "fast");
}

TEST(ServerLimits, KeepAliveOrderDecidesWhichIdleConnectionGoesFirst) {
  LimitServer t(with_max(2), 1);
  Client a(t.port);
  ASSERT_TRUE(a.get("/fast"));
  Client b(t.port);
  ASSERT_TRUE(b.get("/fast"));
  ASSERT_TRUE(a.get("/fast"));  // a used again: b is now the one idle the longest
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 0; }));
  Client c(t.port);
  ASSERT_TRUE(c.get("/fast"));
  EXPECT_TRUE(b.closed());
  auto still = a.get("/fast");
  ASSERT_TRUE(still);
  EXPECT_EQ(still->body(), "fast");
  EXPECT_EQ(t.stats().evicted, 1u);
}

TEST(ServerLimits, BusyConnectionsAreNeverEvictedTheNewcomerWaitsForOneToEnd) {
  LimitServer t(with_max(2), 1);
  Client a(t.port);
  Client b(t.port);
  a.send("/slow?ms=600");
  b.send("/slow?ms=1200");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 2; }));
  // The kernel completes the handshake; the server does not accept it while both are busy.
  auto waiting = std::async(std::launch::async, [&] {
    Client c(t.port);
    auto r = c.get("/fast");
    return std::make_pair(r.has_value() && r->body() == "fast", Clock::now());
  });
  ASSERT_TRUE(eventually([&] { return t.stats().backpressure >= 1; }));
  EXPECT_EQ(t.stats().open, 2u);
  auto ra = a.read();
  const auto a_done = Clock::now();
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->body(), "slow done");  // not cut
  a.sock.close();                      // a's connection ends: its slot frees
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  const auto [served, c_done] = waiting.get();
  EXPECT_TRUE(served);
  EXPECT_GE(c_done, a_done);
  auto rb = b.read();
  ASSERT_TRUE(rb);
  EXPECT_EQ(rb->body(), "slow done");
  EXPECT_EQ(t.stats().evicted, 0u);
}

TEST(ServerLimits, EvictionReachesIdleConnectionsOfOtherWorkers) {
  // Two workers: the kernel spreads connections over their listeners, so a newcomer often lands
  // on a worker whose own connections are all busy while the idle one lives on the other.
  LimitServer t(with_max(3), 2);
  Client busy1(t.port);
  Client busy2(t.port);
  busy1.send("/slow?ms=3000");
  busy2.send("/slow?ms=3000");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 2; }));
  std::vector<std::unique_ptr<Client>> newcomers;  // kept open: each later one needs an eviction
  for (int i = 0; i < 12; ++i) {
    Client& c = *newcomers.emplace_back(std::make_unique<Client>(t.port));
    auto r = c.get("/fast");  // served: the newcomer before it is idle by now and evictable
    ASSERT_TRUE(r) << "newcomer " << i;
    EXPECT_EQ(r->body(), "fast");
    ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 2; }));
  }
  EXPECT_GE(t.stats().evicted, 11u);
  EXPECT_EQ(t.server.in_flight(), 2u);  // the busy ones were never touched
  auto r1 = busy1.read();
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->body(), "slow done");
  auto r2 = busy2.read();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->body(), "slow done");
}

TEST(ServerLimits, PerIpLimitAnswers429WithoutReadingAndOthersContinue) {
  ServerLimits l;
  l.max_connections_per_ip = 2;
  LimitServer t(l, 2);
  auto a = std::make_unique<Client>(t.port);
  Client b(t.port);
  ASSERT_TRUE(eventually([&] { return t.server.connections() == 2; }));
  Client extra(t.port);
  auto refused = extra.read();  // answered before it sent anything
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->result_int(), 429);
  EXPECT_FALSE(refused->keep_alive());
  EXPECT_EQ(refused->body(), error_body(429, "too many connections from this address"));
  EXPECT_TRUE(extra.closed());
  EXPECT_EQ(t.stats().refused_per_ip, 1u);
  // The connections within the limit still work.
  auto ok = b.get("/fast");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->body(), "fast");
  // Once one ends, the address may connect again.
  a.reset();
  ASSERT_TRUE(eventually([&] { return t.server.connections() == 1; }));
  Client again(t.port);
  auto served = again.get("/fast");
  ASSERT_TRUE(served);
  EXPECT_EQ(served->result_int(), 200);
}

TEST(ServerLimits, NearTheLimitIdleWaitsShrink) {
  ServerLimits l;
  l.max_connections = 4;
  l.pressure_percent = 50;
  l.pressure_idle_timeout = 200ms;
  l.idle_timeout = 60s;
  LimitServer t(l, 1);
  Client a(t.port);
  ASSERT_TRUE(a.get("/fast"));  // its keep-alive wait starts at 1 of 4: the normal minute
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 0; }));
  Client b(t.port);
  const auto start = Clock::now();
  ASSERT_TRUE(b.get("/fast"));  // its wait starts at 2 of 4 (50 %): 200 ms
  EXPECT_TRUE(b.closed());
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_EQ(t.stats().evicted, 0u);  // closed by its idle wait, not evicted
  auto r = a.get("/fast");           // a was left alone
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body(), "fast");
}

TEST(ServerLimits, CountersReturnToZeroWhenConnectionsEnd) {
  ServerLimits l;
  l.max_connections = 4;
  l.max_connections_per_ip = 3;
  LimitServer t(l, 2);
  {
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<Client>(t.port));
    ASSERT_TRUE(clients[0]->get("/fast"));
    // Each worker accepts from its own queue: until all three are accepted, a fourth connection
    // may be accepted before one of them and be let in while that one is refused.
    ASSERT_TRUE(eventually([&] { return t.server.connections() == 3; }));
    Client refused(t.port);
    auto r = refused.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->result_int(), 429);
    ASSERT_TRUE(eventually([&] { return t.server.connections() == 3; }));
    EXPECT_EQ(t.stats().open, 3u);
  }
  ASSERT_TRUE(eventually([&] { return t.server.connections() == 0; }));
  EXPECT_EQ(t.stats().open, 0u);
  EXPECT_EQ(t.server.in_flight(), 0u);
  EXPECT_EQ(t.stats().accepted, 4u);
  // Every slot and per-IP count came back: a full table's worth connects and is served.
  std::vector<std::unique_ptr<Client>> again;
  for (int i = 0; i < 3; ++i) {
    again.push_back(std::make_unique<Client>(t.port));
    auto r = again.back()->get("/fast");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->result_int(), 200);
  }
  EXPECT_EQ(t.stats().refused_per_ip, 1u);
}

TEST(DescriptorLimit, DefaultLeavesAQuarterOrAtLeast256) {
  EXPECT_EQ(resolve_max_connections(0, 20000).max_connections, 15000u);
  EXPECT_EQ(resolve_max_connections(0, 1024).max_connections, 768u);
  EXPECT_EQ(resolve_max_connections(0, 1048576).max_connections, 786432u);
  EXPECT_EQ(resolve_max_connections(0, 200).max_connections, 100u);  // tiny limit: half
  EXPECT_TRUE(resolve_max_connections(0, 1024).warning.empty());
}

TEST(DescriptorLimit, AnExplicitValueMustLeave128) {
  const auto kept = resolve_max_connections(500, 1024);
  EXPECT_EQ(kept.max_connections, 500u);
  EXPECT_TRUE(kept.warning.empty());
  EXPECT_EQ(resolve_max_connections(896, 1024).max_connections, 896u);
  const auto clamped = resolve_max_connections(5000, 1024);
  EXPECT_EQ(clamped.max_connections, 896u);
  EXPECT_NE(clamped.warning.find("5000"), std::string::npos);
}

TEST(DescriptorLimit, RaisingReachesTheHardLimit) {
  const auto d = raise_descriptor_limit();
  EXPECT_TRUE(d.error.empty()) << d.error;
  EXPECT_EQ(d.soft, d.hard);
  EXPECT_GE(d.soft, d.soft_before);
}

}  // namespace
}  // namespace tollgate::http
