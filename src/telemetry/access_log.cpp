#include "telemetry/access_log.hpp"

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <fcntl.h>
#include <poll.h>
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

std::size_t AccessLog::write_all(std::string_view data) const {
  std::size_t done = 0;
  int waits = 0;
  while (done < data.size()) {
    const auto n = ::write(fd_, data.data() + done, data.size() - done);
    if (n >= 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && waits++ < 20) {  // a non-blocking stdout: wait, bounded
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 50);
      continue;
    }
    break;
  }
  return done;
}

void AccessLog::run() {
  std::string out;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, options_.flush_interval,
                     [this] { return stop_ || flush_wanted_ || buffer_.size() >= options_.batch_bytes; });
      flush_wanted_ = false;
      stopping = stop_;
      out.clear();
      out.swap(buffer_);  // the request path appends to a fresh buffer meanwhile
      if (!out.empty()) ++generation_;
    }
    if (!out.empty()) {
      if (cut_line_) out.insert(out.begin(), '\n');  // end the line a failed write left half-written
      const auto written = write_all(out);
      cut_line_ = false;
      if (written < out.size()) {
        const int err = errno;
        const auto rest = std::string_view(out).substr(written);
        const auto lost = static_cast<std::uint64_t>(std::count(rest.begin(), rest.end(), '\n'));
        cut_line_ = written > 0 && out[written - 1] != '\n';
        spdlog::warn("access_log: write failed ({}); {} line(s) dropped", std::strerror(err), lost);
        std::lock_guard lock(mu_);
        dropped_ += lost;
      }
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
