#include "store/group_commit.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

namespace tollgate::store {

GroupCommitWriter::GroupCommitWriter(Options options, CommitFn commit)
    : opts_(options), commit_(std::move(commit)) {}

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
    if (auto* l = std::get_if<LedgerItem>(&item)) fire_durable(l->cb, false);
}

void GroupCommitWriter::append_ledger(LedgerRecord record, DurableCallback on_durable) {
  {
    std::lock_guard lk(mu_);
    if (!stop_) {
      queue_.push_back(LedgerItem{std::move(record), std::move(on_durable), Clock::now()});
      ++queued_ledger_;
      cv_.notify_one();
      return;
    }
  }
  fire_durable(on_durable, false);
}

void GroupCommitWriter::append_spend_log(SpendLogRow&& row) {
  auto held = std::make_unique<SpendLogRow>(std::move(row));  // before the lock: the writer waits on it
  std::lock_guard lk(mu_);
  if (stop_ || pending_spend_ >= opts_.max_pending_spend_rows) {
    std::lock_guard sl(stats_mu_);
    ++stats_.dropped_spend_rows;
    return;
  }
  const auto now = Clock::now();
  const bool first = pending_held_++ == 0;
  ++pending_spend_;
  if (first) oldest_spend_ = now;
  queue_.push_back(SpendItem{std::move(held)});
  // Wake the writer for the first row (it then sleeps until the batch is due) and when due.
  if (first || spend_due(now)) cv_.notify_one();
}

void GroupCommitWriter::append_journaled(std::vector<journal::JournalEntry> entries) {
  if (entries.empty()) return;
  std::lock_guard lk(mu_);
  if (stop_) return;  // still in the journal: the next start folds them
  const auto now = Clock::now();
  const bool first = pending_held_ == 0;
  if (first) oldest_spend_ = now;
  pending_held_ += entries.size();
  for (auto& e : entries) queue_.push_back(LedgerItem{std::move(e.record), {}, now, e.jseq});
  if (first || spend_due(now)) cv_.notify_one();
}

bool GroupCommitWriter::spend_due(Clock::time_point now) const {
  return pending_held_ > 0 && now >= refold_at_ &&
         (pending_held_ >= opts_.spend_batch_rows || now >= oldest_spend_ + opts_.spend_linger);
}

void GroupCommitWriter::commit_held_now() {
  {
    std::lock_guard lk(mu_);
    // Nothing waiting and nothing being committed: every row appended before is readable.
    if ((pending_held_ == 0 && !spend_committing_) || stop_) return;
  }
  run<bool>([] { return true; });
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
  samples_.fill(s);
  return s;
}

