#pragma once
/// The `stale_cache` degradation mode's store (issue 4 §5): the last successful answer to an
/// identical request, kept in memory, bounded by entry count and bytes (least recently stored
/// entries go first). Served only as a labeled degraded answer, never as a normal one. Keyed by
/// the response cache's request key (cache/request_key.hpp; pipeline/request_body.hpp).
/// Thread-safe (one mutex).

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/clock.hpp"

namespace tollgate::policy {

using std::chrono::milliseconds;

class StaleCache {
 public:
  explicit StaleCache(std::size_t max_entries = 10000, std::size_t max_bytes = 64u << 20);

  /// Stores (or replaces) the answer `body` (an OpenAI chat.completion JSON text) for `key`.
  void put(const std::string& key, std::string body, core::SteadyTime now);

  struct Hit {
    std::string body;
    milliseconds age{0};
  };
  /// The stored answer for `key` if it is at most `max_age` old.
  std::optional<Hit> get(const std::string& key, milliseconds max_age, core::SteadyTime now) const;

  std::size_t size() const;

 private:
  struct Entry {
    std::string body;
    core::SteadyTime stored{};
    std::list<std::string>::iterator order;
  };
  std::size_t max_entries_;
  std::size_t max_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> order_;  ///< oldest stored first
  std::size_t bytes_ = 0;
};

}  // namespace tollgate::policy
