#include "config/reload.hpp"

#include <functional>

namespace tollgate::config {

namespace {

/// One restart-required setting: its YAML path, whether two configs differ on it, and how to put
/// the running value back.
struct Fixed {
  const char* path;
  std::function<bool(const Config&, const Config&)> differs;
  std::function<void(Config& into, const Config& from)> keep;
};

template <class T>
Fixed fixed(const char* path, T Config::*section, auto member) {
  return Fixed{path,
               [section, member](const Config& a, const Config& b) { return a.*section.*member != b.*section.*member; },
               [section, member](Config& into, const Config& from) { into.*section.*member = from.*section.*member; }};
}

bool same_redis(const RedisEndpoint& a, const RedisEndpoint& b) {
  return a.host == b.host && a.port == b.port && a.username == b.username && a.password == b.password && a.db == b.db;
}

bool same_otel(const OtelSettings& a, const OtelSettings& b) {
  return a.enabled == b.enabled && a.traces_endpoint == b.traces_endpoint && a.headers == b.headers &&
         a.service_name == b.service_name && a.resource_attributes == b.resource_attributes &&
         a.capture_content == b.capture_content && a.timeout == b.timeout && a.queue_size == b.queue_size;
}

bool same_alerts(const AlertSettings& a, const AlertSettings& b) {
  return a.webhooks == b.webhooks && a.timeout == b.timeout && a.budget_thresholds == b.budget_thresholds;
}

bool same_cache(const CacheSettings& a, const CacheSettings& b) {
  return a.enabled == b.enabled && a.type == b.type && a.ttl_seconds == b.ttl_seconds &&
         a.default_in_memory_ttl_seconds == b.default_in_memory_ttl_seconds &&
         a.default_in_redis_ttl_seconds == b.default_in_redis_ttl_seconds && a.cache_namespace == b.cache_namespace &&
         a.supported_call_types == b.supported_call_types && a.max_size_in_memory == b.max_size_in_memory &&
         same_redis(a.redis, b.redis);
}

const std::vector<Fixed>& fixed_settings() {
  using G = GeneralSettings;
  using T = TollgateSettings;
  static const std::vector<Fixed> f = {
      fixed("general_settings.master_key", &Config::general_settings, &G::master_key),
      fixed("general_settings.database_url", &Config::general_settings, &G::database_url),
      fixed("general_settings.database_connection_pool_limit", &Config::general_settings,
            &G::database_connection_pool_limit),
      fixed("general_settings.budget_reset_timezone", &Config::general_settings, &G::budget_reset_timezone),
      fixed("general_settings.store_model_in_db", &Config::general_settings, &G::store_model_in_db),
      fixed("general_settings.background_health_checks", &Config::general_settings, &G::background_health_checks),
      Fixed{"router_settings.redis_host / redis_port / redis_password / redis_url",
            [](const Config& a, const Config& b) {
              return !same_redis(a.router_settings.redis, b.router_settings.redis);
            },
            [](Config& into, const Config& from) { into.router_settings.redis = from.router_settings.redis; }},
      fixed("tollgate_settings.max_request_body_bytes", &Config::tollgate_settings, &T::max_request_body_bytes),
      fixed("tollgate_settings.header_read_timeout_ms", &Config::tollgate_settings, &T::header_read_timeout),
      fixed("tollgate_settings.body_read_timeout_ms", &Config::tollgate_settings, &T::body_read_timeout),
      fixed("tollgate_settings.idle_timeout_ms", &Config::tollgate_settings, &T::idle_timeout),
      fixed("tollgate_settings.connect_timeout_ms", &Config::tollgate_settings, &T::connect_timeout),
      fixed("tollgate_settings.drain_timeout_ms", &Config::tollgate_settings, &T::drain_timeout),
      fixed("tollgate_settings.worker_threads", &Config::tollgate_settings, &T::worker_threads),
      fixed("tollgate_settings.ca_file", &Config::tollgate_settings, &T::ca_file),
      fixed("tollgate_settings.tls_verify", &Config::tollgate_settings, &T::tls_verify),
      fixed("tollgate_settings.max_idle_connections_per_upstream", &Config::tollgate_settings,
            &T::max_idle_connections_per_upstream),
      fixed("tollgate_settings.max_connections", &Config::tollgate_settings, &T::max_connections),
      fixed("tollgate_settings.max_connections_per_ip", &Config::tollgate_settings, &T::max_connections_per_ip),
      fixed("tollgate_settings.data_dir", &Config::tollgate_settings, &T::data_dir),
      fixed("tollgate_settings.ledger_journal", &Config::tollgate_settings, &T::ledger_journal),
      fixed("tollgate_settings.ledger_journal_fsync", &Config::tollgate_settings, &T::ledger_journal_fsync),
      fixed("tollgate_settings.ledger_lease_ms", &Config::tollgate_settings, &T::ledger_lease),
      fixed("tollgate_settings.redis_key_prefix", &Config::tollgate_settings, &T::redis_key_prefix),
      fixed("tollgate_settings.redis_timeout_ms", &Config::tollgate_settings, &T::redis_timeout),
      fixed("tollgate_settings.access_log", &Config::tollgate_settings, &T::access_log),
      fixed("tollgate_settings.identity_refresh_ms", &Config::tollgate_settings, &T::identity_refresh),
      fixed("tollgate_settings.model_refresh_ms", &Config::tollgate_settings, &T::model_refresh),
      Fixed{"tollgate_settings.otel",
            [](const Config& a, const Config& b) {
              return !same_otel(a.tollgate_settings.otel, b.tollgate_settings.otel);
            },
            [](Config& into, const Config& from) { into.tollgate_settings.otel = from.tollgate_settings.otel; }},
      // The response cache (local store or Redis connection) is built once, at start.
      Fixed{"litellm_settings.cache / cache_params",
            [](const Config& a, const Config& b) { return !same_cache(a.litellm_settings.cache, b.litellm_settings.cache); },
            [](Config& into, const Config& from) { into.litellm_settings.cache = from.litellm_settings.cache; }},
      Fixed{"tollgate_settings.alerts (and general_settings.alerting)",
            [](const Config& a, const Config& b) {
              return !same_alerts(a.tollgate_settings.alerts, b.tollgate_settings.alerts);
            },
            [](Config& into, const Config& from) { into.tollgate_settings.alerts = from.tollgate_settings.alerts; }},
  };
  return f;
}

}  // namespace

ReloadPlan plan_reload(const Config& running, const Config& loaded) {
  auto next = std::make_shared<Config>(loaded);
  ReloadPlan plan;
  for (const auto& f : fixed_settings()) {
    if (!f.differs(running, loaded)) continue;
    plan.restart_required.push_back(std::string(f.path) + ": restart required (the running value is kept)");
    f.keep(*next, running);
  }
  plan.config = std::move(next);
  return plan;
}

}  // namespace tollgate::config
