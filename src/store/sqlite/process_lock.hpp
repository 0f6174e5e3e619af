#pragma once
/// One process per SQLite database (issue 9 §1): the gateway that serves a database holds an
/// exclusive advisory lock on `<database>.lock` (flock(2), released by the kernel when the process
/// ends, also on SIGKILL) and writes its pid there, so a second gateway on the same file is
/// refused at start instead of settling the first one's live reservations. Readers that do not
/// serve (`tollgate explain`) do not take it.

#include <string>
#include <sys/types.h>

#include "store/store.hpp"

namespace tollgate::store::sqlite {

/// A held lock; movable, not copyable; released (file closed) on destruction. The lock file is
/// left in place (removing it would race with the next holder).
class ProcessLock {
 public:
  ProcessLock() = default;
  ProcessLock(ProcessLock&& other) noexcept;
  ProcessLock& operator=(ProcessLock&& other) noexcept;
  ProcessLock(const ProcessLock&) = delete;
  ProcessLock& operator=(const ProcessLock&) = delete;
  ~ProcessLock();

  /// Locks `database_path + ".lock"` without waiting. Errors: `unavailable` when another process
  /// holds it — the message names the database and that process's pid ("... is in use by another
  /// tollgate process (pid 1234) ...") — or when the lock file cannot be created.
  static StoreResult<ProcessLock> acquire(const std::string& database_path);

  /// The lock file's path (empty when nothing is held).
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace tollgate::store::sqlite
