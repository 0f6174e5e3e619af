// http/reactor_reserve.hpp: the reserved states are Asio's own free list, so sockets opened
// afterwards on the same io_context work as before (they take the reserved states).

#include "http/reactor_reserve.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

TEST(ReactorReserve, ReservesTheCountAskedAndLeavesNoWork) {
  net::io_context ioc;
  EXPECT_EQ(tollgate::http::reserve_reactor_states(ioc, 500), 500u);
  EXPECT_EQ(tollgate::http::reserve_reactor_states(ioc, 0), 0u);
  EXPECT_EQ(ioc.run(), 0u);  // nothing queued, nothing outstanding: run() returns at once
}

TEST(ReactorReserve, SocketsOpenedAfterwardsCarryData) {
  net::io_context ioc;
  ASSERT_EQ(tollgate::http::reserve_reactor_states(ioc, 64), 64u);
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  // More connections than reserved states: the reserved ones, then new ones.
  constexpr int kConnections = 80;
  std::vector<tcp::socket> clients, servers;
  for (int i = 0; i < kConnections; ++i) {
    clients.emplace_back(ioc);
    clients.back().connect(acceptor.local_endpoint());
    servers.push_back(acceptor.accept());
  }
  // Each read starts before its data is written, so it waits in the reactor (epoll) on the
  // socket's state, reserved or new, and completes when the data arrives.
  int echoed = 0;
  for (int i = 0; i < kConnections; ++i) {
    const std::string msg = "hello " + std::to_string(i);
    std::string got(msg.size(), '\0');
    net::async_read(servers[i], net::buffer(got), [&](const boost::system::error_code& ec, std::size_t n) {
      if (!ec && n == msg.size()) ++echoed;
    });
    EXPECT_EQ(ioc.poll(), 0u);  // no data yet: the read waits
    net::write(clients[i], net::buffer(msg));
    ioc.run();
    ioc.restart();
    EXPECT_EQ(got, msg);
  }
  EXPECT_EQ(echoed, kConnections);
}

}  // namespace
