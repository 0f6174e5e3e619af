#pragma once
/// The heap SQLite holds in this process (page caches of every connection, schemas, prepared
/// statements): sqlite3_memory_used(), process-wide, in bytes. For /metrics
/// (`tollgate_heap_bytes{state="store"}`), to tell the database's caches from the gateway's own heap.

#include <cstdint>

namespace tollgate::store {

/// Bytes currently allocated by SQLite in this process. Thread-safe; never fails.
std::uint64_t sqlite_memory_used_bytes() noexcept;

}  // namespace tollgate::store
