#pragma once
/// `cache_params.type: redis`: the response cache (cache/response_cache.hpp) in a Redis server
/// several gateway instances share, through the project's Redis client
/// (store/redis/redis_client.hpp). An entry is one string key `<prefix>cache:<request key>` holding
/// cache::encode(answer), written with `SET key value EX ttl`, read with `GET`. A command that
/// fails (server down, timeout) is a miss or a lost store, logged at debug level: the cache never
/// fails a request.

#include <memory>
#include <string>

#include "cache/response_cache.hpp"
#include "store/redis/redis_client.hpp"

namespace tollgate::store::redis {

class RedisResponseCache final : public cache::ResponseCache {
 public:
  /// `prefix` (tollgate_settings.redis_key_prefix) keeps the cache apart from the ledger's keys.
  RedisResponseCache(std::shared_ptr<RedisClient> client, std::string prefix);
  /// `done` runs on the client's thread (or on this thread's attached connection).
  void get(const std::string& key, GetDone done) override;
  void put(const std::string& key, const cache::CachedAnswer& answer, std::chrono::seconds ttl) override;
  std::string_view type() const override { return "redis"; }

 private:
  std::shared_ptr<RedisClient> client_;
  std::string prefix_;
};

}  // namespace tollgate::store::redis
