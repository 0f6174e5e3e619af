#include "app/memory_policy.hpp"

#include <malloc.h>

#include <chrono>
#include <memory>

#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "telemetry/process_usage.hpp"

namespace tollgate::app {

void tune_allocator() noexcept {
  ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  ::mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
}

namespace {

struct IdleTrim : std::enable_shared_from_this<IdleTrim> {
  IdleTrim(boost::asio::io_context& ioc, std::function<std::size_t()> f, std::uint64_t growth)
      : timer(ioc), in_flight(std::move(f)), growth(growth) {}

  void arm() {
    timer.expires_after(std::chrono::seconds(1));
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec) return;
      self->tick();
      self->arm();
    });
  }

  void tick() {
    const bool idle = in_flight() == 0;
    if (idle && was_idle) {
      // Decided on the resident size, not on malloc's free bytes: those still count the pages a
      // trim gave back, so after one trim a second burst of the same size would never pass a
      // test on them, and its memory would stay resident.
      const auto before = telemetry::read_process_usage();
      if (before.rss_bytes < rss_after_trim) {
        rss_after_trim = before.rss_bytes;  // went down on its own: measure growth from here
      } else if (before.rss_bytes > rss_after_trim + growth && before.heap_free_bytes > growth) {
        ::malloc_trim(0);
        const auto after = telemetry::read_process_usage();
        rss_after_trim = after.rss_bytes;
        spdlog::debug("idle: returned freed memory to the system (resident {} → {} KiB, {} KiB held free)",
                      before.rss_bytes >> 10, after.rss_bytes >> 10, after.heap_free_bytes >> 10);
      }
    }
    was_idle = idle;
  }
  boost::asio::steady_timer timer;
  std::function<std::size_t()> in_flight;
  std::uint64_t growth;
  std::uint64_t rss_after_trim = 0;
  bool was_idle = false;
};

}  // namespace

void start_idle_trim(boost::asio::io_context& ioc, std::function<std::size_t()> in_flight,
                     std::uint64_t growth_bytes) {
  std::make_shared<IdleTrim>(ioc, std::move(in_flight), growth_bytes)->arm();
}

}  // namespace tollgate::app
