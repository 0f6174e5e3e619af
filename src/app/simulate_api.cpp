#include "app/simulate_api.hpp"

#include "api/admin_ui.hpp"
#include "core/thread_log.hpp"
#include "simulate/report.hpp"
#include "simulate/run_texts.hpp"

namespace tollgate::app {

api::SimulateAnswer simulate_for_api(const pipeline::LiveServices& live, const std::string& scenario,
                                     const std::optional<std::string>& config) {
  const auto running = live.current()->config;
  simulate::RunTextsOptions ro;
  ro.scenario_name = "<scenario>";
  ro.config = running;
  if (config) {
    ro.config_text = *config;
    ro.config_name = "<pasted config>";
  }
  ro.sandboxed = true;
  ro.allowed_price_file = running->tollgate_settings.price_file;
  ro.max_requests = api::admin::kMaxSimulatedRequests;
  ro.max_retries_and_fallbacks = api::admin::kMaxSimulatedRetries;
  // The simulated attempt loop logs its own circuit transitions and alerts: not the gateway's.
  const core::ThreadLogMute mute;
  auto run = simulate::run_texts(scenario, ro);
  api::SimulateAnswer out;
  if (run.result) {
    out.report = simulate::render_json(*run.result);
    return out;
  }
  for (const auto& p : run.config_errors) out.problems.push_back({"config", p.path, p.line, p.message});
  for (const auto& p : run.scenario_errors) out.problems.push_back({"scenario", p.path, p.line, p.message});
  return out;
}

}  // namespace tollgate::app
