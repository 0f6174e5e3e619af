// core::await_answer: an answer given at once, one that comes later from another thread, one past
// the deadline, and one that arrives after the waiting coroutine's frame was destroyed (a
// request cut at shutdown): never lost, what nobody takes goes to `late`.
#include "core/await_answer.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <thread>

namespace tollgate::core {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

TEST(AwaitAnswer, AnswersAtOnceLaterAndPastTheDeadline) {
  net::io_context ioc;
  std::optional<int> now_value, later_value, past_value;
  std::atomic<int> late{0};
  std::function<void(int)> slow;
  std::thread answerer;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        now_value = co_await await_answer<int>([](std::function<void(int)> done) { done(1); },
                                               std::chrono::steady_clock::now() + 1s, [&](int v) { late = v; });
        later_value = co_await await_answer<int>(
            [&](std::function<void(int)> done) {
              answerer = std::thread([done] {
                std::this_thread::sleep_for(10ms);
                done(2);
              });
            },
            std::chrono::steady_clock::now() + 5s, [&](int v) { late = v; });
        past_value = co_await await_answer<int>([&](std::function<void(int)> done) { slow = std::move(done); },
                                                std::chrono::steady_clock::now() + 20ms, [&](int v) { late = v; });
      },
      net::detached);
  ioc.run();
  answerer.join();
  EXPECT_EQ(now_value, 1);
  EXPECT_EQ(later_value, 2);
  EXPECT_FALSE(past_value);
  ASSERT_TRUE(slow);
  slow(3);  // after the deadline: undone by `late`
  EXPECT_EQ(late, 3);
}

TEST(AwaitAnswer, AnAnswerAfterTheFrameWasDestroyedGoesToLate) {
  std::function<void(int)> answer;
  std::atomic<int> late{0};
  {
    net::io_context ioc;
    net::co_spawn(
        ioc,
        [&]() -> net::awaitable<void> {
          (void)co_await await_answer<int>([&](std::function<void(int)> done) { answer = std::move(done); },
                                           std::chrono::steady_clock::now() + 1h, [&](int v) { late = v; });
        },
        net::detached);
    ioc.run_for(20ms);  // the coroutine waits
  }                     // the context and the coroutine's frame are destroyed without resuming it
  ASSERT_TRUE(answer);
  answer(7);
  EXPECT_EQ(late, 7);
}

}  // namespace
}  // namespace tollgate::core
