#include "core/ids.hpp"

#include <array>

namespace tollgate::core {

std::mt19937_64& thread_rng() {
  thread_local std::mt19937_64 rng{[] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }()};
  return rng;
}

std::string new_uuid() {
  auto& rng = thread_rng();
  std::uint64_t a = rng(), b = rng();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  auto put = [&](std::uint64_t v, int nibbles) {
    for (int i = nibbles - 1; i >= 0; --i) out.push_back(hex[(v >> (i * 4)) & 0xf]);
  };
  put(a >> 32, 8);
  out.push_back('-');
  put((a >> 16) & 0xffff, 4);
  out.push_back('-');
  put(a & 0xffff, 4);
  out.push_back('-');
  put(b >> 48, 4);
  out.push_back('-');
  put(b & 0xffffffffffffULL, 12);
  return out;
}

double uniform01() {
  return std::uniform_real_distribution<double>(0.0, 1.0)(thread_rng());
}

}  // namespace tollgate::core
