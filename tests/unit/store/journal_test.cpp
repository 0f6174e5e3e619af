// The ledger journal: its frame format (torn tails, damage, sequence gaps), the journal's
// replay, rotation and deletion, its refusals (a backlog past its bound, a write that fails), and
// the journaled SQLite store: a SIGKILL loses nothing confirmed, a locked database loses nothing,
// and the next open folds what the journal holds.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <fstream>
#include <map>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "store/journal/journal_codec.hpp"
#include "store/journal/ledger_journal.hpp"
#include "test_util.hpp"

namespace tollgate::store::journal {
namespace {

using testing::TempDir;

LedgerRecord record(std::uint64_t id, LedgerKind kind, std::int64_t amount) {
  LedgerRecord r;
  r.reservation_id = id;
  r.kind = kind;
  r.amount_nanos = amount;
  r.actual_nanos = kind == LedgerKind::settle ? amount / 2 : 0;
  r.settle_kind = kind == LedgerKind::settle ? "actual" : "";
  r.request_id = "req-" + std::to_string(id);
  r.model = "gpt-4o";
  r.at_ms = 1000 + static_cast<std::int64_t>(id);
  if (kind == LedgerKind::reserve)
    r.scopes = {{"key", "hash-" + std::to_string(id % 3), 0, 0, ""}, {"key_window", "hash-1", 86'400'000, 172'800'000, "1d"}};
  return r;
}

std::vector<std::string> segment_files(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".journal") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

// --- the frame format -----------------------------------------------------------------------

TEST(JournalCodec, RoundTripsEveryFieldAndAnyBytes) {
  LedgerRecord r = record(7, LedgerKind::reserve, 123456789);
  r.request_id = std::string("a\0b\xff\n", 5);
  r.model = std::string(70000, 'm');
  std::string bytes;
  encode(41, r, bytes);
  encode(42, record(7, LedgerKind::settle, 99), bytes);
  const Decoded d = decode(bytes, 41);
  EXPECT_EQ(d.stopped, "");
  EXPECT_EQ(d.valid_bytes, bytes.size());
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entries[0].jseq, 41u);
  EXPECT_EQ(d.entries[0].record, r);
  EXPECT_EQ(d.entries[1].record, record(7, LedgerKind::settle, 99));
}

// CRC-32 (ISO-HDLC: reflected polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF), bit
// by bit: the checksum every journal was written with, whichever library computes it.
std::uint32_t reference_crc32(std::string_view bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (const unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

TEST(JournalCodec, AFramesChecksumIsTheCrc32OfItsPayload) {
  ASSERT_EQ(reference_crc32("123456789"), 0xCBF43926u);  // the standard check value
  LedgerRecord r = record(3, LedgerKind::settle, 5);
  r.scopes.push_back(LedgerScope{"key", std::string(64, 'f'), 1, 2, "1d"});
  std::string bytes = "xyz";  // a frame after others
  encode(9, r, bytes);
  const std::string_view frame = std::string_view(bytes).substr(3);
  auto le32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(frame[at + static_cast<std::size_t>(i)]);
    return v;
  };
  ASSERT_EQ(le32(0), frame.size() - 8);
  EXPECT_EQ(le32(4), reference_crc32(frame.substr(8)));
}

TEST(JournalCodec, EveryTornTailDecodesToTheWholeFramesBeforeIt) {
  std::string bytes;
  std::vector<std::size_t> ends;
  for (std::uint64_t j = 1; j <= 3; ++j) {
    encode(j, record(j, LedgerKind::reserve, 10), bytes);
    ends.push_back(bytes.size());
  }
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    const Decoded d = decode(std::string_view(bytes).substr(0, cut), 1);
    std::size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    ASSERT_EQ(d.entries.size(), whole) << "cut at " << cut;
    EXPECT_EQ(d.valid_bytes, whole == 0 ? 0 : ends[whole - 1]);
    EXPECT_EQ(d.stopped.empty(), d.valid_bytes == cut) << "cut at " << cut;
  }
}

TEST(JournalCodec, AnyChangedByteEndsTheLogBeforeItsFrame) {
  std::string bytes;
  encode(1, record(1, LedgerKind::reserve, 10), bytes);
  const std::size_t first = bytes.size();
  encode(2, record(2, LedgerKind::reserve, 20), bytes);
  encode(3, record(3, LedgerKind::reserve, 30), bytes);
  const std::size_t second = bytes.size() - first;
  for (std::size_t i = first; i < first + second / 2; ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    const Decoded d = decode(bad, 1);
    ASSERT_EQ(d.entries.size(), 1u) << "byte " << i;
    EXPECT_EQ(d.valid_bytes, first);
    EXPECT_FALSE(d.stopped.empty());
  }
}

TEST(JournalCodec, ASequenceGapOrAWrongFirstNumberEndsTheLog) {
  std::string bytes;
  encode(1, record(1, LedgerKind::reserve, 10), bytes);
  encode(2, record(2, LedgerKind::reserve, 10), bytes);
  encode(4, record(4, LedgerKind::reserve, 10), bytes);
  Decoded d = decode(bytes, 1);
  EXPECT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.stopped, "sequence gap");
  d = decode(bytes, 5);
  EXPECT_EQ(d.entries.size(), 0u);
  EXPECT_EQ(d.stopped, "sequence gap");
}

