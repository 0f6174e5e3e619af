#pragma once
/// Deferred jobs (the `deferred` degradation mode, issue 4 §5): a request whose group cannot
/// serve it now is stored durably and answered 202 with a job id; the job runs through the same
/// attempt loop once the group's circuits let traffic through again; GET /v1/tollgate/jobs/{id}
/// returns its state or result. Jobs are rows in the store, so they survive a restart.

#include <expected>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "store/records.hpp"

namespace tollgate::pipeline {

/// Where the attempt loop puts a deferred request.
class JobQueue {
 public:
  virtual ~JobQueue() = default;
  /// Stores `job` (status "queued") durably; the stored record, or why it could not be stored.
  virtual boost::asio::awaitable<std::expected<store::JobRecord, std::string>> defer(store::JobRecord job) = 0;
};

}  // namespace tollgate::pipeline
