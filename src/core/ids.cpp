#include "core/ids.hpp"

#include <array>
#include <chrono>

namespace tollgate::core {

std::mt19937_64& thread_rng() {
  thread_local std::mt19937_64 rng{[] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }()};
  return rng;
}

std::string new_uuid() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
  auto& rng = thread_rng();
  // RFC 9562 section 5.7: unix_ts_ms (48 bits), ver 0111, rand_a (12 bits); var 10, rand_b (62 bits).
  const std::uint64_t a = ((ms & 0xffffffffffffULL) << 16) | 0x7000ULL | (rng() & 0x0fffULL);
  const std::uint64_t b = (rng() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.resize_and_overwrite(36, [&](char* p, std::size_t) {
    auto put = [&p](std::uint64_t v, int nibbles) {
      for (int i = nibbles - 1; i >= 0; --i) *p++ = hex[(v >> (i * 4)) & 0xf];
    };
    put(a >> 32, 8);
    *p++ = '-';
    put((a >> 16) & 0xffff, 4);
    *p++ = '-';
    put(a & 0xffff, 4);
    *p++ = '-';
    put(b >> 48, 4);
    *p++ = '-';
    put(b & 0xffffffffffffULL, 12);
    return std::size_t{36};
  });
  return out;
}

double uniform01() {
  return std::uniform_real_distribution<double>(0.0, 1.0)(thread_rng());
}

}  // namespace tollgate::core
