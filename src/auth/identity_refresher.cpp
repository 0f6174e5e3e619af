#include "auth/identity_refresher.hpp"

#include <spdlog/spdlog.h>

#include <utility>

namespace tollgate::auth {

using Clock = std::chrono::steady_clock;

IdentityRefresher::IdentityRefresher(std::shared_ptr<Identities> identities, std::shared_ptr<store::Store> store,
                                     RefresherOptions options)
    : identities_(std::move(identities)), store_(std::move(store)), options_(options) {
  thread_ = std::thread([this] { run(); });
}

IdentityRefresher::~IdentityRefresher() { stop(); }

void IdentityRefresher::stop() {
  std::vector<Waiter> left;
  {
    std::lock_guard lk(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lk(mutex_);
    left.swap(waiting_);
  }
  answer_each(left, false);
}

void IdentityRefresher::after_miss(const IdentityIndex* refused_by, Clock::time_point arrived,
                                   std::function<void(bool)> done) {
  {
    std::lock_guard lk(mutex_);
    const bool backing_off = backoff_until_ && Clock::now() < *backoff_until_;
    if (!stop_ && !backing_off && waiting_.size() < options_.max_waiting) {
      waiting_.push_back(Waiter{refused_by, arrived, std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  done(identities_->current().get() != refused_by);
}

void IdentityRefresher::answer(std::vector<Waiter>& ws) { answer_each(ws, true); }

void IdentityRefresher::answer_each(std::vector<Waiter>& ws, bool compare) {
  const IdentityIndex* now = identities_->current().get();
  for (auto& w : ws) {
    try {
      w.done(compare && now != w.refused_by);
    } catch (...) {
      // A callback must not take the refresher down.
    }
  }
  ws.clear();
}

void IdentityRefresher::run() {
  auto next_poll = Clock::now() + options_.poll;
  std::optional<Clock::time_point> last_start;
  std::vector<Waiter> ready;
  std::unique_lock lk(mutex_);
  while (!stop_) {
    const auto now = Clock::now();
    const bool poll_due = now >= next_poll;
    const bool miss_due = !waiting_.empty() && (!last_start || now - *last_start >= options_.min_interval);
    if (!poll_due && !miss_due) {
      auto until = next_poll;
      if (!waiting_.empty() && last_start) until = std::min(until, *last_start + options_.min_interval);
      wake_.wait_until(lk, until);
      continue;
    }
    const auto start = Clock::now();
    last_start = start;
    lk.unlock();
    auto r = identities_->refresh(*store_);
    if (!r)
      spdlog::warn("identity refresh failed ({}); model calls use the previous snapshot", r.error().message);
    else if (*r)
      spdlog::debug("identities reloaded (changed in the store)");
    lk.lock();
    if (poll_due) next_poll = Clock::now() + options_.poll;  // the next poll counts from this one's end
    if (!r) backoff_until_ = Clock::now() + options_.error_backoff;
    else backoff_until_.reset();
    // Every request that arrived before this refresh started is covered by it (or, after an
    // error, answered now: the back-off keeps later ones from asking again for a while).
    std::vector<Waiter> later;
    for (auto& w : waiting_) (r && w.arrived > start ? later : ready).push_back(std::move(w));
    waiting_.swap(later);
    lk.unlock();
    answer(ready);
    lk.lock();
  }
}

}  // namespace tollgate::auth
