#include "app/simulate_cmd.hpp"

#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "config/loader.hpp"
#include "simulate/report.hpp"
#include "simulate/run_texts.hpp"

namespace tollgate::app {

namespace {

/// Restores the log level on every return path.
struct LogLevelGuard {
  spdlog::level::level_enum saved = spdlog::get_level();
  ~LogLevelGuard() { spdlog::set_level(saved); }
};

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int simulate_command(const SimulateOptions& opt) {
  auto config_text = read_text(opt.config_path);
  if (!config_text) {
    std::cerr << "tollgate simulate: config error: " << opt.config_path << ": cannot read config file "
              << opt.config_path << "\n";
    return 2;
  }
  auto scenario_text = read_text(opt.scenario_path);
  if (!scenario_text) {
    std::cerr << "tollgate simulate: scenario error: " << opt.scenario_path << ": cannot read the scenario file "
              << opt.scenario_path << "\n";
    return 2;
  }
  // The process environment resolves os.environ/ references; nothing is exported, nothing is
  // sent anywhere, so placeholder secrets are fine.
  simulate::RunTextsOptions ro;
  ro.scenario_name = opt.scenario_path;
  ro.config_text = std::move(*config_text);
  ro.config_name = opt.config_path;
  ro.getenv = config::process_environment();
  LogLevelGuard guard;
  if (!opt.verbose) spdlog::set_level(spdlog::level::off);
  simulate::RunTextsOutcome run;
  try {
    run = simulate::run_texts(*scenario_text, ro);
  } catch (const std::exception& e) {
    std::cerr << "tollgate simulate: the simulation failed: " << e.what() << "\n";
    return 1;
  }
  for (const auto& w : run.config_warnings) std::cerr << "tollgate simulate: config warning: " << w.to_string() << "\n";
  for (const auto& e : run.config_errors)
    std::cerr << "tollgate simulate: config error: " << opt.config_path << ": " << e.to_string() << "\n";
  for (const auto& p : run.scenario_errors)
    std::cerr << "tollgate simulate: scenario error: " << opt.scenario_path << ": " << p.to_string() << "\n";
  if (!run.result) return 2;
  if (opt.json) std::cout << simulate::pretty_json(simulate::render_json(*run.result));
  else std::cout << simulate::render_text(*run.result);
  std::cout.flush();
  return 0;
}

}  // namespace tollgate::app
