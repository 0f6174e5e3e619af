#pragma once
/// The group-commit writer both SQL stores share (docs/storage.md "Threads and connections"):
/// `append_ledger` / `append_spend_log` / `append_journaled` only push onto a queue; one writer
/// thread takes everything waiting, hands it to the backend's commit function (one transaction),
/// then fires each ledger record's callback exactly once with the outcome. Ledger records are
/// committed as soon as the writer takes them (a request waits for its reserve record); spend
/// rows, which no request waits for, and ledger records already durable in the ledger journal
/// (store/journal/), which are only folded into the database, are held and committed in batches
/// of their own (Options::spend_batch_rows items, or Options::spend_linger after the oldest
/// one), so that a transaction on a request's path carries no spend-log index updates. Tasks
/// (`run`, `flush`, `commit_held_now`) execute on the same thread after everything enqueued
/// before them, held items included. Keeps WriterStats (latency enqueue → durable per ledger
/// record, over the last 65536 records) and the outcome of the latest write for health().
///
/// A settle cannot be refused (the money moved in the in-memory ledger already), so a settle
/// record whose batch failed (disk full, database locked) is kept and written again, in a batch of
/// its own, after a backoff (50 ms doubling to 1 s) until it commits or the writer stops; only
/// then does its callback fire. Dropping it would leave its reservation open in the durable ledger,
/// and the next start would charge the whole reservation instead of the answer's cost. A reserve
/// record that failed is reported (on_durable(false): the attempt is refused) and forgotten; the
/// settle that closes it then has nothing to close and is dropped (on_durable(true)), so the
/// ledger never holds a settle without its reserve. Journaled records and spend rows whose batch
/// failed are committed again, in their order and ahead of later ones, after the same backoff
/// (spend rows up to Options::max_pending_spend_rows); when the writer stops first, the journaled
/// records stay in the journal for the next start and the spend rows are lost (counted).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <variant>
#include <vector>

#include "store/journal/journal_codec.hpp"
#include "store/latency_samples.hpp"
#include "store/store.hpp"

namespace tollgate::store {

class GroupCommitWriter {
 public:
  using Clock = std::chrono::steady_clock;
  struct LedgerItem {
    LedgerRecord record;
    DurableCallback cb;
    Clock::time_point enqueued;
    /// Non-zero: already durable in the ledger journal under this sequence number (no callback;
    /// the commit function records the highest folded one with the batch).
    std::uint64_t journal_seq = 0;
  };
  /// A spend row, on the heap: a batch's items move (queue, held rows, refolds) by a pointer
  /// instead of by the row's forty-odd strings, and a ledger item is not the size of a row.
  struct SpendItem {
    std::unique_ptr<SpendLogRow> row;
  };
  using Item = std::variant<LedgerItem, SpendItem>;
  /// Writes the whole batch in one transaction; returns the error message when it failed (then
  /// nothing of the batch is stored). Runs on the writer thread.
  using CommitFn = std::function<std::optional<std::string>(const std::vector<Item>& batch)>;

  struct Options {
    /// Spend rows waiting (queued or held) beyond this are dropped and counted.
    std::size_t max_pending_spend_rows = 100000;
    /// Held spend rows are committed once this many wait...
    std::size_t spend_batch_rows = 512;
    /// ... or once the oldest has waited this long (0: with the next batch, as ledger records).
    std::chrono::milliseconds spend_linger{100};
    /// Called on the writer thread after a batch with journaled records committed, with the
    /// highest journal sequence number it folded.
    std::function<void(std::uint64_t folded_jseq)> on_folded;
  };
  GroupCommitWriter(Options options, CommitFn commit);
  /// Calls stop().
  ~GroupCommitWriter();
  GroupCommitWriter(const GroupCommitWriter&) = delete;
  GroupCommitWriter& operator=(const GroupCommitWriter&) = delete;

  /// Starts the writer thread (once).
  void start();
  /// Commits everything already queued, runs the queued tasks, fires the remaining callbacks and
  /// joins the thread. Later appends get on_durable(false); later tasks do not run. Idempotent.
  void stop();

