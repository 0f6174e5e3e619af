#include "core/thread_log.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>

namespace tollgate::core {

namespace {

thread_local bool muted = false;

class MuteableSink final : public spdlog::sinks::sink {
 public:
  explicit MuteableSink(std::shared_ptr<spdlog::sinks::sink> inner) : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    if (!muted) inner_->log(msg);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::sink> inner_;
};

}  // namespace

bool thread_logs_muted() noexcept { return muted; }

ThreadLogMute::ThreadLogMute() noexcept : previous_(muted) { muted = true; }
ThreadLogMute::~ThreadLogMute() { muted = previous_; }

std::shared_ptr<spdlog::sinks::sink> muteable_sink(std::shared_ptr<spdlog::sinks::sink> inner) {
  return std::make_shared<MuteableSink>(std::move(inner));
}

}  // namespace tollgate::core
