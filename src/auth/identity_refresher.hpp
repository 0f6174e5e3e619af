#pragma once
/// Keeps an instance's identities in step with the store, off the worker threads: one thread
/// polls the store's identity generation every `poll` (tollgate_settings.identity_refresh_ms) and
/// reloads when it moved, and refreshes on demand after a refused key (a key created or unblocked
/// on another instance since the last poll), as a LiteLLM proxy reads its database on a cache
/// miss. A worker waits for that refresh without blocking (core::await_answer); the store is
/// never read on a worker thread.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "auth/identities.hpp"
#include "store/store.hpp"

namespace tollgate::auth {

struct RefresherOptions {
  /// Between two polls of the store's identity generation.
  std::chrono::milliseconds poll{250};
  /// At least this long between two refreshes asked for by refused keys: a stream of invalid
  /// keys costs one small read of the store per interval.
  std::chrono::milliseconds min_interval{5};
  /// After a refresh that failed (the store unreachable), refused keys ask for none this long.
  std::chrono::milliseconds error_backoff{1000};
  /// Refused requests waiting for a refresh beyond this are answered at once (no refresh).
  std::size_t max_waiting = 10000;
};

class IdentityRefresher {
 public:
  IdentityRefresher(std::shared_ptr<Identities> identities, std::shared_ptr<store::Store> store,
                    RefresherOptions options = {});
  /// stop().
  ~IdentityRefresher();
  /// Stops the thread and answers every waiting caller (false); later after_miss calls are
  /// answered at once. Idempotent. `serve` calls it while the workers' io_contexts still exist
  /// (an answer posts to the waiting request's executor).
  void stop();
  IdentityRefresher(const IdentityRefresher&) = delete;
  IdentityRefresher& operator=(const IdentityRefresher&) = delete;

  /// A key in a request that arrived at `arrived` was refused by `refused_by`. `done(retry)` is
  /// called once, on the refresher's thread (or inline when nothing can be done): after a refresh
  /// that started after `arrived` finished (it read everything committed before the request
  /// arrived), or at once during the error back-off or beyond max_waiting. `retry`: the index in
  /// force differs from `refused_by`, so authenticating again may succeed.
  void after_miss(const IdentityIndex* refused_by, std::chrono::steady_clock::time_point arrived,
                  std::function<void(bool)> done);

 private:
  struct Waiter {
    const IdentityIndex* refused_by;
    std::chrono::steady_clock::time_point arrived;
    std::function<void(bool)> done;
  };
  void run();
  void answer(std::vector<Waiter>& ws);
  void answer_each(std::vector<Waiter>& ws, bool compare);  // compare false: every answer "no change"

  std::shared_ptr<Identities> identities_;
  std::shared_ptr<store::Store> store_;
  const RefresherOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Waiter> waiting_;
  std::optional<std::chrono::steady_clock::time_point> backoff_until_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tollgate::auth
