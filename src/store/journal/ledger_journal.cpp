#include "store/journal/ledger_journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <future>
#include <regex>

namespace tollgate::store::journal {

namespace {

StoreError unavailable(std::string message) { return StoreError{StoreErrorCode::unavailable, std::move(message), {}}; }

std::string errno_text() { return std::strerror(errno); }

std::filesystem::path segment_path(const std::filesystem::path& dir, std::uint64_t first) {
  char name[48];
  std::snprintf(name, sizeof name, "ledger-%020llu.journal", static_cast<unsigned long long>(first));
  return dir / name;
}

// The whole file, or an error message.
std::string read_file(const std::filesystem::path& path, std::string& err) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err = "cannot read " + path.string() + ": " + errno_text();
    return {};
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = "cannot read " + path.string() + ": " + errno_text();
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

thread_local ThreadPost tl_post;  // batch_appends_on_this_thread()

std::atomic<std::uint64_t> g_journal_ids{0};

void sync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void batch_appends_on_this_thread(ThreadPost post) { tl_post = std::move(post); }

LedgerJournal::LedgerJournal(JournalOptions options) : opts_(std::move(options)), id_(++g_journal_ids) {}

LedgerJournal::~LedgerJournal() {
  stop();
  if (fd_ >= 0) ::close(fd_);
}

StoreResult<LedgerJournal::Opened> LedgerJournal::open(const JournalOptions& options, std::uint64_t folded) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return std::unexpected(unavailable("cannot create the ledger journal " + options.dir.string() + ": " + ec.message()));
  if (!options.database_id.empty()) {
    const auto id_file = options.dir / "database-id";
    std::string err;
    if (std::filesystem::exists(id_file, ec)) {
      std::string held = read_file(id_file, err);
      if (!err.empty()) return std::unexpected(unavailable(err));
      while (!held.empty() && (held.back() == '\n' || held.back() == '\r')) held.pop_back();
      if (held != options.database_id)
        return std::unexpected(unavailable("the ledger journal " + options.dir.string() + " belongs to another database (id " +
                                           held + "; this one's is " + options.database_id +
                                           "): move the directory aside to start without its records"));
    } else {
      const int fd = ::open(id_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      const std::string line = options.database_id + "\n";
      const bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                      (!options.fsync || ::fsync(fd) == 0);
      if (fd >= 0) ::close(fd);
      if (!ok) return std::unexpected(unavailable("cannot write " + id_file.string() + ": " + errno_text()));
      if (options.fsync) sync_dir(options.dir);
    }
  }
  std::vector<std::pair<std::uint64_t, std::filesystem::path>> files;
  static const std::regex kName(R"(ledger-(\d{20})\.journal)");
  for (const auto& e : std::filesystem::directory_iterator(options.dir, ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (!std::regex_match(name, m, kName)) continue;
    std::uint64_t first = 0;
    const std::string digits = m[1].str();
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), first);
    if (err != std::errc() || end != digits.data() + digits.size() || first == 0)
      return std::unexpected(unavailable("ledger journal file " + e.path().string() +
                                         " is not a segment this gateway wrote (its number must be 1.." +
                                         std::to_string(UINT64_MAX) + "): move it aside"));
    files.emplace_back(first, e.path());
  }
  if (ec) return std::unexpected(unavailable("cannot list the ledger journal " + options.dir.string() + ": " + ec.message()));
  std::sort(files.begin(), files.end());

