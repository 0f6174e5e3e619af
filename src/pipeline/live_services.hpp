#pragma once
/// The services snapshot in force (config hot reload, issue 11 §6): one atomic shared_ptr. A
/// request takes the snapshot once, when it arrives, and keeps it to its end; a reload installs
/// the next snapshot (Services::next) for the requests that arrive after it. Thread-safe.

#include <atomic>
#include <memory>

#include "pipeline/attempt_loop.hpp"

namespace tollgate::pipeline {

class LiveServices {
 public:
  /// `first` must not be null.
  explicit LiveServices(std::shared_ptr<Services> first) : current_(std::move(first)) {}
  /// The snapshot in force (never null).
  std::shared_ptr<Services> current() const { return current_.load(std::memory_order_acquire); }
  /// Installs `next` (not null) for every request that arrives from now on.
  void install(std::shared_ptr<Services> next) { current_.store(std::move(next), std::memory_order_release); }

 private:
  std::atomic<std::shared_ptr<Services>> current_;
};

}  // namespace tollgate::pipeline
