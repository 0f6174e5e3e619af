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
/// ledger and limiter), later when a shared one replies. nullopt once `deadline` passed first. An
/// answer that nobody takes goes to `late` instead (to undo what it granted), on whichever thread
/// it arrives or the frame ends: after the deadline, or when the coroutine's frame is destroyed
/// without resuming (a request cut at shutdown).
template <class T>
boost::asio::awaitable<std::optional<T>> await_answer(std::function<void(std::function<void(T)>)> start,
                                                      core::SteadyTime deadline, std::function<void(T)> late) {
  struct Wait {
    std::mutex mutex;
    std::optional<T> result;
    bool abandoned = false;  // nobody will take the answer: it goes to `late`
    // Owned by the frame only: the answering side may hold `start`'s callback after the
    // io_context is gone, and must not then be the one destroying a timer of that context
    // (a use-after-free at shutdown, found by AddressSanitizer).
    std::weak_ptr<boost::asio::steady_timer> timer;
  };
  // Lives in the coroutine's frame: when the frame ends without taking an answer, the answer (or
  // one still to come) goes to `late`.
  struct Abandon {
    std::shared_ptr<Wait> wait;
    std::function<void(T)> late;
    bool taken = false;
    ~Abandon() {
      if (taken) return;
      std::optional<T> r;
      {
        std::lock_guard lock(wait->mutex);
        wait->abandoned = true;
        r.swap(wait->result);
      }
      if (r) late(std::move(*r));
    }
  };
  auto exec = co_await boost::asio::this_coro::executor;
  auto wait = std::make_shared<Wait>();
  const auto timer = std::make_shared<boost::asio::steady_timer>(exec, deadline);
  wait->timer = timer;
  Abandon guard{wait, late};
  start([wait, exec, late](T answer) {
    std::unique_lock lock(wait->mutex);
    if (wait->abandoned) {
      lock.unlock();
      late(std::move(answer));
      return;
    }
    wait->result.emplace(std::move(answer));
    if (auto t = wait->timer.lock()) boost::asio::post(exec, [t = std::move(t)] { t->cancel(); });
  });
  for (;;) {
    {
      std::lock_guard lock(wait->mutex);
      if (wait->result) {
        guard.taken = true;
        co_return std::move(wait->result);
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
    }
    co_await timer->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  co_return std::nullopt;  // the guard hands an answer that comes later to `late`
}

}  // namespace tollgate::core
