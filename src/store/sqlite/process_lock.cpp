#include "store/sqlite/process_lock.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <string_view>
#include <utility>

namespace tollgate::store::sqlite {

namespace {

StoreError lock_error(std::string message) {
  StoreError e;
  e.code = StoreErrorCode::unavailable;
  e.message = std::move(message);
  e.field = "database_url";
  return e;
}

/// The pid the holder wrote, or empty when the file holds none.
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return {};
  std::string_view s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  for (char c : s)
    if (c < '0' || c > '9') return {};
  return std::string(s);
}

}  // namespace

ProcessLock::ProcessLock(ProcessLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

ProcessLock& ProcessLock::operator=(ProcessLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

ProcessLock::~ProcessLock() {
  if (fd_ >= 0) ::close(fd_);
}

StoreResult<ProcessLock> ProcessLock::acquire(const std::string& database_path) {
  ProcessLock lock;
  lock.path_ = database_path + ".lock";
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock.fd_ < 0)
    return std::unexpected(lock_error("cannot create the lock file " + lock.path_ + ": " + std::strerror(errno)));
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK)
      return std::unexpected(lock_error("cannot lock " + lock.path_ + ": " + std::strerror(err)));
    const std::string pid = holder_pid(lock.fd_);
    return std::unexpected(lock_error("the database " + database_path + " is in use by another tollgate process" +
                                      (pid.empty() ? std::string() : " (pid " + pid + ")") +
                                      "; one process serves a SQLite database"));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock.fd_, 0) != 0 || ::pwrite(lock.fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return std::unexpected(lock_error("cannot write the lock file " + lock.path_ + ": " + std::strerror(errno)));
  return lock;
}

}  // namespace tollgate::store::sqlite
