#pragma once
/// LiteLLM's `GET /health` (docs.litellm.ai/docs/proxy/health): the health of each deployment,
/// from a round of health checks (pipeline/health_checks.hpp) run now, or, with
/// `general_settings.background_health_checks`, the background monitor's last round.
/// `?model=<group>` limits the answer (and a round run now) to that model group.

#include <memory>

#include <boost/asio/awaitable.hpp>

#include "auth/principal.hpp"
#include "http/server.hpp"
#include "pipeline/health_monitor.hpp"

namespace tollgate::api {

/// Answers GET /health for `principal` (already authenticated): 401 unless the master key (or
/// no master key is configured), 400 for an unknown `model`, else 200 with
/// pipeline::health_report_json. `monitor` may be null (no background checks). A drain cut
/// ends the round's calls at once; the answer then lists them as unhealthy.
boost::asio::awaitable<void> model_health(std::shared_ptr<pipeline::Services> services, const http::Request& req,
                                          http::ResponseWriter& w, const auth::Principal& principal,
                                          std::shared_ptr<pipeline::HealthMonitor> monitor);

}  // namespace tollgate::api
