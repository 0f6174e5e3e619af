#pragma once
/// The `tollgate` command line: `serve`, `config check`, `pricing check`, `pricing import`, `simulate` (policy
/// dry-run, docs/simulate.md), `explain REQUEST_ID` (a request's decision trace), `alerts test`
/// (one alert of each kind to the configured channels), and LiteLLM's `--config FILE` form.
/// Exit codes: 0 success, 2 bad usage or bad config (one-line reason on stderr), 1 runtime failure.

namespace tollgate::app {

/// Parses argv and runs the chosen command; returns the process exit code.
int run_cli(int argc, char** argv);

}  // namespace tollgate::app
