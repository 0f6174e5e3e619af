#pragma once
/// How the gateway gives memory back to the system (docs/operations.md "Memory after a load").
/// glibc's malloc keeps what a burst freed for reuse, so after a load the resident size would
/// stay near the burst's high-water mark although the live heap is small again; and its mmap
/// threshold rises with every large block freed (up to 32 MiB), after which large buffers
/// (an oversized upstream answer, a 40 MB body) are carved from the arenas and fragment them.
/// The chaos soak measured both (bench/RESULTS.md).

#include <cstddef>
#include <cstdint>
#include <functional>

#include <boost/asio/io_context.hpp>

namespace tollgate::app {

/// Fixes malloc's mmap threshold at 256 KiB (blocks at least that large are mapped and unmapped
/// on free, never kept in an arena) and its trim threshold at 1 MiB. Call once, before threads start.
void tune_allocator() noexcept;

/// Starts a once-a-second check on `ioc` (it runs as long as `ioc` does): when no request is in
/// flight now nor was a second ago, the resident size is `growth_bytes` above what it was after
/// the last trim (or its lowest since), and the allocator holds more than `growth_bytes` free,
/// malloc_trim(0) gives the free pages of every arena back (madvise). It never runs while
/// requests are in flight, so the request path never waits on it. `in_flight` reads the
/// requests in flight (thread-safe; http::Server::in_flight).
void start_idle_trim(boost::asio::io_context& ioc, std::function<std::size_t()> in_flight,
                     std::uint64_t growth_bytes = 4u << 20);

}  // namespace tollgate::app