  Opened out;
  out.journal.reset(new LedgerJournal(options));
  LedgerJournal& j = *out.journal;
  std::uint64_t expect = 0;  // the next segment's first jseq
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& [first, path] = files[i];
    const bool last = i + 1 == files.size();
    if (i == 0 && first > folded + 1)
      return std::unexpected(unavailable("the ledger journal starts at record " + std::to_string(first) +
                                         " but the database holds records up to " + std::to_string(folded) +
                                         " only: a segment before " + path.string() + " is missing"));
    if (expect != 0 && first != expect)
      return std::unexpected(unavailable("ledger journal segment " + path.string() + " starts at record " +
                                         std::to_string(first) + ", expected " + std::to_string(expect) +
                                         ": move it aside to start without it"));
    std::string err;
    const std::string bytes = read_file(path, err);
    if (!err.empty()) return std::unexpected(unavailable(err));
    Decoded d = decode(bytes, first);
    if (!d.stopped.empty()) {
      // Only the end of the last segment may be cut: a frame a crash left incomplete (the write
      // was cut short) or zeros (blocks a power loss allocated and never wrote). Nothing there
      // was ever confirmed. Anything else is damage to confirmed records: refuse.
      const std::string_view rest = std::string_view(bytes).substr(d.valid_bytes);
      const bool zeros = rest.find_first_not_of('\0') == std::string_view::npos;
      if (!last || (d.stopped != "incomplete frame" && !zeros))
        return std::unexpected(unavailable("ledger journal segment " + path.string() + " is damaged at byte " +
                                           std::to_string(d.valid_bytes) + " (" + d.stopped +
                                           "): move it aside to start without the records after it"));
      if (::truncate(path.c_str(), static_cast<off_t>(d.valid_bytes)) != 0)
        return std::unexpected(unavailable("cannot cut the torn end off " + path.string() + ": " + errno_text()));
      out.torn_bytes = bytes.size() - d.valid_bytes;
    }
    const std::uint64_t last_jseq = d.entries.empty() ? first - 1 : d.entries.back().jseq;
    expect = last_jseq + 1;
    for (auto& e : d.entries)
      if (e.jseq > folded) out.unfolded.push_back(std::move(e));
    j.segments_.push_back(Segment{first, last_jseq, path});
  }
  j.next_jseq_ = std::max(expect == 0 ? 1 : expect, folded + 1);
  j.written_ = j.next_jseq_ - 1;
  j.folded_ = folded;
  if (auto err = j.start_segment(j.next_jseq_); !err.empty()) return std::unexpected(unavailable(err));
  j.drop_folded_segments();
  return out;
}

void LedgerJournal::start(Sink sink) {
  std::lock_guard lk(mu_);
  if (thread_.joinable() || stop_) return;
  sink_ = std::move(sink);
  thread_ = std::thread([this] { loop(); });
}

void LedgerJournal::stop() {
  stopped_ = true;
  write_thread_batches();  // appended before the stop: written, as a synchronous append would have been
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<Pending> left;
  std::vector<std::function<void()>> barriers;
  {
    std::lock_guard lk(mu_);
    left.swap(queue_);
    barriers.swap(barriers_);
  }
  for (auto& p : left) fire_durable(p.cb, false);  // never started
  for (auto& b : barriers) b();
  joined_ = true;
  std::vector<Pending> kept;  // a settle an appender failed to write after the thread's last try
  {
    std::lock_guard wl(write_mu_);
    kept.swap(retry_);
    has_retry_ = false;
  }
  if (!kept.empty()) write_batch(kept, false);
}

std::shared_ptr<LedgerJournal::ThreadBatch> LedgerJournal::thread_batch() {
  thread_local std::uint64_t owner = 0;
  thread_local std::shared_ptr<ThreadBatch> mine;
  if (owner != id_ || !mine) {
    mine = std::make_shared<ThreadBatch>();
    owner = id_;
    std::lock_guard lk(batches_mu_);
    batches_.push_back(mine);
  }
  return mine;
}

void LedgerJournal::take_and_write(ThreadBatch& b) {
  std::vector<Pending> items;
  {
    std::lock_guard lk(b.mu);
    items.swap(b.items);
    b.posted = false;
    batched_.fetch_sub(items.size());
  }
  if (!items.empty()) write_batch_locked(items, true);
}

void LedgerJournal::write_thread_batch(ThreadBatch& b) {
  // The items are taken under write_mu_ and written before it is released: records taken from
  // a batch are never in no batch and unwritten while another writer goes ahead of them.
  std::lock_guard wl(write_mu_);
  take_and_write(b);
}

void LedgerJournal::write_thread_batches() {
  // Under write_mu_ even when nothing waits: a posted write under way (its items already taken)
  // ends first, so what was appended before this call is written when it returns.
  std::lock_guard wl(write_mu_);
  if (batched_.load() == 0) return;
  std::vector<std::shared_ptr<ThreadBatch>> all;
  {
    std::lock_guard lk(batches_mu_);
    all = batches_;
  }
  for (const auto& b : all) take_and_write(*b);
}

