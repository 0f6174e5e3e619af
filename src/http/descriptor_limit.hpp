#pragma once
/// The process's descriptor limit (RLIMIT_NOFILE) and the client connection limit derived from
/// it (docs/operations.md "Connection limits"). No Asio: plain POSIX.

#include <cstddef>
#include <cstdint>
#include <string>

namespace tollgate::http {

/// RLIMIT_NOFILE before and after raise_descriptor_limit(), in descriptors.
struct DescriptorLimit {
  std::uint64_t soft_before = 0;  ///< the soft limit the process started with
  std::uint64_t soft = 0;         ///< the soft limit now (the hard one when it could be raised)
  std::uint64_t hard = 0;         ///< the hard limit (RLIM_INFINITY reported as the kernel's nr_open)
  std::string error;              ///< why the soft limit could not be raised; empty when it was
};

/// Raises RLIMIT_NOFILE's soft limit to its hard limit (an unlimited hard limit: to
/// /proc/sys/fs/nr_open, else 1048576). Call once at start, before threads open descriptors.
DescriptorLimit raise_descriptor_limit();

/// Descriptors kept back from client connections for everything else the process opens:
/// upstream pools, the store, Redis/PostgreSQL, listeners, logs. max(256, limit / 4).
std::uint64_t descriptor_reserve(std::uint64_t limit);

/// The least reserve an explicit max_connections must leave: 128 descriptors (or half of a
/// tiny limit).
std::uint64_t minimum_descriptor_reserve(std::uint64_t limit);

/// The client connection limit in force and, when the configured one was lowered, why.
struct ConnectionLimit {
  std::size_t max_connections = 1;
  std::string warning;  ///< non-empty: the configured value was clamped
};

/// `configured` is tollgate_settings.max_connections (0 = unset). Unset: limit −
/// descriptor_reserve(limit), or limit / 2 when that leaves nothing (a limit of 256 or less),
/// at least 1. Set: kept when it leaves minimum_descriptor_reserve(limit); else clamped to
/// limit − minimum_descriptor_reserve(limit), with a warning.
ConnectionLimit resolve_max_connections(std::int64_t configured, std::uint64_t descriptor_limit);

}  // namespace tollgate::http
