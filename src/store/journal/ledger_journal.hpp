#pragma once
/// The ledger journal (docs/storage.md "Ledger journal"): the embedded store's durable ledger
/// records are appended to checksummed segment files, and each record's DurableCallback fires
/// once its write returned. Without JournalOptions::fsync the records are written by the
/// appending threads (one `pwrite` into the page cache: no hand-off to another thread and back):
/// on a thread that called batch_appends_on_this_thread() (a worker's event loop) the records
/// appended during one turn of its loop are written together when the posted write runs; any
/// other thread writes its record before `append` returns. With fsync the journal thread writes
/// everything waiting with one `pwrite` and one `fdatasync` per batch. The records are then
/// handed to a Sink, which folds them into the
/// database off the requests' path; LedgerJournal::folded() tells the journal how far that got, and
/// segments wholly folded are deleted. At open, the records past the database's folded mark are
/// returned for folding before the store serves: a SIGKILL loses nothing a callback confirmed.
///
/// Guarantees, as the SQL writer's (store/group_commit.hpp): a reserve that cannot be written
/// (disk full, I/O error) or that finds more than JournalOptions::max_unfolded records waiting to
/// be folded is refused (on_durable(false)) and forgotten, and the settle that closes it is
/// dropped (on_durable(true)); a settle is never refused: it is written again after a backoff
/// (50 ms doubling to 1 s) until it is written or the journal stops. A failed write is cut off
/// the segment (ftruncate) before anything else is written, so a record never confirmed is never
/// replayed.
///
/// Segment files: `<dir>/ledger-<first jseq, 20 digits>.journal`, written only by this process
/// (the store's process lock covers the directory).

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "store/journal/journal_codec.hpp"
#include "store/latency_samples.hpp"
#include "store/store.hpp"

namespace tollgate::store::journal {

/// Runs `fn` later on the calling thread, after the work already queued there (an event loop's
/// `post`). Must not run `fn` inline.
using ThreadPost = std::function<void(std::function<void()> fn)>;

/// From now on, records a LedgerJournal without fsync is given on the calling thread wait in
/// that thread's batch, and `post` is called once per batch to write it (one `pwrite`; the
/// callbacks fire on this thread then, or on the thread of a flush(), a stop() or an append on a
/// thread that does not batch, which write the waiting batches first). A record's durability is
/// unchanged: its callback fires once it is written. An empty `post` turns batching off for the thread (its batch must be
/// empty: call it with no record waiting). Used by the server's worker threads (app/serve.cpp).
void batch_appends_on_this_thread(ThreadPost post);

struct JournalOptions {
  std::filesystem::path dir;  ///< created if missing
  /// true: `fdatasync` after each batch's write (records survive power loss; adds the disk's
  /// flush latency to every reserve). false: a record survives a process kill once written.
  bool fsync = false;
  /// A segment is closed and the next one started once it holds this many bytes.
  std::uint64_t segment_bytes = 16u << 20;
  /// Reserves are refused while more records than this wait to be folded (the database cannot
  /// keep up, or is not writable): the journal's disk use stays bounded.
  std::uint64_t max_unfolded = 100'000;
  /// The database the journal folds into (its id in that database); kept in `<dir>/database-id`
  /// so that a journal is never folded into another database (one deleted and created again, or
  /// a different file). Empty: not checked.
  std::string database_id;
};

class LedgerJournal {
 public:
  using Clock = std::chrono::steady_clock;
  /// Receives each written batch, in journal order, on the journal thread, before the batch's
  /// callbacks fire. Must not block for long (it enqueues for the fold).
  using Sink = std::function<void(std::vector<JournalEntry> entries)>;

  /// What open() found.
  struct Opened {
    std::unique_ptr<LedgerJournal> journal;
    /// Records with jseq > the folded mark given to open(), in order: fold these before serving.
    std::vector<JournalEntry> unfolded;
    /// Bytes cut off the last segment's end (a write torn by a crash), 0 when none.
    std::uint64_t torn_bytes = 0;
  };

  /// Reads every segment in `options.dir` (creating the directory when missing), cuts a torn
  /// tail off the last one (an incomplete frame, or zeros), deletes the segments wholly at or
  /// below `folded` and starts a new segment after the last record. Errors (unavailable): the
  /// directory or a file cannot be read or written; a segment is damaged (a checksum, a payload
  /// or a sequence number wrong anywhere but in an incomplete last frame), the segments' numbers
  /// are not consecutive, one is missing, or a file has a segment's name but not a valid number
  /// (the message names the file: move it aside to start without it); the directory belongs to
  /// another database (JournalOptions::database_id).
  static StoreResult<Opened> open(const JournalOptions& options, std::uint64_t folded);

  /// Calls stop().
  ~LedgerJournal();
  LedgerJournal(const LedgerJournal&) = delete;
  LedgerJournal& operator=(const LedgerJournal&) = delete;

  /// Starts the journal thread; `sink` receives every batch written from now on.
  void start(Sink sink);
  /// Writes everything queued (kept settles get one more try), fires every remaining callback
  /// (false for what could not be written) and joins the thread. Later appends get
  /// on_durable(false) at once. Idempotent.
  void stop();

