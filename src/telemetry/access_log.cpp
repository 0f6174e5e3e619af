#include "telemetry/access_log.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "telemetry/metrics.hpp"

namespace tollgate::telemetry {

AccessLog::AccessLog(const std::string& target, AccessLogOptions options) : options_(options) {
  if (target == "stdout") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = ::open(target.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd_ < 0) throw std::runtime_error("access_log: cannot open " + target + ": " + std::strerror(errno));
    owns_fd_ = true;
  }
  thread_ = std::thread([this] { run(); });
}

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  if (owns_fd_) ::close(fd_);
}

void AccessLog::write(std::string_view line) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (buffer_.size() + line.size() + 1 > options_.max_buffered_bytes) {
      ++dropped_;
      return;
    }
    const bool below = buffer_.size() < options_.batch_bytes;
    buffer_.append(line);
    buffer_.push_back('\n');
    ++buffered_lines_;
    wake = below && buffer_.size() >= options_.batch_bytes;  // woken once per batch, not per line
  }
  if (wake) wake_.notify_one();
}

void AccessLog::flush() {
  std::unique_lock lock(mu_);
  const auto want = generation_ + (buffer_.empty() ? 0 : 1);
  flush_wanted_ = true;
  wake_.notify_one();
  written_.wait(lock, [&] { return done_ >= want || stop_; });
}

std::uint64_t AccessLog::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void AccessLog::register_metrics(Registry& registry) const {
  registry.on_collect([this](Exposition& out) {
    out.begin("tollgate_access_log_lines_dropped_total",
              "Access-log lines dropped: the buffer was full or the file refused the write", MetricType::counter);
    out.sample("tollgate_access_log_lines_dropped_total", {}, static_cast<double>(dropped()));
  });
}

bool AccessLog::write_all(std::string_view data) const {
  while (!data.empty()) {
    const auto n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void AccessLog::run() {
  std::string out;
  for (;;) {
    std::size_t lines = 0;
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, options_.flush_interval,
                     [this] { return stop_ || flush_wanted_ || buffer_.size() >= options_.batch_bytes; });
      flush_wanted_ = false;
      stopping = stop_;
      out.clear();
      out.swap(buffer_);  // the request path appends to a fresh buffer meanwhile
      lines = buffered_lines_;
      buffered_lines_ = 0;
      if (!out.empty()) ++generation_;
    }
    if (!out.empty() && !write_all(out)) {
      spdlog::warn("access_log: write failed ({}); {} line(s) dropped", std::strerror(errno), lines);
      std::lock_guard lock(mu_);
      dropped_ += lines;
    }
    {
      std::lock_guard lock(mu_);
      done_ = generation_;
    }
    written_.notify_all();
    if (stopping) return;
  }
}

}  // namespace tollgate::telemetry
