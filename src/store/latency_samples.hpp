#pragma once
/// The latest latencies of a writer (GroupCommitWriter, journal::LedgerJournal) and their
/// percentiles for WriterStats. Not thread-safe: its owner guards it with its own mutex.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "store/store.hpp"

namespace tollgate::store {

class LatencySamples {
 public:
  /// Keeps the latest 65536 samples (memory allocated on the first one).
  void add(std::int64_t us);
  /// Sets s.p50_us, s.p99_us and s.max_us over the kept samples (left as they are when none).
  void fill(WriterStats& s) const;

 private:
  static constexpr std::size_t kRing = 1 << 16;
  std::vector<std::int64_t> samples_;
  std::size_t count_ = 0;
};

}  // namespace tollgate::store