void LedgerJournal::append(LedgerRecord record, DurableCallback on_durable) {
  if (!opts_.fsync && !stopped_ && tl_post) {
    auto b = thread_batch();
    bool post = false;
    {
      std::lock_guard lk(b->mu);
      b->items.push_back(Pending{std::move(record), std::move(on_durable), Clock::now()});
      batched_.fetch_add(1);
      post = !b->posted;
      b->posted = true;
    }
    if (post) {
      try {
        tl_post([this, b] { write_thread_batch(*b); });
      } catch (...) {
        write_thread_batch(*b);  // no write could be posted (bad_alloc): written here, now
      }
    }
    return;
  }
  if (!opts_.fsync && !stopped_) {
    write_thread_batches();  // a reservation's settle never comes before its reserve
    std::vector<Pending> one;
    one.push_back(Pending{std::move(record), std::move(on_durable), Clock::now()});
    write_batch(one, true);
    return;
  }
  {
    std::lock_guard lk(mu_);
    if (!stop_) {
      queue_.push_back(Pending{std::move(record), std::move(on_durable), Clock::now()});
      if (queue_.size() == 1) cv_.notify_one();
      return;
    }
  }
  fire_durable(on_durable, false);
}

bool LedgerJournal::flush() {
  std::uint64_t before;
  {
    std::lock_guard sl(stats_mu_);
    before = stats_.failed_batches;
  }
  write_thread_batches();
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  {
    std::lock_guard lk(mu_);
    if (stop_) return false;
    barriers_.push_back([done] { done->set_value(); });
  }
  cv_.notify_one();
  fut.wait();
  if (has_retry_) return false;  // a settle still waits to be written again
  std::lock_guard sl(stats_mu_);
  return stats_.failed_batches == before;
}

void LedgerJournal::folded(std::uint64_t jseq) {
  std::uint64_t cur = folded_.load();
  while (jseq > cur && !folded_.compare_exchange_weak(cur, jseq)) {
  }
}

std::uint64_t LedgerJournal::unfolded() const {
  const std::uint64_t w = written_.load(), f = folded_.load();
  return w > f ? w - f : 0;
}

void LedgerJournal::drop_folded_segments() {
  const std::uint64_t f = folded_.load();
  std::lock_guard lk(segments_mu_);
  while (!segments_.empty() && segments_.front().last <= f) {
    const bool current = segments_.size() == 1;
    if (current && !joined_) break;  // still written to
    std::error_code ec;
    std::filesystem::remove(segments_.front().path, ec);
    if (ec) break;  // tried again after the next batch
    segments_.pop_front();
  }
}

WriterStats LedgerJournal::stats() const {
  std::lock_guard sl(stats_mu_);
  WriterStats s = stats_;
  samples_.fill(s);
  return s;
}

StoreHealth LedgerJournal::health() const {
  std::lock_guard sl(stats_mu_);
  return StoreHealth{writable_, last_error_};
}

std::string LedgerJournal::start_segment(std::uint64_t first) {
  const auto path = segment_path(opts_.dir, first);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create ledger journal segment " + path.string() + ": " + errno_text();
  if (fd_ >= 0) {
    if (opts_.fsync) ::fdatasync(fd_);
    ::close(fd_);
  }
  fd_ = fd;
  size_ = 0;
  cut_pending_ = false;
  if (opts_.fsync) sync_dir(opts_.dir);
  std::lock_guard lk(segments_mu_);
  if (!segments_.empty() && segments_.back().path == path) segments_.pop_back();  // an empty one, reused
  segments_.push_back(Segment{first, first - 1, path});
  return {};
}

std::string LedgerJournal::write_bytes(const std::string& bytes) {
  if (cut_pending_) {
    if (::ftruncate(fd_, size_) != 0) return "cannot cut a failed write off the ledger journal: " + errno_text();
    cut_pending_ = false;
  }
  std::string err;
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + off, bytes.size() - off, size_ + static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno_text() : "nothing written";
      break;
    }
    off += static_cast<std::size_t>(n);
  }
  if (err.empty() && opts_.fsync && ::fdatasync(fd_) != 0) err = "fdatasync: " + errno_text();
  if (!err.empty()) {
    // Whatever part of the batch reached the file is cut off before anything else is written.
    cut_pending_ = ::ftruncate(fd_, size_) != 0;
    return "ledger journal write failed: " + err;
  }
  size_ += static_cast<off_t>(bytes.size());
  return {};
}

void LedgerJournal::write_batch(std::vector<Pending>& batch, bool keep_settles) {
  std::lock_guard wl(write_mu_);
  write_batch_locked(batch, keep_settles);
}

