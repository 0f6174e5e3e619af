// The server's graceful stop (Server::begin_drain / finish_drain / hurry): in-flight counting,
// the wait for requests in flight, Connection: close while draining, the listener closed, and
// the cut at the deadline. A real server on 127.0.0.1:0 and blocking clients; every wait is
// bounded generously and the assertions are on outcomes and order, not on tight timings.
#include "http/server.hpp"

#include <gtest/gtest.h>

#include "test_server.hpp"

#include <charconv>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>

namespace tollgate::http {
namespace {

using namespace std::chrono_literals;
using testing::Client;
using testing::eventually;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

/// `/fast` answers at once; `/slow?ms=N` after N ms, or 503 "cut" as soon as the server cuts
/// it (its on_shutdown hook); `/hang?ms=N` waits N ms with no hook (the server must close it).
net::awaitable<void> handle(Request& req, ResponseWriter& w) {
  const std::string target(req.target());
  if (target == "/fast") {
    Response res{bhttp::status::ok, 11};
    res.body() = "fast";
    co_await w.send(std::move(res));
    co_return;
  }
  long long ms = 0;
  if (const auto eq = target.find("ms="); eq != std::string::npos)
    std::from_chars(target.data() + eq + 3, target.data() + target.size(), ms);
  auto exec = co_await net::this_coro::executor;
  net::steady_timer timer(exec, std::chrono::milliseconds(ms));
  bool cut = false;
  if (target.starts_with("/slow")) {
    w.on_shutdown([&timer, &cut] {
      cut = true;
      timer.cancel();
    });
  }
  auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  (void)ec;
  w.on_shutdown(nullptr);
  Response res{cut ? bhttp::status::service_unavailable : bhttp::status::ok, 11};
  res.body() = cut ? "cut" : "slow done";
  co_await w.send(std::move(res));
}

/// A server on 127.0.0.1:0 running `handle` with `threads` workers.
struct TestServer : testing::TestServer {
  explicit TestServer(int threads = 1) : testing::TestServer(ServerLimits{}, handle, threads) {}
};

bool refuses_connections(unsigned short port) {
  net::io_context ioc;
  tcp::socket s(ioc);
  boost::system::error_code ec;
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
  return ec == net::error::connection_refused;
}

TEST(ServerDrain, CountsRequestsInFlight) {
  TestServer t;
  EXPECT_EQ(t.server.in_flight(), 0u);
  Client a(t.port);
  a.send("/slow?ms=300");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 1; }));
  EXPECT_EQ(t.server.connections(), 1u);
  auto res = a.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "slow done");
  EXPECT_TRUE(res->keep_alive());  // not draining: the connection stays open
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 0; }));
  EXPECT_EQ(t.server.connections(), 1u);
}

TEST(ServerDrain, WaitsForRequestsInFlightAndClosesAfterThem) {
  TestServer t(2);
  Client a(t.port);
  a.send("/slow?ms=400");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 1; }));
  EXPECT_EQ(t.server.begin_drain(), 1u);
  EXPECT_EQ(t.server.begin_drain(), 0u);  // once
  auto drain = std::async(std::launch::async, [&] { return t.server.finish_drain(Clock::now() + 20s); });
  auto res = a.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 200);
  EXPECT_EQ(res->body(), "slow done");
  EXPECT_FALSE(res->keep_alive());  // Connection: close while draining
  EXPECT_TRUE(a.closed());
  ASSERT_EQ(drain.wait_for(10s), std::future_status::ready);
  const DrainReport r = drain.get();
  EXPECT_EQ(r.in_flight_at_start, 1u);
  EXPECT_EQ(r.drained, 1u);
  EXPECT_EQ(r.cut, 0u);
  EXPECT_EQ(r.abandoned, 0u);
  EXPECT_LT(r.elapsed, 15s);  // ended with the request, not at the deadline
}

TEST(ServerDrain, NewConnectionsAreRefusedOnceDraining) {
  TestServer t(2);
  Client a(t.port);
  a.send("/slow?ms=60000");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 1; }));
  EXPECT_FALSE(refuses_connections(t.port));
  t.server.begin_drain();
  EXPECT_TRUE(eventually([&] { return refuses_connections(t.port); }));
  t.server.hurry();
  const DrainReport r = t.server.finish_drain(Clock::now() + 20s);
  EXPECT_EQ(r.cut, 1u);
  auto res = a.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "cut");
}