TEST(JournalCodec, GarbageNeverDecodesToARecord) {
  std::string junk(4096, '\0');
  for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 2654435761u) >> 13);
  EXPECT_TRUE(decode(junk).entries.empty());
  // A frame that declares an absurd length is damage, not a reason to wait for more bytes.
  std::string huge("\xff\xff\xff\x7f\0\0\0\0", 8);
  EXPECT_EQ(decode(huge).stopped, "bad payload");
}

// The fuzz target's seeds (written by tests/fuzz/make_corpus.py, in Python) are frames this
// decoder reads: the two implementations of the format agree, CRC included.
TEST(JournalCodec, TheFuzzSeedsWrittenElsewhereDecode) {
  const auto dir = std::filesystem::path(TOLLGATE_SOURCE_DIR) / "tests/fuzz/corpus/journal_decode";
  int seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const Decoded d = decode(read_all(e.path().string()));
    EXPECT_FALSE(d.entries.empty()) << e.path() << ": " << d.stopped;
    ++seeds;
  }
  EXPECT_GE(seeds, 3);
}

// --- the journal ----------------------------------------------------------------------------

struct Collected {
  std::mutex mu;
  std::vector<JournalEntry> entries;
  LedgerJournal::Sink sink() {
    return [this](std::vector<JournalEntry> e) {
      std::lock_guard lk(mu);
      for (auto& x : e) entries.push_back(std::move(x));
    };
  }
  std::vector<std::uint64_t> jseqs() {
    std::lock_guard lk(mu);
    std::vector<std::uint64_t> out;
    for (auto& e : entries) out.push_back(e.jseq);
    return out;
  }
};

bool append_sync(LedgerJournal& j, LedgerRecord r) {
  std::promise<bool> p;
  auto f = p.get_future();
  j.append(std::move(r), [&](bool ok) { p.set_value(ok); });
  return f.get();
}

std::unique_ptr<LedgerJournal> open_or_die(const JournalOptions& o, std::uint64_t folded,
                                           std::vector<JournalEntry>* unfolded = nullptr) {
  auto opened = LedgerJournal::open(o, folded);
  if (!opened) {
    ADD_FAILURE() << opened.error().message;
    return nullptr;
  }
  if (unfolded) *unfolded = std::move(opened->unfolded);
  return std::move(opened->journal);
}

// Reopens the journal at `o`: it holds `threads` × `each` records numbered 1, 2, 3…, thread t
// appended ids t × each + 1 … (t + 1) × each, and each thread's records are in its order.
void expect_each_threads_records_in_order(const JournalOptions& o, std::uint64_t threads, std::uint64_t each) {
  std::vector<JournalEntry> all;
  ASSERT_TRUE(open_or_die(o, 0, &all));
  ASSERT_EQ(all.size(), threads * each);
  std::vector<std::uint64_t> next(threads, 0);
  for (std::size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(all[k].jseq, k + 1);
    const std::uint64_t id = all[k].record.reservation_id - 1, t = id / each;
    ASSERT_LT(t, threads);
    EXPECT_EQ(id % each, next[t]++) << "thread " << t << "'s records out of order";
  }
}

