// core::ThreadLogMute: the lines one thread writes while muted are dropped by the muteable sink;
// other threads' lines, and the thread's own after the mute, go through.
#include "core/thread_log.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

namespace tollgate::core {
namespace {

TEST(ThreadLogMute, DropsTheMutedThreadsLinesOnly) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "mute-test", muteable_sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));
  logger->set_pattern("%v");
  logger->info("before");
  {
    const ThreadLogMute mute;
    EXPECT_TRUE(thread_logs_muted());
    logger->warn("simulated circuit opened");
    std::thread other([&] {
      EXPECT_FALSE(thread_logs_muted());
      logger->info("another thread");
    });
    other.join();
    {
      const ThreadLogMute nested;
      logger->info("nested");
    }
    EXPECT_TRUE(thread_logs_muted());
    logger->info("still muted");
  }
  EXPECT_FALSE(thread_logs_muted());
  logger->info("after");
  EXPECT_EQ(out.str(), "before\nanother thread\nafter\n");
}

}  // namespace
}  // namespace tollgate::core
