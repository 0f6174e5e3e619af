#include "store/latency_samples.hpp"

#include <algorithm>

namespace tollgate::store {

void LatencySamples::add(std::int64_t us) {
  if (samples_.empty()) samples_.resize(kRing);
  samples_[count_++ % kRing] = us;
}

void LatencySamples::fill(WriterStats& s) const {
  const std::size_t n = std::min<std::size_t>(count_, kRing);
  if (n == 0) return;
  std::vector<std::int64_t> v(samples_.begin(), samples_.begin() + static_cast<std::ptrdiff_t>(n));
  auto pct = [&](double p) {
    std::size_t k = std::min(n - 1, static_cast<std::size_t>(p * static_cast<double>(n - 1) + 0.5));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  };
  s.p50_us = pct(0.50);
  s.p99_us = pct(0.99);
  s.max_us = *std::max_element(v.begin(), v.end());
}

}  // namespace tollgate::store
