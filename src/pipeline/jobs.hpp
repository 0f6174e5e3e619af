#pragma once
/// Deferred jobs (the `deferred` degradation mode, issue 4 §5): a request whose group cannot
/// serve it now is stored durably and answered 202 with a job id; the job runs through the same
/// attempt loop once the group's circuits let traffic through again; GET /v1/tollgate/jobs/{id}
/// returns its state or result. Jobs are rows in the store, so they survive a restart.

#include <expected>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "core/clock.hpp"
#include "store/records.hpp"

namespace tollgate::pipeline {

/// Why a request was not deferred (then its job never exists).
struct DeferRefused {
  enum class Why {
    unavailable,  ///< the job could not be stored (no store, store error, deadline)
    queue_full,   ///< the key has tollgate_settings.max_queued_jobs_per_key jobs queued or running
  } why = Why::unavailable;
  std::string message;  ///< says why, for the trace and the client's error
};

/// Where the attempt loop puts a deferred request.
class JobQueue {
 public:
  virtual ~JobQueue() = default;
  /// Stores `job` (status "queued") durably before `deadline`; the stored record, or why it was
  /// not stored (then it never runs).
  virtual boost::asio::awaitable<std::expected<store::JobRecord, DeferRefused>> defer(store::JobRecord job,
                                                                                    core::SteadyTime deadline) = 0;
};

/// A job's public JSON, the body of the 202 that defers it and of GET /v1/tollgate/jobs/{id}:
/// {"id", "object": "tollgate.job", "status": "queued"|"running"|"succeeded"|"failed", "model",
/// "created" (unix s), "updated" (unix s), "attempts", "result": the chat.completion (succeeded)
/// or null, "error": the error object (failed) or null, "request_id": the spend-log id of the run
/// that completed it or null, "url": where to poll}; with `reason` non-empty (the 202) also
/// "degradation": "deferred" and "reason".
std::string job_json(const store::JobRecord& job, std::string_view reason = {});

}  // namespace tollgate::pipeline
