#pragma once
/// What the process holds right now, read at scrape time for /metrics and /tollgate/stats:
/// resident memory, open descriptors, and the C heap's bytes in use and held free (glibc's
/// mallinfo2). Linux only (/proc/self); a figure that cannot be read is 0.

#include <cstdint>

namespace tollgate::telemetry {

struct ProcessUsage {
  std::uint64_t rss_bytes = 0;          ///< resident set size (/proc/self/statm × page size), bytes
  std::uint64_t open_fds = 0;           ///< entries of /proc/self/fd
  std::uint64_t heap_in_use_bytes = 0;  ///< malloc'd and not yet freed (arenas + mmapped chunks), bytes
  std::uint64_t heap_free_bytes = 0;    ///< freed but kept by the allocator (not returned to the system), bytes
};

/// Reads the figures now; a few syscalls (one open + read, one directory scan). Never throws.
ProcessUsage read_process_usage() noexcept;

}  // namespace tollgate::telemetry