void LedgerJournal::write_batch_locked(std::vector<Pending>& batch, bool keep_settles) {
  if (stopped_ && joined_) keep_settles = false;  // no thread left to write them again
  std::string bytes;
  std::vector<Pending*> go;  // written in this order, jseq next_jseq_ + i
  go.reserve(batch.size());
  const std::uint64_t backlog = unfolded();
  std::uint64_t refused = 0;
  for (auto& p : batch) {
    if (p.record.kind == LedgerKind::settle && failed_reserves_.erase(p.record.reservation_id) != 0) {
      fire_durable(p.cb, true);  // its reserve was never written: nothing to close
      continue;
    }
    if (p.record.kind == LedgerKind::reserve && backlog + go.size() >= opts_.max_unfolded) {
      failed_reserves_.insert(p.record.reservation_id);
      fire_durable(p.cb, false);
      ++refused;
      continue;
    }
    encode(next_jseq_ + go.size(), p.record, bytes);
    go.push_back(&p);
  }
  if (refused != 0) {
    std::lock_guard sl(stats_mu_);
    stats_.failed_ledger_records += refused;
    last_error_ = "ledger journal: " + std::to_string(backlog) + " records wait to be folded into the database";
  }
  if (go.empty()) return;
  const std::string err = write_bytes(bytes);
  const auto done = Clock::now();
  {
    std::lock_guard sl(stats_mu_);
    ++stats_.batches;
    if (err.empty()) {
      writable_ = true;
      stats_.ledger_records += go.size();
      stats_.records += go.size();
      stats_.max_batch = std::max<std::uint64_t>(stats_.max_batch, go.size());
      for (const Pending* p : go)
        samples_.add(std::chrono::duration_cast<std::chrono::microseconds>(done - p->enqueued).count());
    } else {
      ++stats_.failed_batches;
      writable_ = false;
      last_error_ = err;
    }
  }
  if (err.empty()) {
    retry_backoff_ = Clock::duration::zero();
    std::vector<JournalEntry> entries;
    entries.reserve(go.size());
    for (Pending* p : go) entries.push_back(JournalEntry{next_jseq_++, std::move(p->record)});
    written_ = next_jseq_ - 1;
    {
      std::lock_guard lk(segments_mu_);
      segments_.back().last = next_jseq_ - 1;
    }
    if (sink_) sink_(std::move(entries));
    for (Pending* p : go) fire_durable(p->cb, true);
    if (size_ >= static_cast<off_t>(opts_.segment_bytes))
      if (auto e = start_segment(next_jseq_); !e.empty()) {
        std::lock_guard sl(stats_mu_);
        last_error_ = e;  // the current segment goes on growing; tried again after the next batch
      }
    drop_folded_segments();
    return;
  }
  bool kept = false;
  for (Pending* p : go) {
    if (p->record.kind == LedgerKind::settle && keep_settles) {
      retry_.push_back(std::move(*p));
      kept = true;
      continue;
    }
    if (p->record.kind == LedgerKind::reserve) failed_reserves_.insert(p->record.reservation_id);
    {
      std::lock_guard sl(stats_mu_);
      ++stats_.failed_ledger_records;
    }
    fire_durable(p->cb, false);
  }
  if (kept) {
    using std::chrono::milliseconds;
    retry_backoff_ = std::clamp<Clock::duration>(retry_backoff_ * 2, milliseconds(50), milliseconds(1000));
    retry_at_ = Clock::now() + retry_backoff_;
    retry_at_ns_ = retry_at_.time_since_epoch().count();
    has_retry_ = true;
    { std::lock_guard lk(mu_); }  // the journal thread is waiting (and is woken) or will see the flag
    cv_.notify_one();
  }
}

void LedgerJournal::loop() {
  std::vector<Pending> batch;
  std::vector<std::function<void()>> barriers;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lk(mu_);
      for (;;) {
        if (stop_ || !queue_.empty() || !barriers_.empty()) break;
        const Clock::time_point at{Clock::duration(retry_at_ns_.load())};
        if (has_retry_ && Clock::now() >= at) break;
        if (has_retry_) cv_.wait_until(lk, at);
        else cv_.wait(lk);
      }
      stopping = stop_;
      batch.swap(queue_);
      barriers.swap(barriers_);
    }
    // Kept settles first, in a batch of their own; when stopping they get one last try.
    if (has_retry_ && (stopping || Clock::now() >= Clock::time_point{Clock::duration(retry_at_ns_.load())})) {
      std::vector<Pending> again;
      {
        std::lock_guard wl(write_mu_);
        again.swap(retry_);
        has_retry_ = false;
      }
      write_batch(again, !stopping);
    }
    if (!batch.empty()) write_batch(batch, !stopping);
    batch.clear();
    for (auto& b : barriers) b();
    barriers.clear();
    if (stopping) {
      std::lock_guard lk(mu_);
      if (queue_.empty() && barriers_.empty()) break;
    }
  }
}

}  // namespace tollgate::store::journal
