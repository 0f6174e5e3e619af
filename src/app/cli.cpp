#include "app/cli.hpp"

#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "app/alerts_cmd.hpp"
#include "app/explain.hpp"
#include "app/pricing_cmd.hpp"
#include "app/serve.hpp"
#include "app/simulate_cmd.hpp"
#include "budget/price_file.hpp"
#include "config/loader.hpp"
#include "config/schema.hpp"

namespace tollgate::app {

namespace {

/// Loads a config for serving: warnings to the log, errors to stderr (each with its YAML path).
/// An invalid `tollgate_settings.price_file` is a config error too.
std::shared_ptr<const config::Config> load_or_report(const std::string& path) {
  auto r = config::load_config_file(path);
  for (const auto& w : r.warnings) spdlog::warn("config: {}", w.to_string());
  if (!r.ok()) {
    for (const auto& e : r.errors) std::cerr << "tollgate: config error: " << e.to_string() << "\n";
    return nullptr;
  }
  if (auto prices = budget::load_effective_price_table(*r.config); !prices) {
    std::cerr << "tollgate: config error: " << prices.error() << "\n";
    return nullptr;
  }
  return r.config;
}

int config_check(const std::string& path) {
  auto r = config::load_config_file(path);
  for (const auto& w : r.warnings) std::cout << "warning: " << w.to_string() << "\n";
  for (const auto& e : r.errors) std::cout << "error: " << e.to_string() << "\n";
  if (!r.ok()) {
    std::cerr << "tollgate: " << path << ": " << r.errors.size() << " error(s)\n";
    return 2;
  }
  if (auto prices = budget::load_effective_price_table(*r.config); !prices) {
    std::cout << "error: " << prices.error() << "\n";
    std::cerr << "tollgate: " << path << ": 1 error(s)\n";
    return 2;
  }
  std::cout << path << ": ok (" << r.config->model_list.size() << " deployment(s), "
            << r.config->model_groups().size() << " model group(s), " << r.warnings.size() << " warning(s))\n";
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App cli{"Tollgate: an LLM gateway where every call, retry and fallback pays at the gate"};
  cli.require_subcommand(0, 1);
  std::string top_config;
  ServeOptions top_opts;
  cli.add_option("--config,-c", top_config, "config file (LiteLLM proxy format); same as `serve --config`");
  cli.add_option("--host", top_opts.host, "address to listen on");
  cli.add_option("--port,-p", top_opts.port, "port to listen on (0 = any free port)");

  auto* serve_cmd = cli.add_subcommand("serve", "run the gateway");
  std::string serve_config;
  ServeOptions serve_opts;
  serve_cmd->add_option("--config,-c", serve_config, "config file (LiteLLM proxy format)")->required();
  serve_cmd->add_option("--host", serve_opts.host, "address to listen on")->capture_default_str();
  serve_cmd->add_option("--port,-p", serve_opts.port, "port to listen on (0 = any free port)")->capture_default_str();

  auto* pricing_cmd = cli.add_subcommand("pricing", "price table tools");
  pricing_cmd->require_subcommand(1);
  auto* pricing_check_cmd =
      pricing_cmd->add_subcommand("check", "print every deployment with its resolved price, or `unpriced`");
  std::string pricing_config;
  pricing_check_cmd->add_option("--config,-c", pricing_config, "config file")->required();
  auto* pricing_import_cmd = pricing_cmd->add_subcommand(
      "import", "convert LiteLLM's model_prices_and_context_window.json to Tollgate's price table (YAML)");
  PricingImportOptions import_opts;
  pricing_import_cmd->add_option("FILE", import_opts.file, "LiteLLM price file (JSON)")->required();
  pricing_import_cmd->add_option("--out,-o", import_opts.out, "write the table here (atomically) instead of stdout");
  pricing_import_cmd->add_option("--as-of", import_opts.as_of, "as_of date of every entry, YYYY-MM-DD (default: today, UTC)");

  auto* config_cmd = cli.add_subcommand("config", "config file tools");
  config_cmd->require_subcommand(1);
  auto* check_cmd = config_cmd->add_subcommand("check", "validate a config file; print each problem with its YAML path");
  std::string check_file;
  check_cmd->add_option("FILE", check_file, "config file")->required();
  auto* schema_cmd = config_cmd->add_subcommand(
      "schema", "print every config key Tollgate knows (type, default, LiteLLM's meaning, Tollgate's status) as markdown");

  auto* simulate_cmd = cli.add_subcommand(
      "simulate", "replay a scenario of scripted upstream outcomes against the config's fallback policy (no network)");
  SimulateOptions simulate_opts;
  simulate_cmd->add_option("--config,-c", simulate_opts.config_path, "config file (LiteLLM proxy format)")->required();
  simulate_cmd->add_option("--scenario,-s", simulate_opts.scenario_path, "scenario file (see docs/simulate.md)")->required();
  simulate_cmd->add_flag("--json", simulate_opts.json, "print machine-readable JSON");
  simulate_cmd->add_flag("--verbose,-v", simulate_opts.verbose, "keep the gateway's log lines on stderr");

  auto* explain_cmd =
      cli.add_subcommand("explain", "print the decision trace of one request from the spend log of the config's database");
  ExplainOptions explain_opts;
  explain_cmd->add_option("REQUEST_ID", explain_opts.request_id, "request id (the x-litellm-call-id response header)")
      ->required();
  explain_cmd->add_option("--config,-c", explain_opts.config_path, "config file naming the database")->required();
  explain_cmd->add_flag("--json", explain_opts.json, "print the row's decision JSON");

  auto* alerts_cmd = cli.add_subcommand("alerts", "alert channel tools");
  alerts_cmd->require_subcommand(1);
  auto* alerts_test_cmd = alerts_cmd->add_subcommand("test", "send one alert of each kind to the config's alert channels");
  std::string alerts_config;
  alerts_test_cmd->add_option("--config,-c", alerts_config, "config file")->required();

  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tollgate: " << e.what() << " (see tollgate --help)\n";
    return 2;
  }

  if (*check_cmd) return config_check(check_file);
  if (*schema_cmd) {
    std::cout << config::reference_markdown();
    return 0;
  }
  if (*alerts_test_cmd) {
    auto cfg = load_or_report(alerts_config);
    return cfg ? alerts_test_command(*cfg) : 2;
  }
  if (*simulate_cmd) return simulate_command(simulate_opts);
  if (*explain_cmd) return explain_command(explain_opts);
  if (*pricing_check_cmd) return pricing_check_command(pricing_config);
  if (*pricing_import_cmd) return pricing_import_command(import_opts);
  if (*serve_cmd) {
    auto cfg = load_or_report(serve_config);
    return cfg ? serve(cfg, serve_opts) : 2;
  }
  if (!top_config.empty()) {
    auto cfg = load_or_report(top_config);
    return cfg ? serve(cfg, top_opts) : 2;
  }
  std::cerr << "tollgate: nothing to do: use `tollgate serve --config FILE` (see tollgate --help)\n";
  return 2;
}

}  // namespace tollgate::app
