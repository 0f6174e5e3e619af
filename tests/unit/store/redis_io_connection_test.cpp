// A worker thread's own Redis connection (store/redis/io_connection.hpp) against a real Redis
// (TOLLGATE_TEST_REDIS_URL, started by scripts/services.sh): pipelined replies in order, scripts
// after SCRIPT FLUSH, a server that stops answering, closes the connection or cannot be
// reached, and a connection destroyed with commands in flight.

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <future>
#include <random>
#include <thread>

#include "store/redis/io_connection.hpp"
#include "store/redis/redis_client.hpp"
#include "redis_test_util.hpp"

namespace tollgate::store::redis {
namespace {

namespace net = boost::asio;


// A worker thread as serve runs one: an io_context with the client's connection attached; the
// connection is destroyed on the thread once its io_context stopped.
class Worker {
 public:
  explicit Worker(RedisClient& client) : guard_(net::make_work_guard(ioc_)) {
    std::promise<void> ready;
    auto f = ready.get_future();
    thread_ = std::thread([this, &client, &ready] {
      auto conn = client.attach(ioc_);
      ready.set_value();
      ioc_.run();
      conn.reset();
    });
    f.get();
  }
  ~Worker() { stop(); }
  void stop() {
    guard_.reset();
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }
  /// Submits `argv` from the worker thread; the future gets the outcome.
  std::future<ReplyResult> submit(RedisClient& client, std::vector<std::string> argv) {
    auto p = std::make_shared<std::promise<ReplyResult>>();
    auto f = p->get_future();
    net::post(ioc_, [&client, argv = std::move(argv), p]() mutable {
      client.submit(std::move(argv), [p](ReplyResult r) { p->set_value(std::move(r)); });
    });
    return f;
  }
  std::future<ReplyResult> eval(RedisClient& client, const Script& s, std::vector<std::string> keys,
                                std::vector<std::string> args) {
    auto p = std::make_shared<std::promise<ReplyResult>>();
    auto f = p->get_future();
    net::post(ioc_, [&client, &s, keys = std::move(keys), args = std::move(args), p]() mutable {
      client.eval(s, std::move(keys), std::move(args), [p](ReplyResult r) { p->set_value(std::move(r)); });
    });
    return f;
  }

 private:
  net::io_context ioc_;
  net::executor_work_guard<net::io_context::executor_type> guard_;
  std::thread thread_;
};

// A server that accepts connections (the kernel completes the handshake) and never answers.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
  }
  ~SilentServer() { ::close(fd_); }
  /// Options that connect to it, with `timeout` per command.
  RedisOptions options(std::chrono::milliseconds timeout) const {
    RedisOptions o;
    o.host = "127.0.0.1";
    o.port = port_;
    o.timeout = timeout;
    return o;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class RedisIoConnection : public ::testing::Test {
 protected:
  void SetUp() override {
    TG_REQUIRE_REDIS(redis_);
    std::random_device rd;
    key_ = "tgtest:io:" + std::to_string(rd()) + std::to_string(rd());
  }
  RedisOptions redis_;
  std::string key_;
};

TEST_F(RedisIoConnection, PipelinedRepliesComeBackInOrderOnTheWorkerThread) {
  RedisClient client(redis_);
  Worker w(client);
  std::vector<std::future<ReplyResult>> replies;
  for (int i = 0; i < 200; ++i) replies.push_back(w.submit(client, {"INCR", key_}));
  for (int i = 0; i < 200; ++i) {
    auto r = replies[static_cast<std::size_t>(i)].get();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->as_integer(), i + 1);
  }
  // A big value round-trips whole (more than one read of the socket).
  const std::string big(200000, 'x');
  ASSERT_TRUE(w.submit(client, {"SET", key_ + ":big", big}).get());
  auto got = w.submit(client, {"GET", key_ + ":big"}).get();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->str, big);
  // An error reply is a reply, not a transport failure.
  auto bad = w.submit(client, {"HGET", key_}).get();
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->type, Reply::Type::error);
  EXPECT_TRUE(client.reachable());
  const auto st = client.stats();
  EXPECT_GE(st.commands, 203u);
  EXPECT_EQ(st.failures, 0u);
  client.call({"DEL", key_, key_ + ":big"});
}

