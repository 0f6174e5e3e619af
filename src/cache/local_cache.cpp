#include "cache/local_cache.hpp"

namespace tollgate::cache {

LocalResponseCache::LocalResponseCache(std::size_t max_entries, const core::Clock& clock)
    : max_entries_(max_entries), clock_(clock) {}

void LocalResponseCache::get(const std::string& key, GetDone done) {
  std::optional<CachedAnswer> out;
  {
    std::lock_guard lk(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      if (clock_.now() >= it->second.expires) {
        order_.erase(it->second.order);
        entries_.erase(it);
      } else {
        order_.splice(order_.begin(), order_, it->second.order);
        out = it->second.answer;
      }
    }
  }
  done(std::move(out));
}

void LocalResponseCache::put(const std::string& key, const CachedAnswer& answer, std::chrono::seconds ttl) {
  if (max_entries_ == 0 || ttl.count() <= 0) return;
  std::lock_guard lk(mu_);
  const auto expires = clock_.now() + ttl;
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second.answer = answer;
    it->second.expires = expires;
    order_.splice(order_.begin(), order_, it->second.order);
    return;
  }
  while (entries_.size() >= max_entries_ && !order_.empty()) {
    entries_.erase(order_.back());
    order_.pop_back();
  }
  order_.push_front(key);
  entries_.emplace(key, Entry{answer, expires, order_.begin()});
}

std::size_t LocalResponseCache::size() const {
  std::lock_guard lk(mu_);
  return entries_.size();
}

}  // namespace tollgate::cache
