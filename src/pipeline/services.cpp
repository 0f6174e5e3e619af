// Services::make (pipeline/attempt_loop.hpp): the per-process services of the pipeline, and the
// in-process ledger recovered from the durable store.

#include "pipeline/attempt_loop.hpp"

#include <spdlog/spdlog.h>

#include "budget/money.hpp"
#include "budget/price_file.hpp"
#include "cache/local_cache.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/budget_alerts.hpp"
#include "pipeline/process_metrics.hpp"
#include "pipeline/run_metrics.hpp"

namespace tollgate::pipeline {

using std::chrono::milliseconds;

std::shared_ptr<Services> Services::make(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
                                         std::shared_ptr<store::Store> store, SharedState shared) {
  auto s = std::make_shared<Services>();
  s->config = cfg;
  s->clock = &clock;
  s->groups = std::make_shared<const routing::ModelGroups>(*cfg);
  s->policies = std::make_shared<const policy::PolicySet>(*cfg);
  s->metrics = std::make_shared<telemetry::Registry>();
  s->alerts = std::make_shared<telemetry::Alerts>();
  s->circuits = std::make_shared<policy::Circuits>(policy::Circuits::setup_from(*cfg), clock,
                                                   [log = circuit_logger(s->metrics, s->alerts),
                                                    also = std::move(shared.on_circuit_transition)](
                                                       const policy::CircuitTransition& t) {
                                                     log(t);
                                                     if (also) also(t);
                                                   });
  s->router = std::make_shared<routing::RouterState>(cfg, clock, s->circuits.get());
  s->stale_cache = std::make_shared<policy::StaleCache>();
  if (cfg->litellm_settings.cache.enabled && cfg->litellm_settings.cache.type == config::CacheSettings::Type::local)
    s->response_cache = std::make_shared<cache::LocalResponseCache>(
        static_cast<std::size_t>(cfg->litellm_settings.cache.max_size_in_memory), clock);
  s->transport = std::make_shared<http::PooledTransport>();
  s->latest->config = cfg;
  s->latest->circuits = s->circuits;
  register_loop_metrics(*s);
  s->budget_alerts = std::make_shared<BudgetAlerts>();
  s->alerts->register_metrics(*s->metrics);
  if (shared.limits) s->limiter = std::move(shared.limits);
  else s->limiter = std::make_shared<policy::RateLimiter>(clock);
  {
    auto table = budget::load_effective_price_table(*cfg);
    if (!table) throw std::runtime_error(table.error());
    s->price_table = *table;
    s->prices.reserve(cfg->model_list.size());
    for (const auto& d : cfg->model_list) s->prices.push_back(budget::resolve_deployment_price(d, **table));
  }
  if (shared.ledger) {
    s->ledger = std::move(shared.ledger);
    s->store = std::move(store);
    watch_process(*s);
    return s;
  }
  budget::LedgerOptions lo;
  std::string tz_warning;
  lo.reset_timezone = budget::reset_timezone_or_utc(cfg->general_settings.budget_reset_timezone, &tz_warning);
  if (!tz_warning.empty()) spdlog::warn("general_settings.budget_reset_timezone: {}", tz_warning);
  std::optional<store::RecoveryResult> recovered;
  if (store) {
    const auto now = std::chrono::system_clock::now();
    const auto now_ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
    // A reservation left open by a crash is charged to the window that contains now, as a late
    // settle is in memory: both ledgers agree on every window after the restart.
    const auto tz = lo.reset_timezone;
    store::ScopeRoller roll = [tz](const store::LedgerScope& sc, std::int64_t at_ms) { return ledger_scope_at(sc, tz, at_ms); };
    auto r = store->recover_ledger(now_ms, roll);
    if (!r) throw std::runtime_error("cannot recover the spend ledger: " + r.error().message);
    lo.first_reservation_id = r->max_reservation_id + 1;
    if (!r->recovered.empty())
      spdlog::warn("ledger recovery: {} reservation(s) left open by an earlier run settled at their reserved amount",
                   r->recovered.size());
    recovered = std::move(*r);
  }
  auto local = std::make_unique<budget::Ledger>(lo);
  s->local_ledger = local.get();
  s->ledger = std::move(local);
  if (recovered) {
    const auto now_ms =
        std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const auto& sp : recovered->spent) {
      auto kind = budget::parse_scope_kind(sp.scope.kind);
      if (!kind) continue;
      // A window that has ended holds nothing admission needs: it is not loaded (memory stays
      // bounded by the scopes of current windows and lifetime budgets).
      if (sp.scope.window_end_ms != 0 && sp.scope.window_end_ms <= now_ms) continue;
      std::optional<budget::BudgetPeriod> period;
      if (!sp.scope.period.empty())
        if (auto p = budget::parse_budget_duration(sp.scope.period)) period = *p;
      const auto start = std::chrono::system_clock::time_point(milliseconds(sp.scope.window_start_ms));
      s->local_ledger->load(budget::ScopeId{*kind, sp.scope.id}, sp.spent_nanos,
                      sp.scope.window_start_ms == 0 ? budget::SystemTime{} : start, period);
    }
  }
  s->store = std::move(store);
  watch_process(*s);
  return s;
}

std::expected<std::shared_ptr<Services>, std::string> Services::next(const Services& running,
                                                                     std::shared_ptr<const config::Config> cfg) {
  auto table = budget::load_effective_price_table(*cfg);
  if (!table) return std::unexpected(table.error());
  auto s = std::make_shared<Services>(running);  // every process-wide component shared
  s->config = cfg;
  s->groups = std::make_shared<const routing::ModelGroups>(*cfg);
  s->policies = std::make_shared<const policy::PolicySet>(*cfg);
  s->circuits = std::make_shared<policy::Circuits>(policy::Circuits::setup_from(*cfg), *running.circuits);
  s->router = std::make_shared<routing::RouterState>(cfg, *s->clock, s->circuits.get(), *running.router);
  s->price_table = *table;
  s->prices.clear();
  s->prices.reserve(cfg->model_list.size());
  for (const auto& d : cfg->model_list) s->prices.push_back(budget::resolve_deployment_price(d, **table));
  {
    std::lock_guard lk(s->latest->mu);
    s->latest->config = cfg;
    s->latest->circuits = s->circuits;
  }
  return s;
}

}  // namespace tollgate::pipeline
