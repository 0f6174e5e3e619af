#pragma once
/// Config hot reload (issue 11 §6): which settings a running process can take from a reloaded
/// file, and the report of one reload. Pure functions; the reload itself (SIGHUP,
/// `POST /config/reload`, the store's models) is app/reloader.hpp.
///
/// Restart required (kept at the running value, each named in ReloadReport::restart_required
/// when the file changed it): general_settings.master_key, database_url,
/// database_connection_pool_limit, budget_reset_timezone, store_model_in_db;
/// router_settings.redis_* (redis_url); every tollgate_settings key that sets up a process
/// component at start: max_request_body_bytes, header/body/idle read timeouts, connect_timeout_ms,
/// worker_threads, ca_file, tls_verify, max_idle_connections_per_upstream, max_connections,
/// max_connections_per_ip, data_dir, ledger_lease_ms,
/// redis_key_prefix, redis_timeout_ms, otel, alerts, access_log, identity_refresh_ms,
/// model_refresh_ms, drain_timeout_ms. The listen address and port are command-line options.
/// Everything else (model_list, fallbacks, router and failure policy, prices, budgets of
/// litellm_settings, ...) takes effect for the requests that arrive after the reload.

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace tollgate::config {

/// The config to run after a reload: `loaded` with every restart-required setting put back to
/// `running`'s value.
struct ReloadPlan {
  std::shared_ptr<const Config> config;
  /// One line per restart-required setting the file changed: "general_settings.master_key:
  /// restart required (the running value is kept)".
  std::vector<std::string> restart_required;
};

/// Plans taking `loaded` (a successfully loaded file) over `running`.
ReloadPlan plan_reload(const Config& running, const Config& loaded);

/// What one reload did (logged, and the answer of POST /config/reload).
struct ReloadReport {
  bool applied = false;           ///< false: refused, the running config is kept
  std::vector<Problem> errors;    ///< why it was refused
  std::vector<Problem> warnings;  ///< of the new config
  std::vector<std::string> restart_required;
  std::size_t model_groups = 0;  ///< served after the reload (the running count when refused)
  std::size_t deployments = 0;
};

}  // namespace tollgate::config
