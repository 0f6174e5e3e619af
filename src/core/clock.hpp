#pragma once
/// Clocks: the real steady clock, and a manual clock for tests (no sleeps in unit tests).

#include <atomic>
#include <chrono>

namespace tollgate::core {

using SteadyTime = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

/// Source of monotonic time. Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime now() const = 0;
};

/// std::chrono::steady_clock.
class SystemClock final : public Clock {
 public:
  SteadyTime now() const override { return std::chrono::steady_clock::now(); }
  /// A process-wide instance.
  static const SystemClock& instance() {
    static const SystemClock clock;
    return clock;
  }
};

/// A clock that moves only when told to; starts at an arbitrary fixed point.
class ManualClock final : public Clock {
 public:
  SteadyTime now() const override { return SteadyTime(std::chrono::nanoseconds(ns_.load())); }
  void advance(std::chrono::nanoseconds d) { ns_ += d.count(); }

 private:
  std::atomic<long long> ns_{3'600'000'000'000'000LL};  // 1000 h, far from zero
};

}  // namespace tollgate::core
