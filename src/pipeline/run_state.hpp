#pragma once
/// The state of one run of the attempt loop (pipeline/attempt_loop.hpp), shared by its units:
/// the walk over targets (attempt_loop.cpp), one attempt (attempt.hpp), the stream relay
/// (stream_relay.hpp), degradation (degrade.hpp) and accounting (accounting.hpp). It holds what
/// the request asked, what happened so far (the decision trace, the attempts, the cost) and what
/// is in flight; the observers (response_headers.hpp, spend_log_row.hpp, run_metrics.hpp) render
/// it. Internal to pipeline/.

#include <chrono>
#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "budget/pricing.hpp"
#include "budget/settlement.hpp"
#include "cache/stream_answer.hpp"
#include "core/error.hpp"
#include "http/client.hpp"
#include "pipeline/attempt_loop.hpp"
#include "pipeline/continuation.hpp"
#include "pipeline/trace.hpp"
#include "policy/failure.hpp"
#include "providers/provider.hpp"
#include "routing/constraints.hpp"

namespace tollgate::pipeline {

namespace net = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;
using policy::FailureClass;

/// Awaits an Asio operation without throwing: its error comes back in a tuple.
constexpr auto use_nothrow = net::as_tuple(net::use_awaitable);

/// Milliseconds from `a` to `b`.
inline long long ms_between(core::SteadyTime a, core::SteadyTime b) {
  return std::chrono::duration_cast<milliseconds>(b - a).count();
}

/// Wall-clock now, Unix nanoseconds.
inline std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Wall-clock now, Unix milliseconds.
inline std::int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// One upstream attempt as recorded for headers and logs.
struct AttemptRecord {
  std::string group;
  std::size_t deployment = 0;
  int status = 0;                      ///< upstream status, 0 for transport failures
  std::optional<FailureClass> failure; ///< nullopt = success
  long long duration_ms = 0;
  std::string span_id;               ///< the attempt's span (sent upstream in `traceparent`)
  std::int64_t start_unix_nano = 0;
  std::int64_t end_unix_nano = 0;
};

/// Why a target was not attempted: the client-facing error and a short reason for skip lists.
struct Refusal {
  core::Error error;
  std::string reason;
};

/// How one attempt ended.
struct AttemptResult {
  bool ok = false;                           ///< served (response sent or stream committed)
  providers::Usage usage;                    ///< what the upstream reported (success)
  /// What was sent and what came back: the charge follows it (budget/settlement.hpp).
  budget::Evidence evidence = budget::Evidence::not_sent;
  bool error_body = false;                   ///< an error status came with the API's JSON error body
  FailureClass failure = FailureClass::transient_provider_error;
  core::Error error;                         ///< the error as the client would see it
  std::optional<milliseconds> retry_after;   ///< upstream hint
  int status = 0;                            ///< upstream HTTP status, 0 = transport failure
  /// The upstream was silent: no response (or no content of a stream) within its time limit, or
  /// a stream that reached the client stalled past its idle limit. The walk then goes on to the
  /// group's other deployments and the fallbacks, not this one again (issue 13 §2).
  bool silent = false;
  /// A stream cut after text reached the client, left open for another target to continue
  /// (issue 13 §3): the walk's next attempts send the delivered text as an assistant prefill.
  bool cut = false;
};

/// How a whole group (its deployments and retries) ended.
struct GroupResult {
  bool ok = false;
  bool attempted = false;  ///< at least one upstream attempt was made
  FailureClass failure = FailureClass::transient_provider_error;
  std::optional<core::Error> error;
  std::optional<Refusal> refusal;  ///< the last admission refusal (set when a target was refused)
  std::string stop_reason;         ///< why the group was left (budget, deadline, Retry-After, circuit)
  bool circuit_blocked = false;    ///< a deployment was not tried because its circuit was open
  bool deadline_hit = false;       ///< the group was left because too little time was left
  bool commercial_block = false;   ///< not tried: its provider's circuit is open for a commercial limit
  /// Not tried: no deployment of the group is within the request's routing constraints (region,
  /// tags); `refusal` says which and why.
  bool constraint_blocked = false;
};

/// The output bound of the attempt in flight (what its reservation pays for).
struct AttemptBound {
  std::optional<std::int64_t> tokens;  ///< per choice; nullopt = sent as the caller asked (free or unpriced)
  bool reduced = false;                ///< a budget lowered it below what was asked
  std::string by;                      ///< the scope that did
};

/// One run's state. Not thread-safe: a run lives on one executor.
struct RunState {
  /// `call.principal` null: an anonymous caller (no auth configured).
  RunState(std::shared_ptr<Services> services, ChatCall c, ResponseSink& s);
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  std::shared_ptr<Services> svc;
  const config::Config& cfg;
  ChatCall call;
  /// The request's data boundaries (region, tags): every group it is sent to is filtered by them.
  routing::RouteConstraints constraints;
  /// Retries started after a failure of each class (router_settings.retry_policy).
  std::array<int, config::kFailureClassCount> retries_by_class{};
  ResponseSink& sink;
  core::SteadyTime deadline{};  ///< the request's deadline (set_budget)
  bool gone = false;            ///< the client hung up
  bool cut = false;             ///< the gateway's drain ran out: end now
  http::UpstreamExchange* exchange = nullptr;  ///< the upstream exchange in flight (cancelled on gone/cut)
  http::CancelToken* token = nullptr;          ///< the connect in flight
  net::steady_timer* timer = nullptr;          ///< the backoff wait in flight
  RunOutcome outcome;
  DecisionTrace trace;
  const policy::ClassTable* table = nullptr;       ///< classification table of the group being tried
  policy::Permit permit = policy::Permit::closed;  ///< circuit permit of the attempt in flight
  std::optional<std::size_t> permit_dep;           ///< its deployment, until its outcome is reported
  policy::Permit feature_permit = policy::Permit::closed;  ///< the group's feature-circuit permit
  bool caller_tightened_deadline = false;  ///< the key or request set a shorter deadline than the group's
  bool attempt_cut_by_deadline = false;    ///< the attempt in flight ends at the request deadline
  /// The key or request set a shorter first-token / stream-idle limit than the group's.
  bool caller_tightened_first_token = false;
  bool caller_tightened_idle = false;
  /// The attempt in flight ended at a stream limit the caller tightened (not the group's or the
  /// deployment's): like a caller-tightened deadline, it does not count against the circuit.
  bool attempt_cut_by_caller_limit = false;
  bool finished = false;                   ///< finish_run() ran (spend-log row written)
  budget::Nanos reserved_now = 0;          ///< reservation of the attempt in flight
  std::optional<std::size_t> served_dep;
  std::string degradation;  ///< label of a degraded answer ("reduced", ...)
  std::string caveat;
  milliseconds cache_age{0};
  /// Response cache (pipeline/cache_step.hpp): the request's key ("" = not cached), whether it was
  /// looked up and answered from the cache, what the hit saved, whether the answer is to be
  /// stored, and the answer to store (chat.completion JSON; a stream's, put back together).
  std::string cache_key;
  bool cache_looked_up = false;
  bool cache_hit = false;
  budget::Nanos cache_saved = 0;
  bool cache_store = false;
  std::string cache_answer;
  std::optional<cache::StreamAnswer> stream_answer;
  /// The client's stream across attempts, kept when a cut may be continued elsewhere
  /// (pipeline/continuation.hpp); nullopt = not tracked (not a stream, or nothing can continue).
  std::optional<ClientStream> client;
  long long upstream_ms = 0;  ///< time spent in upstream attempts
  std::optional<std::size_t> last_dep;
  std::vector<AttemptRecord> attempts;
  std::shared_ptr<const auth::Principal> principal_ptr;
  std::vector<std::pair<std::string, std::string>> skipped;  ///< fallback targets skipped: (group, reason)
  budget::Nanos cost = 0;          ///< what this request's attempts cost (settled)
  budget::Nanos cost_preview = 0;  ///< the served attempt's cost, known before it is settled
  budget::Charge charge;           ///< the served attempt's bill, line by line
  AttemptBound bound;              ///< the output bound of the attempt in flight
  std::int64_t first_byte_ms = 0;  ///< when the answer's first byte went to the client (Unix ms)
  std::string stream_status;       ///< a served stream that did not end cleanly: "failure" | "unknown_outcome"
  bool unpriced = false;
  bool unknown = false;
  providers::Usage usage;
  /// The answer's `id` and finish reasons, and with otel.capture_content its text
  /// (pipeline/response_facts.hpp): of the last attempt that answered.
  std::string response_id;
  bool first_chunk_read = false;  ///< the stream's first chunk was parsed for its id
  std::vector<std::string> finish_reasons;
  std::string captured_output_json;  ///< gen_ai.output.messages of a non-streaming answer
  std::string captured_stream_text;  ///< the first choice's streamed text
  /// The run's span: its trace (the caller's, or a new one) and its own id.
  std::string trace_id;
  std::string span_id;
  std::int64_t start_unix_nano = 0;
  /// The attempt in flight: its span id (sent upstream) and start.
  std::string attempt_span_id;
  std::int64_t attempt_start_unix_nano = 0;