// Both ways of writing: the appender's thread (no fsync) and the journal thread's batches (fsync).
class JournalWrites : public ::testing::TestWithParam<bool> {
 protected:
  JournalOptions opts(const std::filesystem::path& dir) const { return {.dir = dir, .fsync = GetParam()}; }
};
INSTANTIATE_TEST_SUITE_P(Modes, JournalWrites, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Fsync" : "Inline"; });

TEST_P(JournalWrites, ConfirmsAfterTheWriteHandsOnInOrderAndReplaysWhatWasNotFolded) {
  TempDir dir;
  const JournalOptions o = opts(dir.path() / "j");
  {
    auto j = open_or_die(o, 0);
    ASSERT_TRUE(j);
    Collected got;
    j->start(got.sink());
    for (std::uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE(append_sync(*j, record(i, LedgerKind::reserve, 10)));
    EXPECT_EQ(got.jseqs(), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(j->unfolded(), 5u);
    j->folded(3);
    EXPECT_EQ(j->unfolded(), 2u);
    EXPECT_EQ(j->stats().ledger_records, 5u);
  }
  std::vector<JournalEntry> unfolded;
  auto j = open_or_die(o, 3, &unfolded);
  ASSERT_TRUE(j);
  ASSERT_EQ(unfolded.size(), 2u);
  EXPECT_EQ(unfolded[0].jseq, 4u);
  EXPECT_EQ(unfolded[0].record, record(4, LedgerKind::reserve, 10));
  EXPECT_EQ(unfolded[1].record, record(5, LedgerKind::reserve, 10));
  // Numbering goes on after the last record.
  Collected got;
  j->start(got.sink());
  ASSERT_TRUE(append_sync(*j, record(6, LedgerKind::reserve, 10)));
  EXPECT_EQ(got.jseqs(), (std::vector<std::uint64_t>{6}));
}

// Appenders on several threads at once (the gateway's workers). Every record is confirmed once
// (without fsync by the time its append returned), each thread's records keep their order, and the
// journal holds each exactly once with consecutive numbers.
TEST_P(JournalWrites, ConcurrentAppendersAreEachConfirmedOnceAndWrittenInTheirOrder) {
  TempDir dir;
  const JournalOptions o = opts(dir.path() / "j");
  constexpr std::uint64_t kThreads = 4, kEach = 1500;
  std::vector<std::atomic<int>> confirmed(kThreads * kEach);
  std::atomic<int> refused{0};
  {
    auto j = open_or_die(o, 0);
    ASSERT_TRUE(j);
    Collected got;
    j->start(got.sink());
    std::vector<std::thread> threads;
    for (std::uint64_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (std::uint64_t i = 0; i < kEach; ++i) {
          const std::uint64_t id = t * kEach + i;
          j->append(record(id + 1, i % 2 ? LedgerKind::settle : LedgerKind::reserve, 10), [&, id](bool ok) {
            if (!ok) ++refused;
            ++confirmed[id];
          });
        }
      });
    for (auto& th : threads) th.join();
    if (GetParam()) {
      ASSERT_TRUE(j->flush());  // the journal thread confirms after the appends return
    }
    EXPECT_EQ(refused.load(), 0);
    for (std::size_t id = 0; id < confirmed.size(); ++id) ASSERT_EQ(confirmed[id].load(), 1) << "record " << id;
    EXPECT_EQ(got.jseqs().size(), kThreads * kEach);
  }
  expect_each_threads_records_in_order(o, kThreads, kEach);
}

TEST_P(JournalWrites, ATornTailIsCutAtOpenAndWritingGoesOnAfterTheWholeRecords) {
  TempDir dir;
  const JournalOptions o = opts(dir.path() / "j");
  {
    auto j = open_or_die(o, 0);
    j->start({});
    for (std::uint64_t i = 1; i <= 3; ++i) ASSERT_TRUE(append_sync(*j, record(i, LedgerKind::reserve, 10)));
  }
  auto files = segment_files(o.dir);
  ASSERT_EQ(files.size(), 1u);
  std::string half;
  encode(4, record(4, LedgerKind::reserve, 10), half);
  half.resize(half.size() / 2);
  write_all(files[0], read_all(files[0]) + half);

  auto opened = LedgerJournal::open(o, 0);
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(opened->torn_bytes, half.size());
  EXPECT_EQ(opened->unfolded.size(), 3u);
  opened->journal->start({});
  ASSERT_TRUE(append_sync(*opened->journal, record(9, LedgerKind::reserve, 10)));
  opened->journal.reset();

  std::vector<JournalEntry> all;
  ASSERT_TRUE(open_or_die(o, 0, &all));
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].jseq, 4u);
  EXPECT_EQ(all[3].record.reservation_id, 9u);
}

// Only what a crash can leave is cut: an incomplete last frame, or zeros (blocks allocated and
// never written). Damage to a whole frame of the last segment is refused like damage elsewhere:
// those records were confirmed.
TEST_P(JournalWrites, DamageInsideTheLastSegmentRefusesToOpenAndZerosAtItsEndAreCut) {
  TempDir dir;
  const JournalOptions o = opts(dir.path() / "j");
  {
    auto j = open_or_die(o, 0);
    j->start({});
    for (std::uint64_t i = 1; i <= 3; ++i) ASSERT_TRUE(append_sync(*j, record(i, LedgerKind::reserve, 10)));
  }
  const std::string seg = segment_files(o.dir).front();
  const std::string good = read_all(seg);
  write_all(seg, good + std::string(4096, '\0'));
  {
    auto opened = LedgerJournal::open(o, 0);
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(opened->torn_bytes, 4096u);
    EXPECT_EQ(opened->unfolded.size(), 3u);
  }
  std::string bad = good;
  bad[good.size() / 2] = static_cast<char>(bad[good.size() / 2] ^ 0x10);  // inside the second frame
  write_all(segment_files(o.dir).front(), bad);
  auto damaged = LedgerJournal::open(o, 0);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find("damaged"), std::string::npos) << damaged.error().message;
  EXPECT_EQ(read_all(segment_files(o.dir).front()), bad) << "nothing was cut";
}