TEST(ServerDrain, IdleKeepAliveConnectionServesOneMoreRequestWithClose) {
  TestServer t;
  Client idle(t.port);
  idle.send("/fast");
  auto first = idle.read();
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->keep_alive());
  // The handler has returned (a request is in flight until then, and would close after it).
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 0; }));
  Client busy(t.port);
  busy.send("/slow?ms=1500");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 1; }));
  t.server.begin_drain();
  // A request already on its way on an open keep-alive connection is served, not dropped.
  idle.send("/fast");
  auto second = idle.read();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body(), "fast");
  EXPECT_FALSE(second->keep_alive());
  EXPECT_TRUE(idle.closed());
  const DrainReport r = t.server.finish_drain(Clock::now() + 20s);
  EXPECT_EQ(r.in_flight_at_start, 1u);
  EXPECT_EQ(r.drained, 2u);  // the slow one and the keep-alive arrival
  EXPECT_EQ(r.cut, 0u);
  auto slow = busy.read();
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->body(), "slow done");
}

TEST(ServerDrain, IdleConnectionsCloseAsSoonAsNothingIsInFlight) {
  TestServer t;
  Client idle(t.port);
  idle.send("/fast");
  ASSERT_TRUE(idle.read());
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 0; }));
  EXPECT_EQ(t.server.begin_drain(), 0u);
  const DrainReport r = t.server.finish_drain(Clock::now() + 30s);
  EXPECT_LT(r.elapsed, 20s);  // did not wait for the deadline
  EXPECT_EQ(r.drained, 0u);
  EXPECT_EQ(r.cut, 0u);
  EXPECT_EQ(r.abandoned, 0u);
  EXPECT_TRUE(idle.closed());
}

TEST(ServerDrain, DeadlineCutsWhatIsStillInFlight) {
  TestServer t(2);
  Client hooked(t.port);
  hooked.send("/slow?ms=60000");
  Client bare(t.port);
  bare.send("/hang?ms=60000");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 2; }));
  t.server.begin_drain();
  const DrainReport r = t.server.finish_drain(Clock::now() + 200ms, 300ms);
  EXPECT_EQ(r.in_flight_at_start, 2u);
  EXPECT_EQ(r.cut, 2u);
  EXPECT_EQ(r.drained, 0u);
  // The hook-less handler ignores its closed socket too: it is abandoned after the grace and
  // its frame destroyed by the join (finish_drain returns all the same).
  EXPECT_EQ(r.abandoned, 1u);
  EXPECT_LT(r.elapsed, 20s);
  EXPECT_EQ(t.server.in_flight(), 0u);
  // A handler with a shutdown hook ends its answer itself; one without is closed under it.
  auto res = hooked.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 503);
  EXPECT_EQ(res->body(), "cut");
  EXPECT_FALSE(bare.read());
}

TEST(ServerDrain, HurryCutsBeforeTheDeadline) {
  TestServer t;
  Client a(t.port);
  a.send("/slow?ms=60000");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 1; }));
  t.server.begin_drain();
  auto drain = std::async(std::launch::async, [&] { return t.server.finish_drain(Clock::now() + 60s); });
  EXPECT_EQ(drain.wait_for(100ms), std::future_status::timeout);  // still waiting for the request
  t.server.hurry();
  ASSERT_EQ(drain.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(drain.get().cut, 1u);
  auto res = a.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "cut");
}

TEST(ServerDrain, StopAbandonsAndJoinDestroysWhatWasLeft) {
  TestServer t;
  Client a(t.port);
  a.send("/hang?ms=60000");
  ASSERT_TRUE(eventually([&] { return t.server.in_flight() == 1; }));
  t.server.stop();
  t.server.join();  // the suspended handler's frame is destroyed here: its request is over
  EXPECT_EQ(t.server.in_flight(), 0u);
  EXPECT_EQ(t.server.connections(), 0u);
}

}  // namespace
}  // namespace tollgate::http
