#include "store/redis/redis_response_cache.hpp"

#include <spdlog/spdlog.h>

namespace tollgate::store::redis {

RedisResponseCache::RedisResponseCache(std::shared_ptr<RedisClient> client, std::string prefix)
    : client_(std::move(client)), prefix_(std::move(prefix) + "cache:") {}

void RedisResponseCache::get(const std::string& key, GetDone done) {
  client_->submit({"GET", prefix_ + key}, [done = std::move(done)](ReplyResult r) {
    if (!r) {
      spdlog::debug("response cache: GET failed: {}", r.error().message);
      done(std::nullopt);
      return;
    }
    if (r->type != Reply::Type::string) {
      done(std::nullopt);
      return;
    }
    done(cache::decode(r->str));
  });
}

void RedisResponseCache::put(const std::string& key, const cache::CachedAnswer& answer, std::chrono::seconds ttl) {
  if (ttl.count() <= 0) return;
  client_->submit({"SET", prefix_ + key, cache::encode(answer), "EX", std::to_string(ttl.count())}, [](ReplyResult r) {
    if (!r) spdlog::debug("response cache: SET failed: {}", r.error().message);
    else if (r->type == Reply::Type::error) spdlog::debug("response cache: SET refused: {}", r->str);
  });
}

}  // namespace tollgate::store::redis