TEST_P(JournalWrites, AFileWithASegmentsNameButNoValidNumberIsRefusedNotACrash) {
  for (const char* name : {"ledger-99999999999999999999.journal", "ledger-00000000000000000000.journal"}) {
    TempDir dir;
    const JournalOptions o = opts(dir.path() / "j");
    std::filesystem::create_directories(o.dir);
    write_all((o.dir / name).string(), "");
    auto opened = LedgerJournal::open(o, 0);
    ASSERT_FALSE(opened) << name;
    EXPECT_NE(opened.error().message.find(name), std::string::npos) << opened.error().message;
  }
}

TEST_P(JournalWrites, SegmentsRotateAndGoOnceFoldedAndDamageBeforeTheEndRefusesToOpen) {
  TempDir dir;
  JournalOptions o = opts(dir.path() / "j");
  o.segment_bytes = 1;  // a segment per write
  {
    auto j = open_or_die(o, 0);
    j->start({});
    for (std::uint64_t i = 1; i <= 4; ++i) ASSERT_TRUE(append_sync(*j, record(i, LedgerKind::reserve, 10)));
    ASSERT_TRUE(j->flush());  // the rotation after the last write is done (it follows the callbacks)
    EXPECT_EQ(segment_files(o.dir).size(), 5u);  // four written, one started
    j->folded(2);
    j->drop_folded_segments();
    EXPECT_EQ(segment_files(o.dir).size(), 3u);
  }
  auto files = segment_files(o.dir);
  ASSERT_EQ(files.size(), 3u);
  {
    // The database holds 1..2, the journal 3..4: nothing is lost, nothing folded twice.
    std::vector<JournalEntry> unfolded;
    ASSERT_TRUE(open_or_die(o, 2, &unfolded));
    ASSERT_EQ(unfolded.size(), 2u);
    EXPECT_EQ(unfolded[0].jseq, 3u);
  }
  // A segment is missing before the first one left: refused, naming it.
  auto missing = LedgerJournal::open(o, 1);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("missing"), std::string::npos) << missing.error().message;
  // Damage in a segment that is not the last: refused, naming the file.
  files = segment_files(o.dir);
  std::string bytes = read_all(files[0]);
  ASSERT_GT(bytes.size(), 20u);
  bytes[20] = static_cast<char>(bytes[20] ^ 1);
  write_all(files[0], bytes);
  auto damaged = LedgerJournal::open(o, 2);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find(std::filesystem::path(files[0]).filename().string()), std::string::npos)
      << damaged.error().message;
}

TEST_P(JournalWrites, PastTheBacklogBoundReservesAreRefusedAndTheirSettlesDroppedSettlesStillWritten) {
  TempDir dir;
  JournalOptions o = opts(dir.path() / "j");
  o.max_unfolded = 2;
  auto j = open_or_die(o, 0);
  Collected got;
  j->start(got.sink());
  ASSERT_TRUE(append_sync(*j, record(1, LedgerKind::reserve, 10)));
  ASSERT_TRUE(append_sync(*j, record(2, LedgerKind::reserve, 10)));
  EXPECT_FALSE(append_sync(*j, record(3, LedgerKind::reserve, 10)));  // 2 wait to be folded
  EXPECT_TRUE(append_sync(*j, record(3, LedgerKind::settle, 10)));    // closes nothing: dropped
  EXPECT_TRUE(append_sync(*j, record(1, LedgerKind::settle, 10)));    // never refused
  j->folded(3);
  EXPECT_TRUE(append_sync(*j, record(4, LedgerKind::reserve, 10)));
  std::vector<std::uint64_t> ids;
  for (auto& e : got.entries) ids.push_back(e.record.reservation_id);
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{1, 2, 1, 4}));
  EXPECT_EQ(j->stats().failed_ledger_records, 1u);
}

// A write the disk refuses (a file size limit: EFBIG, as a full disk gives ENOSPC), in a child
// process: the reserve is refused, the settle kept and written once the disk takes it again, and
// no byte of the refused write is left for the next open to replay.
TEST_P(JournalWrites, AFailedWriteRefusesTheReserveKeepsTheSettleAndLeavesNothingBehind) {
  TempDir dir;
  const JournalOptions o = opts(dir.path() / "j");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    auto opened = LedgerJournal::open(o, 0);
    if (!opened) ::_exit(2);
    auto& j = *opened->journal;
    j.start({});
    if (!append_sync(j, record(1, LedgerKind::reserve, 10))) ::_exit(3);
    const auto size = std::filesystem::file_size(segment_files(o.dir).back());
    rlimit lim{};
    ::getrlimit(RLIMIT_FSIZE, &lim);
    const rlimit full = lim;
    lim.rlim_cur = size;
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(4);
    if (append_sync(j, record(2, LedgerKind::reserve, 10))) ::_exit(5);
    if (j.health().writable) ::_exit(6);
    std::promise<bool> settled;
    j.append(record(1, LedgerKind::settle, 10), [&](bool ok) { settled.set_value(ok); });
    auto f = settled.get_future();
    if (f.wait_for(std::chrono::milliseconds(300)) != std::future_status::timeout) ::_exit(7);  // kept, not failed
    if (j.flush()) ::_exit(11);  // a kept settle is not written yet
    if (::setrlimit(RLIMIT_FSIZE, &full) != 0) ::_exit(8);
    if (!f.get()) ::_exit(9);
    if (!j.health().writable) ::_exit(10);
    j.stop();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child's check that failed";
  std::vector<JournalEntry> all;
  ASSERT_TRUE(open_or_die(o, 0, &all));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].record, record(1, LedgerKind::reserve, 10));
  EXPECT_EQ(all[1].record, record(1, LedgerKind::settle, 10));
  EXPECT_EQ(all[1].jseq, 2u);
}