  const auth::Principal& principal() const { return *principal_ptr; }
  /// Deployment `dep` as this run calls it: the config's, or for a wildcard deployment (its
  /// model_name holds `*`) a copy named after the group name it was last tried under, with its
  /// upstream_model resolved for that name (bind_deployment).
  const config::Deployment& deployment(std::size_t dep) const;
  /// Resolves a wildcard deployment for `group` (the requested name it serves); a no-op for
  /// any other deployment. Call when an attempt on `dep` starts.
  void bind_deployment(std::size_t dep, std::string_view group);
  /// The price of `dep` as this run calls it: the resolved one at start, or for a wildcard
  /// deployment without a full price override the price table's entry of its resolved model
  /// (none: unpriced, refused where a budget attaches).
  const budget::ResolvedPrice& price_of(std::size_t dep) const;
  /// The configured group serving the requested model (routing::ModelGroups::canonical): the
  /// value of every model-group metric label, so that wildcard-served names stay bounded.
  std::string metric_group;
  /// Resolved copies of wildcard deployments and their prices, by deployment index.
  std::map<std::size_t, config::Deployment> bound_deployments;
  std::map<std::size_t, budget::ResolvedPrice> bound_prices;
  /// Time left before the request's deadline (negative once past).
  milliseconds time_left() const;
  /// Whether an attempt may still start: at least min_time_left_ms is left.
  bool time_for_an_attempt() const;
  /// Trace steps: a target not attempted, and the walk's end without an answer.
  void step_skip(const std::string& group, const std::string& reason);
  void step_stop(const std::string& reason);
  /// Sets the decision on the last attempt step (what the loop does after it).
  void decide(const std::string& decision);
  /// The failure class of the last attempt that failed (empty when none did).
  std::string last_failure_class() const;
  /// Raises an operator alert (telemetry/alerts.hpp), or logs it when there is no sink.
  void alert(const std::string& kind, const std::string& subject, const std::string& message);
  /// Cancels whatever is in flight (the upstream exchange, a connect, a backoff wait).
  void cancel_in_flight();
};

}  // namespace tollgate::pipeline
