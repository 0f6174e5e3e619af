// tune_allocator(): a block of 256 KiB or more is mapped (and unmapped when freed) even after a
// larger block was freed — glibc's default would have raised its mmap threshold to that block's
// size and carved the next large buffers from an arena, where they stay resident once freed.
#include "app/memory_policy.hpp"

#include <malloc.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace tollgate::app {
namespace {

TEST(MemoryPolicy, LargeBlocksStayMappedAfterALargerOneWasFreed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer replaces glibc's malloc: mallopt and mallinfo2 do not apply";
#endif
  tune_allocator();
  void* big = std::malloc(8u << 20);
  ASSERT_NE(big, nullptr);
  std::memset(big, 1, 8u << 20);
  std::free(big);  // by default this would raise the mmap threshold to 8 MiB

  const auto mapped_before = ::mallinfo2().hblkhd;
  void* block = std::malloc(1u << 20);
  ASSERT_NE(block, nullptr);
  EXPECT_GE(::mallinfo2().hblkhd, mapped_before + (1u << 20)) << "a 1 MiB block was not mapped";
  std::free(block);
  EXPECT_LT(::mallinfo2().hblkhd, mapped_before + (1u << 20)) << "it was not unmapped when freed";
}

}  // namespace
}  // namespace tollgate::app