// --- batches per thread (a worker's event loop) -------------------------------------------

// The calling thread batches its appends; its posted writes wait in `posted` until run. Turned
// off again at the end of the scope (the test thread runs other tests after).
struct BatchingHere {
  std::vector<std::function<void()>> posted;
  BatchingHere() {
    batch_appends_on_this_thread([this](std::function<void()> fn) { posted.push_back(std::move(fn)); });
  }
  ~BatchingHere() { batch_appends_on_this_thread({}); }
  void run_posted() {
    auto now = std::move(posted);
    posted.clear();
    for (auto& fn : now) fn();
  }
};

TEST(JournalThreadBatches, OneTurnsRecordsWaitForThePostedWriteAndGoOutInOneWriteInOrder) {
  TempDir dir;
  const JournalOptions o{.dir = dir.path() / "j"};
  std::vector<int> confirmed;  // reservation ids, in the order their callbacks fired
  {
    auto j = open_or_die(o, 0);
    ASSERT_TRUE(j);
    Collected got;
    j->start(got.sink());
    BatchingHere here;
    j->append(record(1, LedgerKind::reserve, 10), [&](bool ok) { confirmed.push_back(ok ? 1 : -1); });
    j->append(record(2, LedgerKind::reserve, 10), [&](bool ok) { confirmed.push_back(ok ? 2 : -2); });
    j->append(record(1, LedgerKind::settle, 10), [&](bool ok) { confirmed.push_back(ok ? 3 : -3); });
    EXPECT_TRUE(confirmed.empty()) << "confirmed before the write";
    EXPECT_TRUE(got.jseqs().empty());
    EXPECT_EQ(j->stats().batches, 0u);
    ASSERT_EQ(here.posted.size(), 1u) << "one write posted per batch";
    here.run_posted();
    EXPECT_EQ(confirmed, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(got.jseqs(), (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_EQ(j->stats().batches, 1u);
    EXPECT_EQ(j->stats().ledger_records, 3u);
    // The next turn's record posts a write of its own.
    j->append(record(3, LedgerKind::reserve, 10), [&](bool ok) { confirmed.push_back(ok ? 4 : -4); });
    ASSERT_EQ(here.posted.size(), 1u);
    here.run_posted();
    EXPECT_EQ(confirmed, (std::vector<int>{1, 2, 3, 4}));
    EXPECT_EQ(j->stats().batches, 2u);
  }
  std::vector<JournalEntry> all;
  ASSERT_TRUE(open_or_die(o, 0, &all));
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[2].record, record(1, LedgerKind::settle, 10));
  EXPECT_EQ(all[3].record, record(3, LedgerKind::reserve, 10));
}

// A batch whose posted write never runs (the event loop stopped) is written by flush() and by
// stop(); its posted write, run late, finds nothing left.
TEST(JournalThreadBatches, FlushAndStopWriteAWaitingBatchAndALatePostedWriteFindsNothing) {
  TempDir dir;
  const JournalOptions o{.dir = dir.path() / "j"};
  int confirmed = 0, refused = 0;
  auto cb = [&](bool ok) { ++(ok ? confirmed : refused); };
  {
    auto j = open_or_die(o, 0);
    ASSERT_TRUE(j);
    j->start({});
    BatchingHere here;
    j->append(record(1, LedgerKind::reserve, 10), cb);
    j->append(record(2, LedgerKind::reserve, 10), cb);
    EXPECT_EQ(confirmed, 0);
    EXPECT_TRUE(j->flush());
    EXPECT_EQ(confirmed, 2);
    here.run_posted();  // late: already written
    EXPECT_EQ(confirmed, 2);
    EXPECT_EQ(j->stats().ledger_records, 2u);
    j->append(record(1, LedgerKind::settle, 10), cb);
    j->stop();
    EXPECT_EQ(confirmed, 3);
    here.run_posted();
    j->append(record(3, LedgerKind::reserve, 10), cb);  // after stop(): refused at once
    EXPECT_EQ(refused, 1);
    EXPECT_EQ(confirmed, 3);
    EXPECT_TRUE(here.posted.empty());
  }
  std::vector<JournalEntry> all;
  ASSERT_TRUE(open_or_die(o, 0, &all));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].record, record(1, LedgerKind::settle, 10));
}

