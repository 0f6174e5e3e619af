#pragma once
/// The access log (tollgate_settings.access_log): one JSON object per line per request, to a
/// file (appended) or to stdout. A request only appends its line to a memory buffer; a thread of
/// the log's own writes the buffer out with one write(2) every `flush_interval` (or as soon as
/// it holds `batch_bytes`), so a request never waits for the disk or for a thread switch. A full
/// buffer (`max_buffered_bytes`, the disk too slow or stuck) drops the new lines and counts them
/// (`tollgate_access_log_lines_dropped_total`). The pipeline renders the line
/// (pipeline/access_line.hpp); this sink only writes it. Never holds an API key or prompt text:
/// the caller passes only what may be logged.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace tollgate::telemetry {

class Registry;

/// How the access log buffers.
struct AccessLogOptions {
  std::chrono::milliseconds flush_interval{200};  ///< a line reaches the file at most this late
  std::size_t batch_bytes = 64 * 1024;            ///< the writer is woken early at this much
  std::size_t max_buffered_bytes = 16 * 1024 * 1024;  ///< beyond it new lines are dropped
};

/// Where access lines go. Thread-safe.
class AccessLog {
 public:
  /// `target`: a file path (created and appended to), or "stdout". Throws std::runtime_error
  /// when the file cannot be opened.
  explicit AccessLog(const std::string& target, AccessLogOptions options = {});
  /// Writes out what is buffered, then stops the writer thread.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  /// Buffers one line (without its newline). Never blocks on the disk.
  void write(std::string_view line);
  /// Returns once every line buffered before the call was written (tests, shutdown).
  void flush();
  /// Lines dropped because the buffer was full, or because the file refused the write.
  [[nodiscard]] std::uint64_t dropped() const;
  /// Exposes tollgate_access_log_lines_dropped_total. This log must outlive the registry's last
  /// render().
  void register_metrics(Registry& registry) const;

 private:
  void run();
  /// Writes `data` to the descriptor (retrying EINTR, waiting a little on EAGAIN); returns the
  /// bytes written: all of them unless the file refused the rest.
  std::size_t write_all(std::string_view data) const;

  AccessLogOptions options_;
  int fd_ = -1;
  bool owns_fd_ = false;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable written_;
  std::string buffer_;
  std::uint64_t generation_ = 0;  ///< buffers handed to the writer so far
  std::uint64_t done_ = 0;        ///< buffers the writer finished
  bool flush_wanted_ = false;
  bool stop_ = false;
  std::uint64_t dropped_ = 0;
  bool cut_line_ = false;  ///< the writer thread's: the last write stopped inside a line
  std::thread thread_;
};

}  // namespace tollgate::telemetry
