#include "policy/stale_cache.hpp"

#include <algorithm>

namespace tollgate::policy {

StaleCache::StaleCache(std::size_t max_entries, std::size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

void StaleCache::put(const std::string& key, std::string body, core::SteadyTime now) {
  std::lock_guard lk(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    bytes_ -= key.size() + it->second.body.size();
    order_.erase(it->second.order);
    entries_.erase(it);
  }
  const std::size_t need = key.size() + body.size();
  if (max_entries_ == 0 || need > max_bytes_) return;  // could never fit
  while (!order_.empty() && (entries_.size() + 1 > max_entries_ || bytes_ + need > max_bytes_)) {
    auto old = entries_.find(order_.front());
    bytes_ -= old->first.size() + old->second.body.size();
    entries_.erase(old);
    order_.pop_front();
  }
  order_.push_back(key);
  bytes_ += need;
  entries_.emplace(key, Entry{std::move(body), now, std::prev(order_.end())});
}

std::optional<StaleCache::Hit> StaleCache::get(const std::string& key, milliseconds max_age, core::SteadyTime now) const {
  std::lock_guard lk(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  const auto age = std::max(milliseconds{0}, std::chrono::duration_cast<milliseconds>(now - it->second.stored));
  if (now - it->second.stored > max_age) return std::nullopt;
  return Hit{it->second.body, age};
}

std::size_t StaleCache::size() const {
  std::lock_guard lk(mu_);
  return entries_.size();
}

}  // namespace tollgate::policy
