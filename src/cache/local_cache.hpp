#pragma once
/// `cache_params.type: local`: answers kept in this process, at most `max_entries` (the least
/// recently used goes first, LiteLLM's max_size_in_memory), each until its ttl ends on `clock`.
/// Thread-safe (one mutex, never held across a callback).

#include <cstddef>
#include <list>
#include <mutex>
#include <unordered_map>

#include "cache/response_cache.hpp"
#include "core/clock.hpp"

namespace tollgate::cache {

class LocalResponseCache final : public ResponseCache {
 public:
  LocalResponseCache(std::size_t max_entries, const core::Clock& clock);
  /// Answers at once, on the calling thread.
  void get(const std::string& key, GetDone done) override;
  void put(const std::string& key, const CachedAnswer& answer, std::chrono::seconds ttl) override;
  std::string_view type() const override { return "local"; }
  std::size_t size() const;

 private:
  struct Entry {
    CachedAnswer answer;
    core::SteadyTime expires{};
    std::list<std::string>::iterator order;
  };
  std::size_t max_entries_;
  const core::Clock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> order_;  ///< most recently used first
};

}  // namespace tollgate::cache
