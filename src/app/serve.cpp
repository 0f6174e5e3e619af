#include "app/serve.hpp"

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <sstream>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "api/admin.hpp"
#include "api/admin_models.hpp"
#include "app/simulate_api.hpp"
#include "app/reloader.hpp"
#include "api/caller.hpp"
#include "app/database.hpp"
#include "app/memory_policy.hpp"
#include "api/gateway.hpp"
#include "api/key_spend.hpp"
#include "auth/caller_names.hpp"
#include "auth/identities.hpp"
#include "auth/request_binding.hpp"
#include "http/client.hpp"
#include "http/descriptor_limit.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"
#include "pipeline/health_monitor.hpp"
#include "pipeline/job_runner.hpp"
#include "pipeline/process_metrics.hpp"
#include "core/database_url.hpp"
#include "store/journal/ledger_journal.hpp"
#include "store/redis/circuit_sync.hpp"
#include "store/sqlite/sqlite_memory.hpp"
#include "store/redis/io_connection.hpp"
#include "store/redis/redis_ledger.hpp"
#include "store/redis/redis_rate_limits.hpp"
#include "store/redis/redis_response_cache.hpp"
#include "telemetry/alert_webhooks.hpp"
#include "telemetry/metrics.hpp"
#include "telemetry/otlp_exporter.hpp"