  /// Enqueues; never blocks on I/O. After stop(): on_durable(false) at once, on this thread.
  void append_ledger(LedgerRecord record, DurableCallback on_durable);
  /// Enqueues, or drops and counts the row (queue over its bound, or stopped).
  void append_spend_log(SpendLogRow&& row);
  /// Enqueues ledger records already durable in the journal, in journal order, to be folded into
  /// the database with the held spend rows (never dropped; ignored once stopped: the journal
  /// still holds them).
  void append_journaled(std::vector<journal::JournalEntry> entries);

  /// Runs `fn` on the writer thread after everything queued before it and returns its result;
  /// nullopt when stopped.
  template <class T, class F>
  std::optional<T> run(F fn) {
    auto task = std::make_shared<std::packaged_task<T()>>(std::move(fn));
    auto fut = task->get_future();
    {
      std::lock_guard lk(mu_);
      if (stop_) return std::nullopt;
      tasks_.push_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return fut.get();
  }

  /// Runs `fn` on the writer thread after everything queued before it, without waiting for it;
  /// false (and `fn` never runs) when stopped.
  bool post(std::function<void()> fn) {
    {
      std::lock_guard lk(mu_);
      if (stop_) return false;
      tasks_.push_back(std::move(fn));
    }
    cv_.notify_one();
    return true;
  }

  /// Blocks until everything appended before the call was committed or failed; false if a batch
  /// failed meanwhile or the writer is stopped.
  bool flush();
  /// Commits the held items waiting now (a reader of the spend log or the ledger sees every row
  /// and journaled record appended before the call); returns at once when none wait.
  void commit_held_now();

  /// Records the outcome of a write made outside a batch (recovery, a health probe).
  void note_write(const std::optional<std::string>& error);
  /// True when nothing was written for `d` (the caller then probes).
  bool idle_for(Clock::duration d) const;
  /// The outcome of the latest write.
  StoreHealth health() const;
  WriterStats stats() const;

 private:
  void loop();
  /// `keep_settles`: a failed batch's settle records go to retry_ (false when stopping). Returns
  /// the journaled records and (with keep_settles, up to the bound) the spend rows of a failed
  /// batch, in order, to be committed again.
  std::vector<Item> commit_batch(std::vector<Item>& batch, bool keep_settles);

  /// When the spend rows waiting are due (lock held).
  bool spend_due(Clock::time_point now) const;

  const Options opts_;
  const CommitFn commit_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::vector<std::function<void()>> tasks_;
  std::size_t pending_spend_ = 0;     ///< spend rows queued or held (bounded)
  std::size_t pending_held_ = 0;      ///< spend rows and journaled records queued or held
  std::size_t queued_ledger_ = 0;     ///< ledger records in queue_
  Clock::time_point oldest_spend_{};  ///< when the oldest pending held item was appended
  bool spend_committing_ = false;     ///< held items taken for a commit that has not ended
  Clock::time_point refold_at_{};     ///< held_ starts with journaled records whose fold failed: not before this
  bool stop_ = false;
  std::thread thread_;

  // Writer thread only.
  std::vector<Item> held_;                             ///< spend rows and journaled records waiting for their batch
  Clock::duration refold_backoff_{};                   ///< 0 after a fold succeeded; 50 ms doubling to 1 s
  std::vector<Item> retry_;                            ///< settles of failed batches, written again
  Clock::time_point retry_at_{};                       ///< when retry_ is tried next
  Clock::duration retry_backoff_{};                    ///< 0 after a success; 50 ms doubling to 1 s
  std::unordered_set<std::uint64_t> failed_reserves_;  ///< reserves never written: their settle is dropped

  mutable std::mutex stats_mu_;
  WriterStats stats_;
  LatencySamples samples_;
  bool writable_ = true;
  std::string last_error_;
  Clock::time_point last_write_ = Clock::now();
};

}  // namespace tollgate::store
