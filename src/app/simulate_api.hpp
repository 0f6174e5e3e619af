#pragma once
/// POST /tollgate/simulate's runner (AdminDeps::simulate): simulate::run_texts — the function
/// `tollgate simulate` runs — over the body's texts, sandboxed (a pasted config reads neither the
/// environment nor files; simulate/run_texts.hpp) and bounded (api/admin_ui.hpp: at most
/// kMaxSimulatedRequests requests, retry and fallback budgets capped at kMaxSimulatedRetries).
/// The run's own log lines (circuit transitions, alerts of the simulated gateway) are muted on
/// the calling thread (core/thread_log.hpp): they are not the running gateway's.

#include <optional>
#include <string>

#include "api/admin.hpp"
#include "pipeline/live_services.hpp"

namespace tollgate::app {

/// Runs `scenario` against `config` (nullopt: the live config of `live`). Throws
/// std::runtime_error for a fault of the simulator itself.
api::SimulateAnswer simulate_for_api(const pipeline::LiveServices& live, const std::string& scenario,
                                     const std::optional<std::string>& config);

}  // namespace tollgate::app
