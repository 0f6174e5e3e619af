#include "telemetry/process_usage.hpp"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace tollgate::telemetry {

ProcessUsage read_process_usage() noexcept {
  ProcessUsage u;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long long size = 0, resident = 0;
    if (std::fscanf(f, "%llu %llu", &size, &resident) == 2)
      u.rss_bytes = resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    std::fclose(f);
  }
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec))
    ++u.open_fds;
  if (u.open_fds > 0) --u.open_fds;  // the scan's own descriptor
  const struct mallinfo2 m = ::mallinfo2();
  u.heap_in_use_bytes = m.uordblks + m.hblkhd;
  u.heap_free_bytes = m.fordblks;
  return u;
}

}  // namespace tollgate::telemetry
