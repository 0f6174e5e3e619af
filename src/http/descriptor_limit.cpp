#include "http/descriptor_limit.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace tollgate::http {

namespace {
std::uint64_t nr_open() {
  std::ifstream f("/proc/sys/fs/nr_open");
  std::uint64_t n = 0;
  if (f >> n && n > 0) return n;
  return 1048576;
}
}  // namespace

DescriptorLimit raise_descriptor_limit() {
  DescriptorLimit out;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    out.error = std::strerror(errno);
    return out;
  }
  out.soft_before = out.soft = rl.rlim_cur;
  out.hard = rl.rlim_max == RLIM_INFINITY ? nr_open() : rl.rlim_max;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= out.hard) return out;
  if (rl.rlim_cur == RLIM_INFINITY) {
    out.soft_before = out.soft = out.hard;
    return out;
  }
  rlimit raised = rl;
  raised.rlim_cur = out.hard;
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    out.error = std::strerror(errno);
    return out;
  }
  out.soft = out.hard;
  return out;
}

std::uint64_t descriptor_reserve(std::uint64_t limit) { return std::max<std::uint64_t>(256, limit / 4); }

std::uint64_t minimum_descriptor_reserve(std::uint64_t limit) { return std::min<std::uint64_t>(128, limit / 2); }

ConnectionLimit resolve_max_connections(std::int64_t configured, std::uint64_t limit) {
  ConnectionLimit out;
  if (configured <= 0) {
    const auto reserve = descriptor_reserve(limit);
    const auto n = limit > reserve ? limit - reserve : limit / 2;
    out.max_connections = static_cast<std::size_t>(std::max<std::uint64_t>(1, n));
    return out;
  }
  const auto ceiling = std::max<std::uint64_t>(1, limit - minimum_descriptor_reserve(limit));
  if (static_cast<std::uint64_t>(configured) <= ceiling) {
    out.max_connections = static_cast<std::size_t>(configured);
    return out;
  }
  out.max_connections = static_cast<std::size_t>(ceiling);
  out.warning = "tollgate_settings.max_connections " + std::to_string(configured) +
                " exceeds what the descriptor limit " + std::to_string(limit) + " allows (it must leave " +
                std::to_string(minimum_descriptor_reserve(limit)) + " for upstream calls, the store and logs): using " +
                std::to_string(ceiling);
  return out;
}

}  // namespace tollgate::http