  /// Without fsync, on a thread that batches (batch_appends_on_this_thread): adds the record to
  /// this thread's batch, and the callback fires when the batch is written (the posted write,
  /// flush() or stop()). Without fsync elsewhere: writes every thread's waiting batch, then the
  /// record, on this thread, and fires the callback before returning (so a reservation's settle
  /// never comes before its reserve). In both cases the callback must not call back into the
  /// store (post to an io_context). With fsync: enqueues, and the callback fires on the journal
  /// thread. After stop(): on_durable(false) at once.
  void append(LedgerRecord record, DurableCallback on_durable);
  /// Blocks until everything appended before the call was written or refused (every thread's
  /// waiting batch is written on the calling thread first); false when a write failed
  /// meanwhile, a kept settle still waits to be written again, or the journal is stopped.
  bool flush();
  /// The database holds every record up to `jseq` (thread-safe; called after each fold).
  void folded(std::uint64_t jseq);
  /// Deletes the segments wholly folded: closed ones (also done after each batch), and after
  /// stop() the last one too (thread-safe).
  void drop_folded_segments();

  /// Batches and ledger records written or refused, failed writes, and the enqueue → written
  /// latency (spend-row fields stay 0).
  WriterStats stats() const;
  /// Writable unless the latest write failed.
  StoreHealth health() const;
  /// Records written and not yet folded.
  std::uint64_t unfolded() const;

 private:
  struct Pending {
    LedgerRecord record;
    DurableCallback cb;
    Clock::time_point enqueued;
  };
  struct Segment {
    std::uint64_t first = 0;  ///< jseq of its first record
    std::uint64_t last = 0;   ///< jseq of its last record (first - 1 when empty)
    std::filesystem::path path;
  };

  /// One thread's records waiting for its posted write (batch_appends_on_this_thread).
  struct ThreadBatch {
    std::mutex mu;
    std::vector<Pending> items;
    bool posted = false;  ///< a write is posted and has not taken the items yet
  };

  explicit LedgerJournal(JournalOptions options);
  void loop();
  /// The calling thread's batch for this journal, made and registered on first use.
  std::shared_ptr<ThreadBatch> thread_batch();
  /// Writes what `b` holds (its posted write). Takes write_mu_.
  void write_thread_batch(ThreadBatch& b);
  /// Writes every thread's waiting batch, on the calling thread (flush(), stop(), an append on a
  /// thread that does not batch). Takes write_mu_, so a posted write under way ends first.
  void write_thread_batches();
  /// Takes `b`'s items and writes them. Under write_mu_.
  void take_and_write(ThreadBatch& b);
  /// Writes `batch` (reserves past the backlog bound refused first); failed settles go to retry_.
  /// Takes write_mu_.
  void write_batch(std::vector<Pending>& batch, bool keep_settles);
  /// write_batch, with write_mu_ held by the caller.
  void write_batch_locked(std::vector<Pending>& batch, bool keep_settles);
  /// Appends `bytes` at the current segment's end; on failure cuts it back. Error message or "".
  std::string write_bytes(const std::string& bytes);
  /// Opens a new segment whose first record will be `first` (the current one is closed).
  std::string start_segment(std::uint64_t first);

  const JournalOptions opts_;
  Sink sink_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> queue_;
  std::vector<std::function<void()>> barriers_;  ///< flush() waiters, run after the writes before them
  bool stop_ = false;
  std::thread thread_;
  std::atomic<bool> joined_{false};  ///< the thread ended: the last segment is no longer written
  std::atomic<bool> stopped_{false};  ///< stop() began: appends are refused

  // Under write_mu_ (the writing thread: an appender, or the journal thread; and open()).
  std::mutex write_mu_;
  int fd_ = -1;
  off_t size_ = 0;           ///< bytes of whole records in the current segment
  bool cut_pending_ = false; ///< a failed write is not yet cut off the segment
  std::uint64_t next_jseq_ = 1;
  std::vector<Pending> retry_;          ///< the journal thread waits for retry_at_ under mu_: see has_retry_
  Clock::time_point retry_at_{};
  Clock::duration retry_backoff_{};
  std::unordered_set<std::uint64_t> failed_reserves_;

  const std::uint64_t id_;  ///< tells this journal's thread batches from an earlier one's
  std::mutex batches_mu_;
  std::vector<std::shared_ptr<ThreadBatch>> batches_;  ///< every thread's batch, for flush() and stop()
  std::atomic<std::uint64_t> batched_{0};  ///< records waiting in thread batches

  std::mutex segments_mu_;
  std::deque<Segment> segments_;  ///< oldest first; the last is the one written

  std::atomic<bool> has_retry_{false};     ///< retry_ is not empty (read by the journal thread's wait)
  std::atomic<std::int64_t> retry_at_ns_{0};  ///< retry_at_ for that wait
  std::atomic<std::uint64_t> written_{0};  ///< highest jseq written
  std::atomic<std::uint64_t> folded_{0};   ///< highest jseq folded into the database

  mutable std::mutex stats_mu_;
  WriterStats stats_;
  LatencySamples samples_;
  bool writable_ = true;
  std::string last_error_;
};

}  // namespace tollgate::store::journal
