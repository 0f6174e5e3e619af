#pragma once
/// The response cache (issue 11 §4; LiteLLM's `litellm_settings.cache`): complete answers kept
/// by request key (cache/request_key.hpp) for a ttl. Two implementations: in this process
/// (cache/local_cache.hpp) and in Redis, shared by several instances
/// (store/redis/redis_response_cache.hpp). A cache that fails is a miss, never an error.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tollgate::cache {

/// One stored answer.
struct CachedAnswer {
  std::string completion;        ///< the OpenAI `chat.completion` JSON text the client got
  std::int64_t cost_nanos = 0;   ///< what the answer cost when it was made (the cost a hit saves)
  std::int64_t stored_unix_ms = 0;  ///< when it was stored (wall clock, Unix ms): its age for s-maxage
  bool operator==(const CachedAnswer&) const = default;
};

/// CachedAnswer as stored: a JSON object {"completion": text, "cost_nanos": n, "stored_ms": n}.
std::string encode(const CachedAnswer& a);
/// The stored text back; nullopt when it is not what encode() writes.
std::optional<CachedAnswer> decode(std::string_view text);

/// Where answers are kept. Thread-safe.
class ResponseCache {
 public:
  virtual ~ResponseCache() = default;
  /// Receives the answer (nullopt: a miss, an expired entry or a cache that did not answer).
  /// Called exactly once, possibly on another thread, possibly before get() returns.
  using GetDone = std::function<void(std::optional<CachedAnswer>)>;
  virtual void get(const std::string& key, GetDone done) = 0;
  /// Stores `answer` under `key` for `ttl` (> 0), replacing what was there. Fire and forget.
  virtual void put(const std::string& key, const CachedAnswer& answer, std::chrono::seconds ttl) = 0;
  /// "local" or "redis" (logs and the span).
  virtual std::string_view type() const = 0;
};

}  // namespace tollgate::cache
