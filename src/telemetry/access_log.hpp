#pragma once
/// The access log (tollgate_settings.access_log): one JSON object per line per request, to a
/// file (appended) or to stdout, written by spdlog's asynchronous logger from its own thread: a
/// full queue drops the oldest line rather than blocking a request. The pipeline renders the line
/// (pipeline/access_line.hpp); this sink only writes it. Never holds an API key or prompt text:
/// the caller passes only what may be logged.

#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace tollgate::telemetry {

/// Where access lines go.
class AccessLog {
 public:
  /// `target`: a file path (created and appended to), or "stdout". Throws std::runtime_error
  /// when the file cannot be opened.
  explicit AccessLog(const std::string& target);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  /// Queues one line (without its newline). Never blocks on the disk.
  void write(const std::string& line);
  /// Writes out what is queued (tests, shutdown).
  void flush();

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace tollgate::telemetry
