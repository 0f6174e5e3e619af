#pragma once
/// One simulation from texts: the scenario YAML and the config (YAML text, or a loaded Config),
/// checked, run and reported. `tollgate simulate` (app/simulate_cmd.cpp, texts read from files)
/// and POST /tollgate/simulate (texts from the body) both call run_texts, so their JSON is the
/// same function's (render_json).
///
/// Sandboxing (RunTextsOptions::sandboxed, for texts from an API caller): the config's
/// `os.environ/NAME` references resolve to the placeholder "sim-env-NAME" and nothing else of the
/// environment is read (provider default variables are absent); no file is read (a
/// `vertex_credentials` path is an error) and `tollgate_settings.price_file` must be absent or
/// equal to `allowed_price_file`; `environment_variables:` are never exported. The run itself
/// never opens a store, a socket or a file (simulate/simulator.hpp).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/loader.hpp"
#include "simulate/scenario.hpp"
#include "simulate/simulator.hpp"

namespace tollgate::simulate {

struct RunTextsOptions {
  std::string scenario_name = "<scenario>";  ///< Scenario::source_path (messages, the report)
  /// The config as YAML text; nullopt = `config` (already loaded: the live config).
  std::optional<std::string> config_text;
  std::string config_name = "<config>";      ///< Config::source_path of a config_text
  std::shared_ptr<const config::Config> config;
  /// Where a config_text's os.environ/ references resolve when not sandboxed; empty = the process.
  config::EnvLookup getenv;
  bool sandboxed = false;
  std::string allowed_price_file;  ///< sandboxed: the one price_file a config_text may name
  /// At most this many simulated requests (the sum of `repeat`); 0 = no bound. More: a problem at
  /// path `requests`.
  std::int64_t max_requests = 0;
  /// Caps every retry and fallback budget of the run's config at this many (0 = as configured):
  /// scripted upstreams answer at once, so a huge budget is CPU, not time.
  int max_retries_and_fallbacks = 0;
};

/// What a run produced: either problems (nothing ran) or the result.
struct RunTextsOutcome {
  std::vector<config::Problem> config_errors;   ///< the config did not load (nothing ran)
  std::vector<config::Problem> config_warnings;
  std::vector<ScenarioProblem> scenario_errors; ///< the scenario is malformed or does not fit the config
  std::optional<SimulationResult> result;       ///< set iff both lists of errors are empty
};

/// Loads, checks and runs. Throws std::runtime_error only for faults of the simulator itself.
RunTextsOutcome run_texts(const std::string& scenario_text, const RunTextsOptions& options);

/// The placeholder a sandboxed config's `os.environ/NAME` resolves to: "sim-env-NAME".
std::string sandbox_env_value(std::string_view name);

}  // namespace tollgate::simulate
