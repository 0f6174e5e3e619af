#include "store/group_commit.hpp"

#include <algorithm>
#include <iterator>

namespace tollgate::store {

GroupCommitWriter::GroupCommitWriter(std::size_t max_pending_spend_rows, CommitFn commit)
    : max_pending_spend_(max_pending_spend_rows), commit_(std::move(commit)) {
  samples_.resize(kSampleRing);
}

GroupCommitWriter::~GroupCommitWriter() { stop(); }

void GroupCommitWriter::start() {
  std::lock_guard lk(mu_);
  if (!thread_.joinable() && !stop_) thread_ = std::thread([this] { loop(); });
}

void GroupCommitWriter::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Never started: whatever was queued cannot be written.
  std::deque<Item> left;
  {
    std::lock_guard lk(mu_);
    left.swap(queue_);
  }
  for (auto& item : left)
    if (auto* l = std::get_if<LedgerItem>(&item)) fire(l->cb, false);
}

void GroupCommitWriter::fire(DurableCallback& cb, bool ok) noexcept {
  if (!cb) return;
  try {
    cb(ok);
  } catch (...) {
    // A callback must not take the writer down; the record's fate is already decided.
  }
}

void GroupCommitWriter::append_ledger(LedgerRecord record, DurableCallback on_durable) {
  {
    std::lock_guard lk(mu_);
    if (!stop_) {
      queue_.push_back(LedgerItem{std::move(record), std::move(on_durable), Clock::now()});
      cv_.notify_one();
      return;
    }
  }
  fire(on_durable, false);
}

void GroupCommitWriter::append_spend_log(SpendLogRow row) {
  std::lock_guard lk(mu_);
  if (stop_ || pending_spend_ >= max_pending_spend_) {
    std::lock_guard sl(stats_mu_);
    ++stats_.dropped_spend_rows;
    return;
  }
  ++pending_spend_;
  queue_.push_back(SpendItem{std::move(row)});
  cv_.notify_one();
}

bool GroupCommitWriter::flush() {
  std::uint64_t before;
  {
    std::lock_guard sl(stats_mu_);
    before = stats_.failed_batches;
  }
  if (!run<bool>([] { return true; })) return false;
  std::lock_guard sl(stats_mu_);
  return stats_.failed_batches == before;
}

void GroupCommitWriter::note_write(const std::optional<std::string>& error) {
  std::lock_guard sl(stats_mu_);
  last_write_ = Clock::now();
  writable_ = !error;
  if (error) last_error_ = *error;
}

bool GroupCommitWriter::idle_for(Clock::duration d) const {
  std::lock_guard sl(stats_mu_);
  return Clock::now() - last_write_ > d;
}

StoreHealth GroupCommitWriter::health() const {
  std::lock_guard sl(stats_mu_);
  return StoreHealth{writable_, last_error_};
}

WriterStats GroupCommitWriter::stats() const {
  std::lock_guard sl(stats_mu_);
  WriterStats s = stats_;
  const std::size_t n = std::min<std::size_t>(sample_count_, kSampleRing);
  if (n > 0) {
    std::vector<std::int64_t> v(samples_.begin(), samples_.begin() + static_cast<std::ptrdiff_t>(n));
    auto pct = [&](double p) {
      std::size_t k = std::min(n - 1, static_cast<std::size_t>(p * static_cast<double>(n - 1) + 0.5));
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
      return v[k];
    };
    s.p50_us = pct(0.50);
    s.p99_us = pct(0.99);
    s.max_us = *std::max_element(v.begin(), v.end());
  }
  return s;
}

void GroupCommitWriter::loop() {
  std::vector<Item> batch;
  std::vector<std::function<void()>> tasks;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lk(mu_);
      const auto ready = [&] { return stop_ || !queue_.empty() || !tasks_.empty(); };
      if (retry_.empty())
        cv_.wait(lk, ready);
      else
        cv_.wait_until(lk, retry_at_, ready);
      stopping = stop_;
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
      pending_spend_ = 0;
      tasks.swap(tasks_);
    }
    // Kept settles first and in a batch of their own: one that can never be written holds up
    // nothing else. When stopping they get one last try, then their callbacks report the failure
    // (the next start's recovery settles their reservations).
    if (!retry_.empty() && (stopping || Clock::now() >= retry_at_)) {
      std::vector<Item> again;
      again.swap(retry_);
      commit_batch(again, !stopping);
    }
    if (!batch.empty()) commit_batch(batch, !stopping);
    batch.clear();
    for (auto& t : tasks) t();
    tasks.clear();
    if (stopping) {
      std::lock_guard lk(mu_);
      if (queue_.empty() && tasks_.empty()) break;  // stop_ and drained
    }
  }
}

void GroupCommitWriter::commit_batch(std::vector<Item>& batch, bool keep_settles) {
  // The settle of a reserve that was never written closes nothing: drop it.
  if (!failed_reserves_.empty()) {
    std::erase_if(batch, [&](Item& item) {
      auto* l = std::get_if<LedgerItem>(&item);
      if (l == nullptr || l->record.kind != LedgerKind::settle || failed_reserves_.erase(l->record.reservation_id) == 0)
        return false;
      fire(l->cb, true);
      return true;
    });
    if (batch.empty()) return;
  }
  const std::optional<std::string> err = commit_(batch);
  const auto done = Clock::now();
  std::uint64_t nledger = 0, nspend = 0;
  {
    std::lock_guard sl(stats_mu_);
    last_write_ = done;
    writable_ = !err;
    if (err) last_error_ = *err;
    ++stats_.batches;
    for (auto& item : batch) {
      if (auto* l = std::get_if<LedgerItem>(&item)) {
        ++nledger;
        if (!err)
          samples_[sample_count_++ % kSampleRing] =
              std::chrono::duration_cast<std::chrono::microseconds>(done - l->enqueued).count();
      } else {
        ++nspend;
      }
    }
    if (err) {
      ++stats_.failed_batches;
      stats_.failed_ledger_records += nledger;
      stats_.dropped_spend_rows += nspend;
    } else {
      stats_.ledger_records += nledger;
      stats_.spend_rows += nspend;
      stats_.records += nledger + nspend;
      stats_.max_batch = std::max<std::uint64_t>(stats_.max_batch, nledger + nspend);
    }
  }
  if (!err) {
    retry_backoff_ = Clock::duration::zero();
    for (auto& item : batch)
      if (auto* l = std::get_if<LedgerItem>(&item)) fire(l->cb, true);
    return;
  }
  bool kept = false;
  for (auto& item : batch) {
    auto* l = std::get_if<LedgerItem>(&item);
    if (l == nullptr) continue;
    if (l->record.kind == LedgerKind::settle && keep_settles) {
      retry_.push_back(std::move(item));
      kept = true;
      continue;
    }
    if (l->record.kind == LedgerKind::reserve) failed_reserves_.insert(l->record.reservation_id);
    fire(l->cb, false);
  }
  if (kept) {
    using std::chrono::milliseconds;
    retry_backoff_ = std::clamp<Clock::duration>(retry_backoff_ * 2, milliseconds(50), milliseconds(1000));
    retry_at_ = Clock::now() + retry_backoff_;
  }
}

}  // namespace tollgate::store