// A thread that does not batch (a drain's cleanup, the admin API) writes the waiting batches
// before its own record: a reservation's settle never comes before its reserve.
TEST(JournalThreadBatches, AnAppendOnAThreadThatDoesNotBatchWritesTheWaitingBatchesFirst) {
  TempDir dir;
  auto j = open_or_die({.dir = dir.path() / "j"}, 0);
  ASSERT_TRUE(j);
  Collected got;
  j->start(got.sink());
  std::atomic<int> reserve_ok{0};
  std::vector<std::function<void()>> stranded;  // the worker's posted write, never run
  std::thread worker([&] {
    BatchingHere here;
    j->append(record(7, LedgerKind::reserve, 10), [&](bool ok) { reserve_ok = ok ? 1 : -1; });
    stranded = std::move(here.posted);
  });
  worker.join();
  EXPECT_EQ(reserve_ok.load(), 0);
  ASSERT_TRUE(append_sync(*j, record(7, LedgerKind::settle, 10)));
  EXPECT_EQ(reserve_ok.load(), 1);
  std::lock_guard lk(got.mu);
  ASSERT_EQ(got.entries.size(), 2u);
  EXPECT_EQ(got.entries[0].record.kind, LedgerKind::reserve);
  EXPECT_EQ(got.entries[1].record.kind, LedgerKind::settle);
}

// Workers batching at once, each running its posted writes every few appends: every record is
// confirmed once, each thread's records keep their order, and the numbers are consecutive.
TEST(JournalThreadBatches, ConcurrentBatchingThreadsConfirmEachRecordOnceInTheirOrder) {
  TempDir dir;
  const JournalOptions o{.dir = dir.path() / "j"};
  constexpr std::uint64_t kThreads = 4, kEach = 1500;
  std::vector<std::atomic<int>> confirmed(kThreads * kEach);
  {
    auto j = open_or_die(o, 0);
    ASSERT_TRUE(j);
    Collected got;
    j->start(got.sink());
    std::vector<std::thread> threads;
    for (std::uint64_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        BatchingHere here;
        for (std::uint64_t i = 0; i < kEach; ++i) {
          const std::uint64_t id = t * kEach + i;
          j->append(record(id + 1, i % 2 ? LedgerKind::settle : LedgerKind::reserve, 10),
                    [&, id](bool ok) { confirmed[id] += ok ? 1 : 100; });
          if (i % (t + 2) == 0) here.run_posted();
        }
        here.run_posted();
      });
    for (auto& th : threads) th.join();
    for (std::size_t id = 0; id < confirmed.size(); ++id) ASSERT_EQ(confirmed[id].load(), 1) << "record " << id;
    EXPECT_EQ(got.jseqs().size(), kThreads * kEach);
    EXPECT_LT(j->stats().batches, kThreads * kEach) << "records of one turn share a write";
  }
  expect_each_threads_records_in_order(o, kThreads, kEach);
}

