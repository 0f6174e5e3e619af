#pragma once
/// LiteLLM's model health checks (docs.litellm.ai/docs/proxy/health, `GET /health`): one round
/// sends each deployment a cheap request chosen by its `model_info.mode` and sorts the
/// deployments into healthy and unhealthy endpoints. Every call is an ordinary run of the one
/// attempt loop pinned to its deployment (ChatCall::pin: no retry, no fallback, no cache, no
/// degradation), so it is admitted against the budgets that apply (the global one), reserved,
/// settled, spend-logged with call_type "health_check", and its outcome feeds the deployment's
/// circuit exactly as a client's attempt would. docs/health_checks.md.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "pipeline/attempt_loop.hpp"

namespace tollgate::pipeline {

/// What one deployment's check found.
struct EndpointHealth {
  std::size_t deployment = 0;  ///< Config::model_list index
  bool healthy = false;
  std::string error;           ///< unhealthy: the error's message (no secrets: it is the gateway's or the upstream's)
};

/// One round's result, over the config it ran on.
struct HealthReport {
  std::shared_ptr<const config::Config> config;  ///< the snapshot the round ran on (renders the endpoints)
  std::vector<EndpointHealth> endpoints;         ///< checked deployments, in model_list order
  /// Deployments not called: a mode without a health request (embedding until /v1/embeddings
  /// exists, image_generation, …) or a wildcard deployment (no concrete model to call).
  std::vector<std::size_t> skipped;
  std::int64_t finished_unix_ms = 0;             ///< when the round ended (0 = no round yet)
};

/// Cuts the checks of a round in flight (shutdown): each run ends at once, its reservation
/// settled by its evidence. Lives on the round's executor; call cut() there.
class HealthRoundControl {
 public:
  /// One slot per check: where its run's shutdown hook is kept (CaptureSink's slot).
  std::function<void()>* slot() { return &slots_.emplace_back(); }
  void cut() {
    for (auto& f : slots_)
      if (f) f();
  }

 private:
  std::deque<std::function<void()>> slots_;
};

/// Whether `d` gets a health request (its mode has one and it names a concrete model).
bool health_checkable(const config::Deployment& d);

/// The request body a health check sends `d` (OpenAI chat shape): one short user message with
/// `max_tokens` 1, LiteLLM's cheap request for mode `chat`.
boost::json::object health_request_body(const config::Deployment& d);

/// Runs one round over the deployments of `group` (every group when empty), concurrently on
/// the calling coroutine's executor (which must have an upstream pool: a worker thread, or the
/// health monitor's own). Each call is bounded by model_info.health_check_timeout, else
/// general_settings.health_check_timeout. `control` (optional) lets the caller cut the round.
boost::asio::awaitable<HealthReport> run_health_round(std::shared_ptr<Services> services, std::string group,
                                                      std::shared_ptr<HealthRoundControl> control = nullptr);

/// LiteLLM's `GET /health` body for `report`, limited to `group` when not empty:
/// {"healthy_endpoints":[{"model","api_base","model_name","model_id",…}],
///  "unhealthy_endpoints":[{…,"error"}],"healthy_count":n,"unhealthy_count":m}
/// (plus "skipped_endpoints" with each one's reason). API keys and cloud credentials are never
/// printed: an endpoint shows only the model, base, version and ids.
std::string health_report_json(const HealthReport& report, std::string_view group);

}  // namespace tollgate::pipeline