namespace tollgate::app {
namespace {

/// The shared ledger, rate limits and circuits when router_settings names a Redis server (several
/// instances share one cap, one rpm_limit, and each other's open circuits), else empty (the
/// in-process ones). `sync` receives the circuit publisher, to attach once the circuits exist;
/// `client_out` the Redis client, whose connection each worker thread attaches.
pipeline::SharedState shared_state(const config::Config& cfg, std::shared_ptr<store::Store> db,
                                   std::shared_ptr<store::redis::CircuitSync>& sync,
                                   std::shared_ptr<store::redis::RedisClient>& client_out) {
  const auto& endpoint = cfg.router_settings.redis;
  if (!endpoint.configured()) return {};
  auto redis = store::redis::redis_options_for(endpoint);
  redis.timeout = cfg.tollgate_settings.redis_timeout;
  auto client = std::make_shared<store::redis::RedisClient>(redis);
  client_out = client;
  store::redis::RedisLedgerOptions o;
  o.key_prefix = cfg.tollgate_settings.redis_key_prefix;
  o.lease = cfg.tollgate_settings.ledger_lease;
  // Reservations rebuilt from the store are held at least as long as a request can run.
  o.rebuilt_hold = cfg.effective_timeout + cfg.tollgate_settings.ledger_lease;
  std::string tz_warning;
  o.reset_timezone = budget::reset_timezone_or_utc(cfg.general_settings.budget_reset_timezone, &tz_warning);
  auto ledger = std::make_unique<store::redis::RedisLedger>(client, o, std::move(db));
  spdlog::info("shared ledger and rate limits: Redis {}:{} (instance {}, lease {} ms)", endpoint.host, endpoint.port,
               ledger->instance_id(), o.lease.count());
  pipeline::SharedState out;
  sync = std::make_shared<store::redis::CircuitSync>(client, o.key_prefix, ledger->instance_id());
  out.on_circuit_transition = [sync](const policy::CircuitTransition& t) { sync->publish(t); };
  out.limits = std::make_unique<store::redis::RedisRateLimits>(
      client, o.key_prefix, ledger->instance_id(), std::make_unique<policy::RateLimiter>(core::SystemClock::instance()));
  out.ledger = std::move(ledger);
  return out;
}

/// The config file's text (the reloader's starting point), nullopt when it cannot be read.
std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// How long `serve` waits for a Postgres server that is still starting (docs/storage.md).
constexpr std::chrono::seconds kDatabaseRetry{10};

}  // namespace

int serve(std::shared_ptr<const config::Config> cfg, const ServeOptions& options) {
  tune_allocator();  // before any thread starts (docs/operations.md "Memory after a load")
  // A file size limit (RLIMIT_FSIZE) makes a write fail with EFBIG, like a full disk: the ledger
  // then refuses paid attempts (503) instead of the process dying of the signal.
  std::signal(SIGXFSZ, SIG_IGN);
  // `cfg` may become the file plus the store's models below; `ts` stays this one's (the settings
  // that cannot change without a restart are the file's either way).
  const auto started_with = cfg;
  const auto& ts = started_with->tollgate_settings;
  const std::string db_url = core::redact_database_url(database_url(*cfg));  // for messages
  // Descriptors first (docs/operations.md "Connection limits"): the soft limit goes up to the
  // hard one, and the client connection limit leaves a reserve for everything else.
  const auto fds = http::raise_descriptor_limit();
  if (!fds.error.empty())
    spdlog::warn("descriptor limit: soft {} (hard {}) could not be raised: {}", fds.soft, fds.hard, fds.error);
  else
    spdlog::info("descriptor limit: soft {} (was {}), hard {}", fds.soft, fds.soft_before, fds.hard);
  const auto conn_limit = http::resolve_max_connections(ts.max_connections, fds.soft);
  if (!conn_limit.warning.empty()) spdlog::warn("{}", conn_limit.warning);
  std::shared_ptr<store::Store> db;
  {
    // A Postgres server that is still starting gets kDatabaseRetry to answer (docs/storage.md).
    auto opened = open_database(*cfg, {.serving = true, .retry_unavailable = kDatabaseRetry});
    if (!opened) {
      std::cerr << "tollgate: cannot open the database " << db_url << ": " << opened.error().message << "\n";
      return 1;
    }
    db = std::move(*opened);
  }
  // Config hot reload (SIGHUP, POST /config/reload) and the store's models (store_model_in_db):
  // the file as read now, plus the models in the database, is the config served from the start.
  std::shared_ptr<Reloader> reloader;
  if (auto text = read_text(cfg->source_path)) {
    reloader = std::make_shared<Reloader>(Reloader::Options{.config_path = cfg->source_path, .store = db}, std::move(*text));
    if (cfg->general_settings.store_model_in_db) {
      auto loaded = reloader->load_initial(true);
      if (!loaded.ok()) {
        std::cerr << "tollgate: the models in the database do not load with " << cfg->source_path << ":\n";
        for (const auto& e : loaded.errors) std::cerr << "  " << e.to_string() << "\n";
        return 1;
      }
      cfg = loaded.config;
    }
  }
  struct StopReloader {
    std::shared_ptr<Reloader>& r;
    ~StopReloader() {
      if (r) r->stop();
    }
  } stop_reloader{reloader};
  // Spend is rebuilt from the durable ledger before the first request (crash recovery).
  std::shared_ptr<pipeline::Services> services;
  std::shared_ptr<store::redis::CircuitSync> circuit_sync;  // scaled out: circuits shared through Redis
  std::shared_ptr<store::redis::RedisClient> redis_client;  // scaled out: one connection per worker thread too
  // Declared after `services`, so it runs first on every return: the poll thread stops before the
  // circuits it applies to are destroyed (the circuits' observer keeps the publisher alive).
  struct StopSync {
    std::shared_ptr<store::redis::CircuitSync>& sync;
    ~StopSync() {
      if (sync) sync->stop();
    }
  } stop_sync{circuit_sync};
  try {
    services = pipeline::Services::make(cfg, core::SystemClock::instance(), db, shared_state(*cfg, db, circuit_sync, redis_client));
    if (circuit_sync) circuit_sync->attach(services->circuits.get());
    if (const auto& cc = cfg->litellm_settings.cache; cc.enabled && cc.type == config::CacheSettings::Type::redis) {
      // The router's Redis client when the cache names the same server (its worker connections
      // serve the cache too), else a client of the cache's own.
      const auto& r = cfg->router_settings.redis;
      std::shared_ptr<store::redis::RedisClient> client = redis_client;
      if (!client || r.host != cc.redis.host || r.port != cc.redis.port || r.db != cc.redis.db ||
          r.password != cc.redis.password || r.username != cc.redis.username) {
        auto o = store::redis::redis_options_for(cc.redis);
        o.timeout = cfg->tollgate_settings.redis_timeout;
        client = std::make_shared<store::redis::RedisClient>(o);
      }
      services->response_cache =
          std::make_shared<store::redis::RedisResponseCache>(client, cfg->tollgate_settings.redis_key_prefix);
      spdlog::info("response cache: Redis {}:{}", cc.redis.host, cc.redis.port);
    } else if (cc.enabled) {
      spdlog::info("response cache: in memory, {} entries", cc.max_size_in_memory);
    }
    if (const auto& a = cfg->tollgate_settings.alerts; !a.webhooks.empty()) {
      telemetry::WebhookOptions wo;
      wo.urls = a.webhooks;
      wo.timeout = a.timeout;
      wo.client.ca_file = cfg->tollgate_settings.ca_file;
      wo.client.verify = cfg->tollgate_settings.tls_verify;
      auto notifier = std::make_shared<telemetry::WebhookNotifier>(std::move(wo));
      notifier->register_metrics(*services->metrics);
      services->alerts->set_notifier([notifier](const telemetry::Alert& alert) { notifier->notify(alert); });
      spdlog::info("alerts: delivering to {} webhook(s)", a.webhooks.size());
    }
    if (const auto& target = cfg->tollgate_settings.access_log; !target.empty()) {
      services->access_log = std::make_shared<telemetry::AccessLog>(target);
      services->access_log->register_metrics(*services->metrics);
    }
    if (const auto& o = cfg->tollgate_settings.otel; o.enabled) {
      telemetry::OtlpOptions opts;
      opts.traces_url = o.traces_endpoint;
      opts.headers = o.headers;
      // service.name: service_name (or OTEL_SERVICE_NAME) when set, else the resource
      // attributes' own, else "tollgate".
      std::string service = o.service_name;
      for (const auto& [k, v] : o.resource_attributes)
        if (k == "service.name" && service == "tollgate") service = v;
      opts.resource.attributes.add_string("service.name", service);
      for (const auto& [k, v] : o.resource_attributes)
        if (k != "service.name") opts.resource.attributes.add_string(k, v);
      opts.queue_capacity = static_cast<std::size_t>(o.queue_size);
      opts.timeout = o.timeout;
      opts.client.ca_file = cfg->tollgate_settings.ca_file;
      opts.client.verify = cfg->tollgate_settings.tls_verify;
      services->spans = std::make_shared<telemetry::OtlpExporter>(std::move(opts));
      services->spans->register_metrics(*services->metrics);
      spdlog::info("otel: exporting spans to {}", o.traces_endpoint);
    }
  } catch (const std::exception& e) {
    std::cerr << "tollgate: " << e.what() << "\n";
    return 1;
  }
  // The identity snapshot: loaded once here, then reloaded by the admin API after every write.
  auto identities = std::make_shared<auth::Identities>();
  if (auto loaded = identities->reload(*db); !loaded) {
    std::cerr << "tollgate: cannot load identities from " << db_url << ": " << loaded.error().message << "\n";
    return 1;
  }
  if (cfg->general_settings.master_key.empty()) {
    if (const auto keys = identities->current()->key_count(); keys > 0)
      spdlog::warn(
          "no general_settings.master_key: {} virtual key(s) in the database; requests without a key are served "
          "anonymously while no budget applies to them",
          keys);
  }
  auto live = std::make_shared<pipeline::LiveServices>(services);
  if (reloader)
    reloader->set_live(live, [circuit_sync](const std::shared_ptr<pipeline::Services>& next) {
      if (circuit_sync) circuit_sync->retarget(next->circuits);
    });
  api::AdminDeps admin_deps;
  admin_deps.config = cfg;
  admin_deps.current_config = [live] { return live->current()->config; };
  admin_deps.store = db;
  admin_deps.identities = identities;
  admin_deps.spend_for_key = [live](const store::KeyRecord& k) {
    const auto s = live->current();
    return api::key_spend_json(*s->ledger, *s->config, k);
  };
  admin_deps.spend_for_scope = [live](const budget::ScopeId& s) { return api::scope_spend_json(*live->current()->ledger, s); };
  admin_deps.restart_key_window = [live](const store::KeyRecord& k) {
    // The in-process ledger only (docs/budgets.md): a shared ledger keeps its aligned windows.
    if (auto* local = live->current()->local_ledger) api::restart_key_window(*local, k, std::chrono::system_clock::now());
  };
  admin_deps.services = [live]() -> std::shared_ptr<const pipeline::Services> { return live->current(); };
  admin_deps.simulate = [live](const std::string& scenario, const std::optional<std::string>& config) {
    return simulate_for_api(*live, scenario, config);
  };
  auto admin = std::make_shared<api::Admin>(std::move(admin_deps));
  // Identity changes made elsewhere (another instance sharing the store) are picked up by polling,
  // and at once for a key this instance does not know yet.
  auto refresher = std::make_shared<auth::IdentityRefresher>(identities, db, auth::RefresherOptions{.poll = ts.identity_refresh});
  auto gateway = std::make_shared<api::Gateway>(live, identities, admin, refresher);
  if (reloader) {
    api::ModelAdminDeps md;
    md.store = db;
    md.reload_file = [reloader] { return reloader->reload_file(); };
    md.refresh_models = [reloader] { return reloader->refresh_models(); };
    md.check_models = [reloader](const std::vector<store::ProxyModelRecord>& models, const std::string& subject) {
      return reloader->check_models(models, subject);
    };
    gateway->set_model_admin(std::make_shared<api::ModelAdmin>(std::move(md)));
    if (cfg->general_settings.store_model_in_db) reloader->start_polling(ts.model_refresh);
  }

  http::ServerLimits limits;
  limits.max_body_bytes = ts.max_request_body_bytes;
  limits.header_timeout = ts.header_read_timeout;
  limits.body_timeout = ts.body_read_timeout;
  limits.idle_timeout = ts.idle_timeout;
  limits.max_connections = conn_limit.max_connections;
  limits.max_connections_per_ip = static_cast<std::size_t>(ts.max_connections_per_ip);
  spdlog::info(
      "connection limit: {} open client connection(s){} ({} descriptor(s) left for upstream calls, the "
      "store and logs){}",
      limits.max_connections, ts.max_connections > 0 ? "" : " (from the descriptor limit)",
      fds.soft - std::min<std::uint64_t>(fds.soft, limits.max_connections),
      ts.max_connections_per_ip > 0 ? fmt::format("; {} per client IP", ts.max_connections_per_ip) : std::string());
  int threads = ts.worker_threads > 0 ? ts.worker_threads : static_cast<int>(std::thread::hardware_concurrency());
  if (threads < 1) threads = 1;

  http::Server server(
      limits, [gateway](http::Request& req, http::ResponseWriter& w) { return gateway->handle(req, w); },
      &api::Gateway::protocol_error_body, threads);
  services->connection_stats = server.connection_stats_reader();  // /tollgate/stats; reloads copy it
  pipeline::watch_connections(*services->metrics, server.connection_stats_reader());
  services->metrics->on_collect([](telemetry::Exposition& out) {  // SQLite's share of the heap
    out.begin("tollgate_heap_bytes", "", telemetry::MetricType::gauge);
    out.sample("tollgate_heap_bytes", {{"state", "store"}}, static_cast<double>(store::sqlite_memory_used_bytes()));
  });
  unsigned short port = 0;
  try {
    port = server.listen(options.host, options.port);
  } catch (const boost::system::system_error& e) {
    std::cerr << "tollgate: cannot listen on " << options.host << ":" << options.port << ": " << e.code().message()
              << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tollgate: cannot listen on " << options.host << ":" << options.port << ": " << e.what() << "\n";
    return 1;
  }

  http::ClientOptions copts;
  copts.connect_timeout = ts.connect_timeout;
  copts.ca_file = ts.ca_file;
  copts.verify = ts.tls_verify;
  copts.max_idle_per_upstream = static_cast<std::size_t>(std::max(1, ts.max_idle_connections_per_upstream));

  // Deferred jobs (degradation mode `deferred`): stored in the database, run on their own thread
  // as the key that queued them once their model group takes traffic again.
  auto resolve = [identities, live](const store::JobRecord& job, boost::json::object& body)
      -> std::expected<std::shared_ptr<const auth::Principal>, core::Error> {
    const auto cfg = live->current()->config;  // the config in force when the job runs
    auto index = identities->current();
    std::shared_ptr<const auth::Principal> p;
    if (job.api_key.empty()) {
      auto master = std::make_shared<auth::Principal>();
      master->is_master = !cfg->general_settings.master_key.empty();
      p = std::move(master);
    } else {
      auto r = auth::principal_for_key_hash(*index, job.api_key, auth::unix_now_ms());
      if (!r) return std::unexpected(r.error());
      p = std::move(*r);
    }
    // The stored body is the gateway's own (OpenAI shape): its names were checked when it was
    // queued, and its metadata.tags also hold the key's own tags (set by an admin, possibly
    // before the limits existed), so only the types are checked here.
    const auth::CallerNameLimits stored{.max_name_bytes = SIZE_MAX, .max_tags = SIZE_MAX};
    auto names = auth::read_caller_names(body, auth::CallerApi::openai_chat, stored);
    if (!names) return std::unexpected(names.error());
    auto bound = auth::bind_request(p, *index, job.model_group, body, *cfg, *names);
    if (!bound) return bound;
    // A job queued anonymously runs anonymously: refused if a budget applies to it by now.
    if (auto refused = api::anonymous_budget_refusal(**bound, job.model_group, *cfg)) return std::unexpected(*refused);
    return bound;
  };
  pipeline::JobRunner::Options job_options;
  job_options.current = [live] { return live->current(); };
  auto jobs = std::make_unique<pipeline::JobRunner>(services, resolve, copts, std::move(job_options));
  services->jobs = jobs.get();
  jobs->start();
  // general_settings.background_health_checks: rounds on their own thread; GET /health answers
  // from the last one (pipeline/health_monitor.hpp). Stopped when the drain begins.
  auto health = std::make_shared<pipeline::HealthMonitor>([live] { return live->current(); }, copts);
  gateway->set_health_monitor(health);
  if (cfg->general_settings.background_health_checks) health->start();

  // Signals, on a dedicated context so workers never handle them (docs/operations.md): the first
  // SIGTERM/SIGINT makes readiness 503 at once and wakes the drain below; a second cuts the
  // drain short (requests in flight are cut now); a third stops without waiting for the cut.
  struct StopRequests {
    std::mutex mu;
    std::condition_variable cv;
    int count = 0;
  } stops;
  boost::asio::io_context signal_ioc;
  boost::asio::signal_set signals(signal_ioc, SIGINT, SIGTERM);
  std::function<void()> arm_signals = [&] {
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      int n = 0;
      {
        std::lock_guard lk(stops.mu);
        n = ++stops.count;
      }
      if (n == 1) {
        gateway->set_draining();
      } else if (n == 2) {
        spdlog::warn("signal {} again: cutting the drain short", sig);
        server.hurry();
      } else {
        spdlog::warn("signal {} a third time: stopping now", sig);
        server.stop();
      }
      stops.cv.notify_all();
      arm_signals();
    });
  };
  arm_signals();
  // SIGHUP re-reads the config file (docs/config.md "Reloading"); a bad file is refused and logged.
  boost::asio::signal_set hangups(signal_ioc, SIGHUP);
  std::function<void()> arm_hangups = [&] {
    hangups.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      if (reloader) {
        spdlog::info("SIGHUP: reloading {}", cfg->source_path);
        (void)reloader->reload_file();
      } else {
        spdlog::warn("SIGHUP: the config file {} cannot be read: nothing to reload", cfg->source_path);
      }
      arm_hangups();
    });
  };
  arm_hangups();
  // Budget windows that ended are forgotten once a minute (the ledger stays as large as its
  // current windows, whatever the number of distinct callers over time).
  boost::asio::steady_timer sweep(signal_ioc);
  std::function<void()> arm_sweep = [&] {
    sweep.expires_after(std::chrono::seconds(60));
    sweep.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (const auto n = live->current()->ledger->forget_ended(std::chrono::system_clock::now()))
        spdlog::debug("ledger: forgot {} scope(s) of ended windows", n);
      arm_sweep();
    });
  };
  arm_sweep();
  start_idle_trim(signal_ioc, [&server] { return server.in_flight(); });
  std::thread signal_thread([&signal_ioc] { signal_ioc.run(); });
  std::signal(SIGPIPE, SIG_IGN);

  const std::string shown_host = options.host;
  // "listening on" is printed once every worker has its upstream pool (loading the CA store
  // takes ~100 ms): from then on a request is answered, not left waiting in the backlog.
  std::atomic<int> ready{0};
  auto announce = [&] {
    std::printf("listening on http://%s:%u\n", shown_host.c_str(), static_cast<unsigned>(port));
    std::fflush(stdout);
    spdlog::info("tollgate serving {} model group(s) on {}:{} with {} worker thread(s)", cfg->model_groups().size(),
                 options.host, port, threads);
  };

  server.start([copts, &ready, &announce, threads, redis_client](boost::asio::io_context& ioc) {
    // One upstream pool per worker thread, alive for the thread's lifetime; so is its Redis
    // connection (reservations and settlements go out on it from this thread's event loop).
    thread_local std::unique_ptr<http::UpstreamPool> pool;
    thread_local std::unique_ptr<store::redis::IoConnection> redis;
    if (redis_client) redis = redis_client->attach(ioc);
    try {
      pool = std::make_unique<http::UpstreamPool>(ioc, copts);
    } catch (const std::exception& e) {
      spdlog::critical("cannot set up the upstream client (TLS CA store): {}", e.what());
      std::exit(1);
    }
    http::UpstreamPool::install(pool.get());
    // Ledger records this thread's requests append in one turn of its loop are written together
    // (docs/storage.md "Ledger journal").
    store::journal::batch_appends_on_this_thread(
        [&ioc](std::function<void()> fn) { boost::asio::post(ioc, std::move(fn)); });
    if (++ready == threads) announce();
  });

  // Rolling restarts (docs/operations.md "Rolling restarts"): wait for a stop signal, then drain.
  int signal_count = 0;
  {
    std::unique_lock lk(stops.mu);
    stops.cv.wait(lk, [&] { return stops.count > 0; });
    signal_count = stops.count;
  }
  const auto drain_start = std::chrono::steady_clock::now();
  const auto deadline = drain_start + ts.drain_timeout;
  const auto in_flight = server.begin_drain();
  jobs->begin_drain();
  health->stop();  // no new round; one in flight is cut and settles by its evidence
  spdlog::info("draining: readiness answers 503 and the listener is closed; {} request(s) in flight, waiting up to {} ms "
               "(drain_timeout_ms)",
               in_flight, ts.drain_timeout.count());
  if (signal_count > 1) server.hurry();
  const auto report = server.finish_drain(deadline);
  refresher->stop();  // answers a refused key still waiting, while the workers' contexts exist
  if (reloader) reloader->stop();
  gateway->finish_admin();
  {
    std::lock_guard lk(stops.mu);
    signal_count = stops.count;
  }
  // A deferred job in flight gets what is left of the drain (nothing after a second signal).
  jobs->stop(signal_count > 1 ? std::chrono::steady_clock::now() : deadline);
  services->jobs = nullptr;
  live->current()->jobs = nullptr;  // a reloaded snapshot copied the pointer too
  // Every reservation is settled by now (the runs ended, or their frames were destroyed by
  // the joins above): make the settle records and spend-log rows durable before exiting.
  const bool flushed = db->flush();
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - drain_start);
  spdlog::info("drain done: drained {}, cut {}, elapsed {} ms{}{}", report.drained, report.cut, elapsed.count(),
               report.abandoned ? fmt::format(", {} connection(s) abandoned", report.abandoned) : std::string(),
               flushed ? "" : "; the store could not flush its last writes (ledger recovery settles them at the next start)");
  signal_ioc.stop();
  signal_thread.join();
  return 0;
}

}  // namespace tollgate::app
