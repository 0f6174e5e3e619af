#pragma once
/// `tollgate simulate --config FILE --scenario FILE [--json] [--verbose]` (docs/simulate.md).
/// Exit codes: 0 the scenario ran (whatever its outcomes), 2 a bad config or scenario (every
/// problem on stderr with its YAML path), 1 the simulator itself failed.

#include <string>

namespace tollgate::app {

struct SimulateOptions {
  std::string config_path;
  std::string scenario_path;
  bool json = false;     ///< machine-readable JSON instead of the text report
  bool verbose = false;  ///< keep the gateway's log lines (circuit transitions, alerts) on stderr
};

int simulate_command(const SimulateOptions& options);

}  // namespace tollgate::app