// Batching workers while another thread appends and flushes (the deferred-job runner, a
// shutdown): a batch taken by that thread is written before the worker's next batch, so every
// settle follows its reserve; and flush() returns only once everything appended before it was
// written (a worker's posted write under way included).
TEST(JournalThreadBatches, AThreadThatTakesTheBatchesKeepsEachSettleAfterItsReserveAndFlushWaitsForWritesUnderWay) {
  TempDir dir;
  const JournalOptions o{.dir = dir.path() / "j"};
  constexpr std::uint64_t kBatchers = 2, kEach = 3000, kOthers = 1'000'000;
  std::array<std::atomic<std::uint64_t>, kBatchers> appended{}, confirmed{};
  std::atomic<int> refused{0}, early{0}, flushes{0};
  std::atomic<bool> done{false};
  {
    auto j = open_or_die(o, 0);
    ASSERT_TRUE(j);
    j->start({});
    std::vector<std::thread> batchers;
    for (std::uint64_t t = 0; t < kBatchers; ++t)
      batchers.emplace_back([&, t] {
        BatchingHere here;
        auto cb = [&, t](bool ok) {
          if (!ok) ++refused;
          ++confirmed[t];
        };
        for (std::uint64_t i = 0; i < kEach; ++i) {
          const std::uint64_t id = t * kEach + i + 1;
          j->append(record(id, LedgerKind::reserve, 10), cb);
          if (i % 3 == 0) here.run_posted();
          j->append(record(id, LedgerKind::settle, 10), cb);
          appended[t] += 2;
          if (i % 2 == 0) here.run_posted();
        }
        here.run_posted();
      });
    std::thread other([&] {
      for (std::uint64_t k = 0; !done.load(); ++k) {
        std::array<std::uint64_t, kBatchers> before{};
        for (std::uint64_t t = 0; t < kBatchers; ++t) before[t] = appended[t].load();
        if (k % 4 == 0) {
          if (!j->flush()) ++refused;
          ++flushes;
          for (std::uint64_t t = 0; t < kBatchers; ++t)
            if (confirmed[t].load() < before[t]) ++early;
        }
        const std::uint64_t id = kOthers + k;
        if (!append_sync(*j, record(id, LedgerKind::reserve, 10)) || !append_sync(*j, record(id, LedgerKind::settle, 10)))
          ++refused;
      }
    });
    for (auto& th : batchers) th.join();
    done = true;
    other.join();
    EXPECT_EQ(refused.load(), 0);
    EXPECT_EQ(early.load(), 0) << "flush() returned before records appended earlier were written";
    EXPECT_GT(flushes.load(), 0);
    for (std::uint64_t t = 0; t < kBatchers; ++t) EXPECT_EQ(confirmed[t].load(), 2 * kEach);
  }
  std::vector<JournalEntry> all;
  ASSERT_TRUE(open_or_die(o, 0, &all));
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> at;  // id -> (reserve jseq, settle jseq)
  for (const auto& e : all) {
    auto& slot = at[e.record.reservation_id];
    auto& seq = e.record.kind == LedgerKind::reserve ? slot.first : slot.second;
    EXPECT_EQ(seq, 0u) << "record written twice: " << e.record.reservation_id;
    seq = e.jseq;
  }
  for (std::uint64_t id = 1; id <= kBatchers * kEach; ++id) {
    const auto it = at.find(id);
    ASSERT_NE(it, at.end()) << id;
    ASSERT_NE(it->second.first, 0u) << id;
    EXPECT_LT(it->second.first, it->second.second) << "settle before its reserve: " << id;
  }
}

// --- the journaled SQLite store -------------------------------------------------------------

sqlite::SqliteOptions journaled(int busy_timeout_ms = 5000) {
  return {.busy_timeout_ms = busy_timeout_ms, .exclusive_process = true, .ledger_journal = true};
}

bool store_append(Store& s, LedgerRecord r) { return testing::append_sync(s, std::move(r)); }

std::int64_t ledger_rows(const std::string& db) {
  sqlite3* c = nullptr;
  sqlite3_open(db.c_str(), &c);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(c, "SELECT COUNT(*) FROM ledger", -1, &st, nullptr);
  std::int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(c);
  return n;
}

TEST(JournaledStore, RecordsOnlyInTheJournalAreFoldedAtOpenOnceAndTheCleanStopLeavesNoSegment) {
  TempDir dir;
  const std::string db = dir.file("tg.db");
  { ASSERT_TRUE(testing::open_or_die(db, journaled())); }  // the schema, no records
  {
    // What a run killed before its fold leaves: records in the journal only.
    auto j = open_or_die({.dir = db + ".ledger"}, 0);
    j->start({});
    ASSERT_TRUE(append_sync(*j, record(1, LedgerKind::reserve, 100)));
    ASSERT_TRUE(append_sync(*j, record(2, LedgerKind::reserve, 40)));
    ASSERT_TRUE(append_sync(*j, record(1, LedgerKind::settle, 100)));
  }
  EXPECT_EQ(ledger_rows(db), 0);
  {
    auto store = testing::open_or_die(db, journaled());
    ASSERT_TRUE(store);
    EXPECT_EQ(ledger_rows(db), 3);
    auto rec = store->recover_ledger(5000);
    ASSERT_TRUE(rec) << rec.error().message;
    ASSERT_EQ(rec->recovered.size(), 1u);  // reservation 2 was left open
    EXPECT_EQ(rec->recovered[0].reservation_id, 2u);
    EXPECT_EQ(rec->max_reservation_id, 2u);
    ASSERT_TRUE(store_append(*store, record(3, LedgerKind::reserve, 10)));
  }
  EXPECT_EQ(ledger_rows(db), 5);  // 3 folded at open, the recovered settle, the new reserve
  EXPECT_TRUE(segment_files(db + ".ledger").empty());  // all folded: the clean stop removed them
  auto store = testing::open_or_die(db, journaled());
  ASSERT_TRUE(store);
  EXPECT_EQ(store->read_ledger(0, 100).value().size(), 5u);  // nothing folded twice
}

