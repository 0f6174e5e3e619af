#include "telemetry/access_log.hpp"

#include <atomic>
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace tollgate::telemetry {
namespace {

/// The queue access lines wait in: 8192 lines, one writer thread, shared by every AccessLog.
std::shared_ptr<spdlog::details::thread_pool> pool() {
  static auto p = std::make_shared<spdlog::details::thread_pool>(8192, 1);
  return p;
}

std::string logger_name() {
  static std::atomic<int> n{0};
  return "tollgate-access-" + std::to_string(n++);
}

}  // namespace

AccessLog::AccessLog(const std::string& target) {
  spdlog::sink_ptr sink;
  try {
    if (target == "stdout") sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
    else sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(target, false);
  } catch (const spdlog::spdlog_ex& e) {
    throw std::runtime_error("access_log: cannot open " + target + ": " + e.what());
  }
  sink->set_pattern("%v");
  logger_ = std::make_shared<spdlog::async_logger>(logger_name(), std::move(sink), pool(),
                                                   spdlog::async_overflow_policy::overrun_oldest);
  logger_->set_level(spdlog::level::info);
  logger_->flush_on(spdlog::level::info);  // each line reaches the file from the writer thread
}

AccessLog::~AccessLog() { flush(); }

void AccessLog::write(const std::string& line) { logger_->info(line); }

void AccessLog::flush() { logger_->flush(); }

}  // namespace tollgate::telemetry
