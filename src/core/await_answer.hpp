#pragma once
/// Waiting in a coroutine for an answer that arrives through a callback, possibly on another
/// thread (a shared ledger's or limiter's reply, an identity refresh), without blocking the
/// thread the coroutine runs on.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "core/clock.hpp"

namespace tollgate::core {

/// Starts an operation that answers through a callback (`start(done)`) and waits for the answer
/// without blocking the thread: at once when `done` runs before `start` returns (the in-process
/// ledger and limiter), later when a shared one replies. nullopt once `deadline` passed first; an
/// answer arriving after that goes to `late` instead (to undo what it granted).
template <class T>
boost::asio::awaitable<std::optional<T>> await_answer(std::function<void(std::function<void(T)>)> start,
                                                      core::SteadyTime deadline, std::function<void(T)> late) {
  struct Wait {
    std::mutex mutex;
    std::optional<T> result;
    bool abandoned = false;
    std::shared_ptr<boost::asio::steady_timer> timer;
  };
  auto exec = co_await boost::asio::this_coro::executor;
  auto wait = std::make_shared<Wait>();
  wait->timer = std::make_shared<boost::asio::steady_timer>(exec, deadline);
  start([wait, exec, late](T answer) {
    std::unique_lock lock(wait->mutex);
    if (wait->abandoned) {
      lock.unlock();
      late(std::move(answer));
      return;
    }
    wait->result.emplace(std::move(answer));
    auto timer = wait->timer;
    lock.unlock();
    boost::asio::post(exec, [timer] { timer->cancel(); });
  });
  for (;;) {
    {
      std::lock_guard lock(wait->mutex);
      if (wait->result) co_return std::move(wait->result);
      if (std::chrono::steady_clock::now() >= deadline) {
        wait->abandoned = true;
        co_return std::nullopt;
      }
    }
    co_await wait->timer->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
}

}  // namespace tollgate::core
