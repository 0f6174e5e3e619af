#include "app/simulate_cmd.hpp"

#include <exception>
#include <iostream>

#include <spdlog/spdlog.h>

#include "config/loader.hpp"
#include "simulate/report.hpp"
#include "simulate/scenario.hpp"
#include "simulate/simulator.hpp"

namespace tollgate::app {

namespace {

/// Restores the log level on every return path.
struct LogLevelGuard {
  spdlog::level::level_enum saved = spdlog::get_level();
  ~LogLevelGuard() { spdlog::set_level(saved); }
};

}  // namespace

int simulate_command(const SimulateOptions& opt) {
  // The process environment resolves os.environ/ references; nothing is exported, nothing is
  // sent anywhere, so placeholder secrets are fine.
  auto loaded = config::load_config_file(opt.config_path, config::process_environment());
  for (const auto& w : loaded.warnings) std::cerr << "tollgate simulate: config warning: " << w.to_string() << "\n";
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::cerr << "tollgate simulate: config error: " << opt.config_path << ": " << e.to_string() << "\n";
    return 2;
  }
  auto scenario = simulate::load_scenario_file(opt.scenario_path);
  std::vector<simulate::ScenarioProblem> problems;
  if (!scenario) problems = scenario.error();
  else problems = simulate::check_against(*scenario, *loaded.config);
  if (!problems.empty()) {
    for (const auto& p : problems)
      std::cerr << "tollgate simulate: scenario error: " << opt.scenario_path << ": " << p.to_string() << "\n";
    return 2;
  }
  LogLevelGuard guard;
  if (!opt.verbose) spdlog::set_level(spdlog::level::off);
  simulate::SimulationResult result;
  try {
    result = simulate::run_simulation(*loaded.config, *scenario);
  } catch (const std::exception& e) {
    std::cerr << "tollgate simulate: the simulation failed: " << e.what() << "\n";
    return 1;
  }
  if (opt.json) std::cout << simulate::pretty_json(simulate::render_json(result));
  else std::cout << simulate::render_text(result);
  std::cout.flush();
  return 0;
}

}  // namespace tollgate::app