TEST_F(RedisIoConnection, AScriptRunsAgainAfterTheServerForgotIt) {
  RedisClient client(redis_);
  Worker w(client);
  static const Script echo("return ARGV[1] .. KEYS[1]");
  auto a = w.eval(client, echo, {"k"}, {"one-"}).get();
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->str, "one-k");
  ASSERT_TRUE(client.call({"SCRIPT", "FLUSH"}));  // another connection: this one still thinks it is loaded
  auto b = w.eval(client, echo, {"k"}, {"two-"}).get();
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->str, "two-k");
}

TEST_F(RedisIoConnection, AServerThatStopsAnsweringTimesOut) {
  SilentServer silent;
  RedisClient client(silent.options(std::chrono::milliseconds(150)));
  Worker w(client);
  const auto t0 = std::chrono::steady_clock::now();
  auto a = w.submit(client, {"PING"});
  auto b = w.submit(client, {"PING"});
  auto ra = a.get();
  auto rb = b.get();
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(ra);
  ASSERT_FALSE(rb);
  EXPECT_NE(ra.error().message.find("did not answer within 150 ms"), std::string::npos) << ra.error().message;
  EXPECT_GE(waited, std::chrono::milliseconds(140));
  EXPECT_LT(waited, std::chrono::milliseconds(1000));
  EXPECT_FALSE(client.reachable());
  EXPECT_EQ(client.stats().failures, 2u);
}

TEST_F(RedisIoConnection, AConnectionTheServerClosedIsReopenedForTheNextCommand) {
  RedisClient client(redis_);
  Worker w(client);
  auto id = w.submit(client, {"CLIENT", "ID"}).get();
  ASSERT_TRUE(id && id->as_integer());
  ASSERT_TRUE(client.call({"CLIENT", "KILL", "ID", std::to_string(*id->as_integer())}));
  const auto epoch = client.connection_epoch();  // after the client's own connection opened
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto r = w.submit(client, {"PING"}).get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->str, "PONG");
  EXPECT_TRUE(client.reachable());
  EXPECT_EQ(client.connection_epoch(), epoch)
      << "a worker's reconnect leaves the ledger's readiness alone (its scripts check the counters themselves)";
}

TEST_F(RedisIoConnection, NothingRunsBeforeTheConnectionsSetUpSucceeded) {
  RedisOptions o = redis_;
  o.password = "not-the-password";
  o.username = "tollgate-no-such-user";
  RedisClient client(o);
  Worker w(client);
  auto r = w.submit(client, {"INCR", key_}).get();
  ASSERT_FALSE(r) << "AUTH failed: the command behind it is not sent";
  EXPECT_NE(r.error().message.find("set-up"), std::string::npos) << r.error().message;
  RedisClient good(redis_);
  auto exists = good.call({"EXISTS", key_});
  ASSERT_TRUE(exists);
  EXPECT_EQ(exists->as_integer(), 0);
}

TEST_F(RedisIoConnection, AnUnreachableServerFailsAtOnceUntilTheRetryInterval) {
  RedisOptions o = redis_;
  o.host = "127.0.0.1";
  o.port = 1;  // nothing listens
  o.retry_interval = std::chrono::milliseconds(300);
  RedisClient client(o);
  Worker w(client);
  auto first = w.submit(client, {"PING"}).get();
  ASSERT_FALSE(first);
  const auto t0 = std::chrono::steady_clock::now();
  auto second = w.submit(client, {"PING"}).get();
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("unreachable"), std::string::npos) << second.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100)) << "no connect attempt per command";
  EXPECT_EQ(client.stats().failures, 2u);
  EXPECT_FALSE(client.reachable());
}

TEST_F(RedisIoConnection, CommandsInFlightFailWhenTheWorkerStops) {
  SilentServer silent;
  RedisClient client(silent.options(std::chrono::milliseconds(10000)));
  auto w = std::make_unique<Worker>(client);
  auto pending = w->submit(client, {"PING"});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w->stop();
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  auto r = pending.get();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("closing"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace tollgate::store::redis