// A run with the journal killed with records in it, then a run without the journal: the records
// are folded in at open all the same, and the journal is removed.
TEST(JournaledStore, AStoreOpenedWithoutTheJournalStillFoldsWhatOneLeft) {
  TempDir dir;
  const std::string db = dir.file("tg.db");
  { ASSERT_TRUE(testing::open_or_die(db, journaled())); }
  {
    auto j = open_or_die({.dir = db + ".ledger"}, 0);
    j->start({});
    ASSERT_TRUE(append_sync(*j, record(1, LedgerKind::reserve, 100)));
    ASSERT_TRUE(append_sync(*j, record(1, LedgerKind::settle, 100)));
  }
  auto plain = journaled();
  plain.ledger_journal = false;
  {
    auto store = testing::open_or_die(db, plain);
    ASSERT_TRUE(store);
    EXPECT_EQ(ledger_rows(db), 2);
    ASSERT_TRUE(store_append(*store, record(2, LedgerKind::reserve, 10)));  // straight to SQLite
    EXPECT_EQ(ledger_rows(db), 3);
  }
  EXPECT_TRUE(segment_files(db + ".ledger").empty());
  auto store = testing::open_or_die(db, journaled());  // and back: nothing folded twice
  ASSERT_TRUE(store);
  EXPECT_EQ(store->read_ledger(0, 100).value().size(), 3u);
}

// A journal belongs to its database: one deleted and created again (or another file) is not
// given the old one's records; the start is refused, naming the directory.
TEST(JournaledStore, AJournalIsNeverFoldedIntoAnotherDatabase) {
  TempDir dir;
  const std::string db = dir.file("tg.db");
  {
    auto store = testing::open_or_die(db, journaled());
    ASSERT_TRUE(store);
    ASSERT_TRUE(store_append(*store, record(1, LedgerKind::reserve, 100)));
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  auto again = sqlite::open_sqlite_store(db, journaled());
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("belongs to another database"), std::string::npos) << again.error().message;
  EXPECT_NE(again.error().message.find(db + ".ledger"), std::string::npos) << again.error().message;
}

TEST(JournaledStore, SigkillAfterTheCallbacksLosesNoRecord) {
  TempDir dir;
  const std::string db = dir.file("tg.db");
  constexpr int kRecords = 400;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto s = sqlite::open_sqlite_store(db, journaled());
    if (!s) ::_exit(2);
    std::atomic<int> ok{0};
    std::promise<void> all;
    for (int i = 1; i <= kRecords; ++i)
      (*s)->append_ledger(record(static_cast<std::uint64_t>(i), i % 2 ? LedgerKind::reserve : LedgerKind::settle, 10),
                          [&](bool d) {
                            if (d && ++ok == kRecords) all.set_value();
                          });
    all.get_future().wait();  // every record confirmed; the fold has (mostly) not run yet
    ::kill(::getpid(), SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit code " << WEXITSTATUS(status);
  RecordProperty("folded_before_the_kill", std::to_string(ledger_rows(db)));  // 0 here: the replay is what is tested
  auto store = testing::open_or_die(db, journaled());
  ASSERT_TRUE(store);
  auto rows = store->read_ledger(0, 10 * kRecords);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), static_cast<std::size_t>(kRecords));
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ((*rows)[static_cast<std::size_t>(i)].reservation_id, static_cast<std::uint64_t>(i + 1));
}

TEST(JournaledStore, ALockedDatabaseRefusesNothingAndGetsEveryRecordOnceUnlocked) {
  TempDir dir;
  const std::string db = dir.file("tg.db");
  auto store = testing::open_or_die(db, journaled(1500));
  ASSERT_TRUE(store);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  for (std::uint64_t i = 1; i <= 10; ++i) EXPECT_TRUE(store_append(*store, record(i, LedgerKind::reserve, 10)));
  for (int i = 0; i < 5; ++i) {
    SpendLogRow row;
    row.request_id = "locked-" + std::to_string(i);
    row.spend_nanos = 7;
    store->append_spend_log(std::move(row));
  }
  // The health check answers at once (the latest write's outcome), never waiting for the lock:
  // past a second without a write it probes, and the probe waits on the writer, not the caller.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::promise<void> answered;
  std::thread probe([&] {
    store->health();
    store->health();
    answered.set_value();
  });
  EXPECT_EQ(answered.get_future().wait_for(std::chrono::seconds(1)), std::future_status::ready);
  probe.join();
  EXPECT_FALSE(store->flush());  // the fold cannot commit
  EXPECT_GE(store->writer_stats().failed_batches, 1u);
  EXPECT_EQ(store->writer_stats().failed_ledger_records, 0u);
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  auto rows = store->read_ledger(0, 100);
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 10u);
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ((*rows)[i].reservation_id, i + 1);
  // The spend rows of the failed folds were kept and written with them.
  auto logs = store->query_spend_logs({.limit = 100});
  ASSERT_TRUE(logs);
  EXPECT_EQ(logs->size(), 5u);
  EXPECT_EQ(store->writer_stats().dropped_spend_rows, 0u);
  EXPECT_TRUE(store->health().writable);
}

}  // namespace
}  // namespace tollgate::store::journal
