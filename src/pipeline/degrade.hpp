#pragma once
/// Degradation of one run (issue 4 §5, docs/failure_policy.md): when nothing served the request
/// within its budgets, the group's mode answers explicitly and labeled: an equivalent or reduced
/// model group (through the walk's own try_group), a stale cached answer, a deferred job, or a
/// fail-fast error. Internal to pipeline/.

#include <functional>
#include <optional>
#include <string>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// The walk's attempt at one group (attempt_loop.cpp's try_group): (group, is_fallback,
/// counts_as_fallback, the group's result written).
using TryGroup = std::function<net::awaitable<void>(std::string, bool, bool, GroupResult&)>;

/// Degradation modes of one run.
class Degrader {
 public:
  Degrader(RunState& st, TryGroup try_group) : st_(st), try_group_(std::move(try_group)) {}
  Degrader(const Degrader&) = delete;
  Degrader& operator=(const Degrader&) = delete;

  /// Runs the group's degradation mode (issue 4 §5). `why` says what led here; `error` is the
  /// error the client gets when the mode cannot answer either.
  net::awaitable<void> degrade(const config::DegradationConfig& dc, std::string why, std::optional<core::Error> error);

 private:
  /// The reduced mode's output cap: the caller's limit for every later attempt (admission then
  /// plans and writes the bound from it; one field, as OpenAI refuses a request that sets both).
  void cap_output_tokens(std::int64_t cap);

  static std::optional<json::object> parse_completion(const std::string& text);

  RunState& st_;
  TryGroup try_group_;
};

}  // namespace tollgate::pipeline
