#include "store/sqlite/sqlite_memory.hpp"

#include <sqlite3.h>

namespace tollgate::store {

std::uint64_t sqlite_memory_used_bytes() noexcept { return static_cast<std::uint64_t>(sqlite3_memory_used()); }

}  // namespace tollgate::store
