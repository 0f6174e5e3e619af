// read_process_usage(): the figures move with what the process does (a descriptor opened, a
// block allocated), so /metrics and /tollgate/stats report the process, not constants.
#include "telemetry/process_usage.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace tollgate::telemetry {
namespace {

// AddressSanitizer replaces glibc's malloc: mallinfo2 (the heap figures) then reads 0.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kGlibcHeap = false;
#else
constexpr bool kGlibcHeap = true;
#endif

TEST(ProcessUsage, ReadsResidentMemoryDescriptorsAndTheHeap) {
  const auto before = read_process_usage();
  EXPECT_GT(before.rss_bytes, 1u << 20);
  EXPECT_GT(before.open_fds, 2u);  // stdin, stdout, stderr at least

  const int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  constexpr std::size_t big = 16u << 20;
  auto* block = static_cast<char*>(std::malloc(big));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, big);  // touched: resident

  const auto during = read_process_usage();
  EXPECT_EQ(during.open_fds, before.open_fds + 1);
  if (kGlibcHeap) {
    EXPECT_GE(during.heap_in_use_bytes, before.heap_in_use_bytes + big);
  }
  EXPECT_GE(during.rss_bytes, before.rss_bytes + big / 2);

  std::free(block);
  ::close(fd);
  const auto after = read_process_usage();
  EXPECT_EQ(after.open_fds, before.open_fds);
  if (kGlibcHeap) {
    EXPECT_LT(after.heap_in_use_bytes, during.heap_in_use_bytes);
  }
}

}  // namespace
}  // namespace tollgate::telemetry
