#pragma once
/// Muting the log lines one thread writes. A server's admin thread runs simulations
/// (POST /tollgate/simulate) through the real attempt loop, which logs circuit transitions and
/// alerts; those are the simulation's, not the gateway's, and must not reach the operator's log.
/// The process's log sink (muteable_sink, installed by app/main.cpp) drops every line written on
/// a thread while a ThreadLogMute lives on it. Thread-safe: the flag is thread_local.

#include <memory>

#include <spdlog/sinks/sink.h>

namespace tollgate::core {

/// Whether log lines written on this thread are dropped now.
bool thread_logs_muted() noexcept;

/// Mutes this thread's log lines for its lifetime (nests: the previous state comes back).
class ThreadLogMute {
 public:
  ThreadLogMute() noexcept;
  ~ThreadLogMute();
  ThreadLogMute(const ThreadLogMute&) = delete;
  ThreadLogMute& operator=(const ThreadLogMute&) = delete;

 private:
  bool previous_;
};

/// A sink that forwards to `inner` every line not written on a muted thread.
std::shared_ptr<spdlog::sinks::sink> muteable_sink(std::shared_ptr<spdlog::sinks::sink> inner);

}  // namespace tollgate::core