void GroupCommitWriter::loop() {
  std::vector<Item> batch;
  std::vector<std::function<void()>> tasks;
  for (;;) {
    bool stopping = false, commit_held = false;
    {
      std::unique_lock lk(mu_);
      for (;;) {
        const auto now = Clock::now();
        if (stop_ || queued_ledger_ > 0 || !tasks_.empty() || spend_due(now)) break;
        if (!retry_.empty() && now >= retry_at_) break;
        std::optional<Clock::time_point> until;
        if (!retry_.empty()) until = retry_at_;
        if (pending_held_ > 0) {
          const auto due = std::max(oldest_spend_ + opts_.spend_linger, refold_at_);
          until = until ? std::min(*until, due) : due;
        }
        if (until) cv_.wait_until(lk, *until);
        else cv_.wait(lk);
      }
      stopping = stop_;
      for (auto& item : queue_) {
        const auto* l = std::get_if<LedgerItem>(&item);
        if (l != nullptr && l->journal_seq == 0) batch.push_back(std::move(item));
        else held_.push_back(std::move(item));
      }
      queue_.clear();
      queued_ledger_ = 0;
      tasks.swap(tasks_);
      // Held spend rows go now when due, before a task (a reader sees them) and when stopping.
      commit_held = stopping || !tasks.empty() || spend_due(Clock::now());
      if (commit_held) {
        pending_spend_ = 0;
        pending_held_ = 0;
        spend_committing_ = !held_.empty();  // until committed: a reader must wait for them
      }
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
    if (commit_held && !held_.empty()) {
      std::vector<Item> refold = commit_batch(held_, !stopping);
      held_.clear();
      std::lock_guard lk(mu_);
      spend_committing_ = false;
      if (refold.empty()) {
        refold_backoff_ = Clock::duration::zero();
        refold_at_ = {};
      } else if (!stopping) {
        // Folded again first (the journal's order), after a backoff; still readable-pending.
        using std::chrono::milliseconds;
        refold_backoff_ = std::clamp<Clock::duration>(refold_backoff_ * 2, milliseconds(50), milliseconds(1000));
        refold_at_ = Clock::now() + refold_backoff_;
        if (pending_held_ == 0) oldest_spend_ = Clock::now();
        pending_held_ += refold.size();
        for (const auto& item : refold) pending_spend_ += std::holds_alternative<SpendItem>(item) ? 1 : 0;
        held_ = std::move(refold);
      }
    }
    for (auto& t : tasks) t();
    tasks.clear();
    if (stopping) {
      std::lock_guard lk(mu_);
      if (queue_.empty() && tasks_.empty()) break;  // stop_ and drained
    }
  }
}

std::vector<GroupCommitWriter::Item> GroupCommitWriter::commit_batch(std::vector<Item>& batch, bool keep_settles) {
  std::vector<Item> refold;
  // The settle of a reserve that was never written closes nothing: drop it.
  if (!failed_reserves_.empty()) {
    std::erase_if(batch, [&](Item& item) {
      auto* l = std::get_if<LedgerItem>(&item);
      if (l == nullptr || l->journal_seq != 0 || l->record.kind != LedgerKind::settle ||
          failed_reserves_.erase(l->record.reservation_id) == 0)
        return false;
      fire_durable(l->cb, true);
      return true;
    });
    if (batch.empty()) return refold;
  }
  const std::optional<std::string> err = commit_(batch);
  const auto done = Clock::now();
  std::uint64_t nledger = 0, nspend = 0, folded = 0;
  // A failed batch's spend rows are written again with it (up to the bound, when not stopping):
  // a locked database must not cost the requests it no longer refuses their spend-log rows.
  const std::uint64_t keep_spend = err && keep_settles ? opts_.max_pending_spend_rows : 0;
  {
    std::lock_guard sl(stats_mu_);
    last_write_ = done;
    writable_ = !err;
    if (err) last_error_ = *err;
    ++stats_.batches;
    for (auto& item : batch) {
      if (auto* l = std::get_if<LedgerItem>(&item)) {
        ++nledger;
        folded = std::max(folded, l->journal_seq);
        if (!err && l->journal_seq == 0)
          samples_.add(std::chrono::duration_cast<std::chrono::microseconds>(done - l->enqueued).count());
      } else {
        ++nspend;
      }
    }
    if (err) {
      ++stats_.failed_batches;
      for (auto& item : batch)  // journaled records are not lost: they are folded again
        if (auto* l = std::get_if<LedgerItem>(&item); l != nullptr && l->journal_seq == 0) ++stats_.failed_ledger_records;
      stats_.dropped_spend_rows += nspend - std::min(nspend, keep_spend);
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
      if (auto* l = std::get_if<LedgerItem>(&item)) fire_durable(l->cb, true);
    if (folded != 0 && opts_.on_folded) opts_.on_folded(folded);
    return refold;
  }
  bool kept = false;
  std::uint64_t spend_kept = 0;
  for (auto& item : batch) {
    auto* l = std::get_if<LedgerItem>(&item);
    if (l == nullptr) {
      if (spend_kept++ < keep_spend) refold.push_back(std::move(item));
      continue;
    }
    if (l->journal_seq != 0) {
      refold.push_back(std::move(item));
      continue;
    }
    if (l->record.kind == LedgerKind::settle && keep_settles) {
      retry_.push_back(std::move(item));
      kept = true;
      continue;
    }
    if (l->record.kind == LedgerKind::reserve) failed_reserves_.insert(l->record.reservation_id);
    fire_durable(l->cb, false);
  }
  if (kept) {
    using std::chrono::milliseconds;
    retry_backoff_ = std::clamp<Clock::duration>(retry_backoff_ * 2, milliseconds(50), milliseconds(1000));
    retry_at_ = Clock::now() + retry_backoff_;
  }
  return refold;
}

}  // namespace tollgate::store
