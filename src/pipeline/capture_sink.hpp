#pragma once
/// A ResponseSink with no client behind it: keeps what the attempt loop answered, for the runs
/// the gateway starts itself (deferred jobs, pipeline/job_runner.hpp; health checks,
/// pipeline/health_checks.hpp). A stream is accepted and dropped (those runs are non-streaming).

#include <functional>
#include <optional>
#include <string>

#include "pipeline/sink.hpp"

namespace tollgate::pipeline {

/// `{"error":{"message","type","code","status"}}` for `e` (what a failed job shows).
std::string captured_error_body(const core::Error& e);

class CaptureSink final : public ResponseSink {
 public:
  /// `shutdown_slot`: where the run's shutdown hook is kept, so that its owner can cut the run
  /// (JobRunner::stop, HealthChecks::stop); null = the hook is dropped.
  explicit CaptureSink(std::function<void()>* shutdown_slot = nullptr) : shutdown_slot_(shutdown_slot) {}
  boost::asio::awaitable<bool> send_completion(const boost::json::object& completion, std::string raw,
                                               const Headers& headers) override;
  boost::asio::awaitable<bool> send_json(int status, std::string body, const Headers& headers) override;
  boost::asio::awaitable<bool> send_error(const core::Error& e, const Headers& headers) override;
  boost::asio::awaitable<bool> begin_stream(const Headers&) override { co_return true; }
  boost::asio::awaitable<bool> stream_chunks(const std::vector<std::string>&, const providers::Usage&) override {
    co_return true;
  }
  boost::asio::awaitable<bool> end_stream(const std::optional<core::Error>&) override { co_return true; }
  void on_client_gone(std::function<void()>) override {}
  bool client_gone() const override { return false; }
  void on_shutdown(std::function<void()> fn) override {
    if (shutdown_slot_) *shutdown_slot_ = std::move(fn);
  }

  std::string result;                 ///< the completion's JSON (success)
  std::string error;                  ///< the error body (captured_error_body) or the JSON answer
  int status = 0;                     ///< the error's / JSON answer's status; 0 = a completion
  std::optional<core::Error> failure; ///< the error itself, when the run failed

 private:
  std::function<void()>* shutdown_slot_;
};

}  // namespace tollgate::pipeline
