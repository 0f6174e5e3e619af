#include "policy/circuit.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "policy/failure.hpp"

namespace tollgate::policy {

std::string_view to_string(CircuitState s) {
  switch (s) {
    case CircuitState::closed: return "closed";
    case CircuitState::open: return "open";
    case CircuitState::half_open: return "half_open";
  }
  return "closed";
}

/// The registry's internals; all of them run with `mu_` held, and collect transitions in `out`
/// to be reported after the lock is released.
struct CircuitsImpl {
  using Breaker = Circuits::Breaker;
  using Slot = Circuits::Slot;
  using Out = std::vector<CircuitTransition>;
  using SteadyTime = core::SteadyTime;

  static constexpr int kSlots = 60;

  static const CircuitSettings& settings(const Circuits& c, std::size_t d) {
    static const CircuitSettings kDefault;
    return d < c.setup_.deployment_settings.size() ? c.setup_.deployment_settings[d] : kDefault;
  }
  static const std::string& provider_of(const Circuits& c, std::size_t d) {
    static const std::string kNone;
    return d < c.setup_.deployment_providers.size() ? c.setup_.deployment_providers[d] : kNone;
  }
  static const std::string& id_of(const Circuits& c, std::size_t d) {
    static const std::string kNone;
    return d < c.setup_.deployment_ids.size() ? c.setup_.deployment_ids[d] : kNone;
  }
  static FeatureCircuitSettings feature_settings(const Circuits& c, const std::string& group) {
    auto it = c.setup_.feature_settings.find(group);
    return it == c.setup_.feature_settings.end() ? FeatureCircuitSettings{} : it->second;
  }
  /// The provider's breaker, or null when the deployment has no provider circuit.
  static Breaker* provider_breaker(const Circuits& c, std::size_t d) {
    const std::string& p = provider_of(c, d);
    if (p.empty()) return nullptr;
    return &c.providers_[p];
  }

  static void transition(Out& out, const char* scope, const std::string& id, CircuitState from, CircuitState to,
                         std::string reason) {
    out.push_back(CircuitTransition{scope, id, from, to, std::move(reason)});
  }

  /// Open → half-open once the cooldown has passed (lazily, whenever the breaker is looked at).
  static void refresh(Breaker& b, SteadyTime now, const char* scope, const std::string& id, Out& out) {
    if (b.state == CircuitState::half_open && b.probe_out && now - b.probe_since >= kProbeLease) b.probe_out = false;
    if (b.state == CircuitState::open && now >= b.open_until) {
      b.state = CircuitState::half_open;
      b.probe_out = false;
      transition(out, scope, id, CircuitState::open, CircuitState::half_open, "cooldown elapsed");
    }
  }

  /// Opens (or keeps open, extending the cooldown) a breaker. Returns whether it changed state.
  static bool open(Breaker& b, SteadyTime now, milliseconds cooldown, std::string reason, const char* scope,
                   const std::string& id, Out& out) {
    const SteadyTime until = now + std::max(cooldown, milliseconds{0});
    if (b.state == CircuitState::open) {
      if (until > b.open_until) b.open_until = until;
      b.reason = std::move(reason);
      return false;
    }
    const CircuitState from = b.state;
    b.state = CircuitState::open;
    b.open_until = until;
    b.probe_out = false;
    b.reason = reason;
    ++b.opened_total;
    transition(out, scope, id, from, CircuitState::open, std::move(reason));
    out.back().open_for = std::max(cooldown, milliseconds{0});
    return true;
  }

  static void close(Breaker& b, std::string reason, const char* scope, const std::string& id, Out& out) {
    if (b.state == CircuitState::closed) return;
    const CircuitState from = b.state;
    b.state = CircuitState::closed;
    b.probe_out = false;
    b.consecutive = 0;
    b.consecutive_by_class = {};
    b.window.clear();  // a fresh start: old failures do not reopen a recovered circuit
    transition(out, scope, id, from, CircuitState::closed, std::move(reason));
  }

  static std::chrono::nanoseconds slot_width(const CircuitSettings& s) {
    const auto w = std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(s.window, milliseconds{1})) / kSlots;
    return std::max<std::chrono::nanoseconds>(w, milliseconds{1});
  }
  static std::int64_t slot_count(const CircuitSettings& s) {
    const auto w = slot_width(s);
    const auto win = std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(s.window, milliseconds{1}));
    return std::max<std::int64_t>(1, (win.count() + w.count() - 1) / w.count());
  }
  static std::int64_t slot_index(const CircuitSettings& s, SteadyTime now) {
    return now.time_since_epoch() / slot_width(s);
  }
  static void prune(Breaker& b, const CircuitSettings& s, SteadyTime now) {
    const std::int64_t oldest = slot_index(s, now) - slot_count(s) + 1;
    while (!b.window.empty() && b.window.front().index < oldest) b.window.pop_front();
  }
  static void record(Breaker& b, const CircuitSettings& s, SteadyTime now, bool failed) {
    prune(b, s, now);
    const std::int64_t i = slot_index(s, now);
    if (b.window.empty() || b.window.back().index != i) b.window.push_back(Slot{i, 0, 0});
    ++b.window.back().requests;
    if (failed) ++b.window.back().failures;
  }
  static std::pair<int, int> counts(Breaker& b, const CircuitSettings& s, SteadyTime now) {
    prune(b, s, now);
    int req = 0, fail = 0;
    for (const Slot& sl : b.window) {
      req += sl.requests;
      fail += sl.failures;
    }
    return {req, fail};
  }

  static void refresh_deployment(const Circuits& c, std::size_t d, SteadyTime now, Out& out) {
    refresh(c.deployments_[d], now, "deployment", id_of(c, d), out);
  }
  static void refresh_provider(const Circuits& c, std::size_t d, SteadyTime now, Out& out) {
    if (Breaker* p = provider_breaker(c, d)) refresh(*p, now, "provider", provider_of(c, d), out);
  }

  /// After one of `provider`'s deployments opened: opens the provider when at least open_ratio
  /// of its deployments are not closed and it has at least min_deployments.
  static void check_provider(const Circuits& c, const std::string& provider, SteadyTime now, Out& out) {
    if (provider.empty()) return;
    Breaker& pb = c.providers_[provider];
    refresh(pb, now, "provider", provider, out);
    if (pb.state == CircuitState::open) return;
    int total = 0, down = 0;
    for (std::size_t d = 0; d < c.deployments_.size(); ++d) {
      if (provider_of(c, d) != provider) continue;
      ++total;
      refresh_deployment(c, d, now, out);
      if (c.deployments_[d].state != CircuitState::closed) ++down;
    }
    const config::ProviderCircuitConfig& pc = c.setup_.provider;
    if (total == 0 || total < pc.min_deployments || down == 0) return;
    if (static_cast<double>(down) + 1e-9 < pc.open_ratio * static_cast<double>(total)) return;
    open(pb, now, pc.cooldown, std::to_string(down) + " of " + std::to_string(total) + " deployments open", "provider",
         provider, out);
  }

  /// Opens deployment `d` and re-checks its provider.
  static void open_deployment(const Circuits& c, std::size_t d, SteadyTime now, std::string reason, Out& out) {
    if (open(c.deployments_[d], now, settings(c, d).cooldown, std::move(reason), "deployment", id_of(c, d), out))
      check_provider(c, provider_of(c, d), now, out);
  }

  /// A sent attempt that shows the deployment works (a success, or a failure that is not its fault).
  static void healthy(const Circuits& c, std::size_t d, SteadyTime now, Out& out) {
    refresh_provider(c, d, now, out);
    refresh_deployment(c, d, now, out);
    Breaker& b = c.deployments_[d];
    record(b, settings(c, d), now, false);
    b.consecutive = 0;
    b.consecutive_by_class = {};
    if (b.state == CircuitState::half_open) close(b, "probe succeeded", "deployment", id_of(c, d), out);
    if (Breaker* p = provider_breaker(c, d); p && p->state == CircuitState::half_open)
      close(*p, "probe succeeded on " + id_of(c, d), "provider", provider_of(c, d), out);
  }

  static void failed(const Circuits& c, std::size_t d, config::FailureClass cls, SteadyTime now, Out& out) {
    refresh_provider(c, d, now, out);
    refresh_deployment(c, d, now, out);
    const CircuitSettings& s = settings(c, d);
    Breaker& b = c.deployments_[d];
    record(b, s, now, true);
    const auto k = static_cast<std::size_t>(cls);
    const std::optional<int> own = s.class_allowed_fails[k];
    if (own) ++b.consecutive_by_class[k];
    else ++b.consecutive;

    if (Breaker* p = provider_breaker(c, d)) {
      const std::string& provider = provider_of(c, d);
      if (cls == config::FailureClass::commercial_limit) {
        open(*p, now, c.setup_.provider.commercial_limit_cooldown, "commercial_limit", "provider", provider, out);
      } else if (p->state == CircuitState::half_open && p->probe_out && p->probe_deployment == d) {
        open(*p, now, c.setup_.provider.cooldown, "probe failed on " + id_of(c, d), "provider", provider, out);
      }
    }

    switch (b.state) {
      case CircuitState::half_open:
        open_deployment(c, d, now, "probe failed", out);
        break;
      case CircuitState::open:
        break;  // a late report of an attempt sent before the circuit opened
      case CircuitState::closed: {
        if (own && b.consecutive_by_class[k] > *own) {
          open_deployment(c, d, now,
                          std::to_string(b.consecutive_by_class[k]) + " consecutive " +
                              std::string(config::to_string(cls)) + " failures (allowed_fails_policy)",
                          out);
          break;
        }
        if (!own && b.consecutive >= std::max(1, s.consecutive_failures)) {
          open_deployment(c, d, now, std::to_string(b.consecutive) + " consecutive failures", out);
          break;
        }
        if (s.failure_ratio > 0) {
          auto [req, fail] = counts(b, s, now);
          if (req >= std::max(1, s.min_requests) &&
              static_cast<double>(fail) + 1e-9 >= s.failure_ratio * static_cast<double>(req)) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "failure ratio %.2f over %lld ms",
                          static_cast<double>(fail) / static_cast<double>(req), static_cast<long long>(s.window.count()));
            open_deployment(c, d, now, buf, out);
          }
        }
        break;
      }
    }
  }

  /// The permit acquire() would give; with `take`, takes it (marks the probe as out).
  static Permit permit(const Circuits& c, std::size_t d, SteadyTime now, bool take, Out& out) {
    refresh_provider(c, d, now, out);
    refresh_deployment(c, d, now, out);
    Breaker* p = provider_breaker(c, d);
    Breaker& b = c.deployments_[d];
    if (p) {
      if (p->state == CircuitState::open) return Permit::denied;
      if (p->state == CircuitState::half_open && p->probe_out) return Permit::denied;
    }
    if (b.state == CircuitState::open) return Permit::denied;
    if (b.state == CircuitState::half_open && b.probe_out) return Permit::denied;
    const bool provider_probe = p && p->state == CircuitState::half_open;
    const bool deployment_probe = b.state == CircuitState::half_open;
    if (take) {
      if (provider_probe) {
        p->probe_out = true;
        p->probe_since = now;
        p->probe_deployment = d;
      }
      if (deployment_probe) {
        b.probe_out = true;
        b.probe_since = now;
      }
    }
    return provider_probe || deployment_probe ? Permit::probe : Permit::closed;
  }

  static CircuitView view(const char* scope, const std::string& id, const Breaker& b, SteadyTime now, int req,
                          int fail) {
    CircuitView v;
    v.scope = scope;
    v.id = id;
    v.state = b.state;
    v.consecutive_failures = b.consecutive;
    v.window_requests = req;
    v.window_failures = fail;
    if (b.state == CircuitState::open && b.open_until > now) {
      const auto left = b.open_until - now;
      v.retry_in_ms = std::chrono::ceil<milliseconds>(left).count();
    }
    v.reason = b.reason;
    v.opened_total = b.opened_total;
    return v;
  }

  static void emit(const Circuits& c, const Out& out) {
    if (!c.on_transition_) return;
    for (const CircuitTransition& t : out) c.on_transition_(t);
  }
};

namespace {

const config::GroupPolicyConfig* find_group(const config::FallbackPolicyConfig& fp, std::string_view group) {
  for (const config::GroupPolicyConfig& g : fp.model_groups)
    if (g.group == group) return &g;
  return nullptr;
}

void apply(CircuitSettings& s, const config::CircuitConfig& c) {
  if (c.consecutive_failures) s.consecutive_failures = *c.consecutive_failures;
  if (c.failure_ratio) s.failure_ratio = *c.failure_ratio;
  if (c.window) s.window = *c.window;
  if (c.min_requests) s.min_requests = *c.min_requests;
  if (c.cooldown) s.cooldown = *c.cooldown;
}

void apply(FeatureCircuitSettings& s, const config::FeatureCircuitConfig& c) {
  if (c.consecutive_failures) s.consecutive_failures = *c.consecutive_failures;
  if (c.cooldown) s.cooldown = *c.cooldown;
}

bool configured(const config::FeatureCircuitConfig& c) { return c.consecutive_failures || c.cooldown; }

}  // namespace

Circuits::Setup Circuits::setup_from(const config::Config& cfg) {
  const config::FallbackPolicyConfig& fp = cfg.fallback_policy;
  Setup s;
  s.provider = fp.provider_circuit;

  CircuitSettings base;
  base.consecutive_failures = std::max(1, cfg.router_settings.allowed_fails + 1);
  base.cooldown = cfg.router_settings.cooldown_time;
  base.class_allowed_fails = cfg.router_settings.allowed_fails_policy;
  base.failure_ratio = 0;
  base.window = milliseconds{60000};
  base.min_requests = 20;
  apply(base, fp.defaults.circuit);

  for (const config::Deployment& d : cfg.model_list) {
    s.deployment_ids.push_back(d.id);
    s.deployment_groups.push_back(d.model_name);
    // A deployment that cannot be called never fails or recovers: it does not count in its
    // provider's circuit (it would keep the provider from ever opening).
    s.deployment_providers.push_back(d.provider == config::ProviderKind::unsupported ? std::string() : d.provider_prefix);
    CircuitSettings cs = base;
    if (const config::GroupPolicyConfig* g = find_group(fp, d.model_name)) apply(cs, g->circuit);
    s.deployment_settings.push_back(cs);
  }

  // Feature circuits: every group with a degradation mode or a feature_circuit section (its own
  // or the defaults').
  std::vector<std::string> groups = cfg.model_groups();
  for (const config::GroupPolicyConfig& g : fp.model_groups)
    if (std::find(groups.begin(), groups.end(), g.group) == groups.end()) groups.push_back(g.group);
  for (const std::string& group : groups) {
    const config::GroupPolicyConfig* g = find_group(fp, group);
    const std::optional<config::DegradationConfig>& deg = g && g->degradation ? g->degradation : fp.defaults.degradation;
    const bool has_degradation = deg && deg->mode != config::DegradationMode::none;
    const bool has_feature = configured(fp.defaults.feature_circuit) || (g && configured(g->feature_circuit));
    if (!has_degradation && !has_feature) continue;
    FeatureCircuitSettings fs;
    apply(fs, fp.defaults.feature_circuit);
    if (g) apply(fs, g->feature_circuit);
    s.feature_settings.emplace(group, fs);
  }
  return s;
}

Circuits::Circuits(Setup setup, const core::Clock& clock, std::function<void(const CircuitTransition&)> on_transition)
    : setup_(std::move(setup)), clock_(clock), on_transition_(std::move(on_transition)) {
  deployments_.resize(setup_.deployment_ids.size());
  for (const std::string& p : setup_.deployment_providers)
    if (!p.empty()) providers_[p];
  for (const auto& [group, fs] : setup_.feature_settings) features_[group];
}

Circuits::Circuits(Setup setup, const Circuits& previous)
    : Circuits(std::move(setup), previous.clock_, previous.on_transition_) {
  std::lock_guard lk(previous.mu_);
  probe_gate_ = previous.probe_gate_;
  auto carried = [](const Breaker& b) {
    Breaker out = b;
    out.probe_out = false;
    return out;
  };
  std::unordered_map<std::string_view, std::size_t> old_index;
  for (std::size_t i = 0; i < previous.setup_.deployment_ids.size() && i < previous.deployments_.size(); ++i)
    old_index.emplace(previous.setup_.deployment_ids[i], i);
  for (std::size_t i = 0; i < setup_.deployment_ids.size(); ++i)
    if (auto it = old_index.find(setup_.deployment_ids[i]); it != old_index.end())
      deployments_[i] = carried(previous.deployments_[it->second]);
  for (const auto& [name, b] : previous.providers_)
    if (auto it = providers_.find(name); it != providers_.end()) it->second = carried(b);
  for (const auto& [name, b] : previous.features_)
    if (auto it = features_.find(name); it != features_.end()) it->second = carried(b);
}

bool Circuits::available(std::size_t deployment) const {
  if (deployment >= deployments_.size()) return true;  // no circuit for an unknown deployment
  std::vector<CircuitTransition> out;
  bool ok;
  {
    std::lock_guard lk(mu_);
    ok = CircuitsImpl::permit(*this, deployment, clock_.now(), false, out) != Permit::denied;
  }
  CircuitsImpl::emit(*this, out);
  return ok;
}

Permit Circuits::acquire(std::size_t deployment) {
  if (deployment >= deployments_.size()) return Permit::closed;
  std::vector<CircuitTransition> out;
  Permit p;
  {
    std::lock_guard lk(mu_);
    p = CircuitsImpl::permit(*this, deployment, clock_.now(), true, out);
  }
  CircuitsImpl::emit(*this, out);
  // The probe slot stays taken when another instance carries the probe: no second ask until its
  // result arrives or the probe lease passes.
  if (p == Permit::probe && probe_gate_ && !probe_gate_("deployment", CircuitsImpl::id_of(*this, deployment)))
    return Permit::denied;
  return p;
}

void Circuits::set_probe_gate(std::function<bool(const std::string&, const std::string&)> gate) {
  probe_gate_ = std::move(gate);
}

void Circuits::close_remote(const std::string& scope, const std::string& id) {
  apply_remote(scope, id, [](Breaker& b, core::SteadyTime, const char* sc, const std::string& i, std::vector<CircuitTransition>& out) {
    CircuitsImpl::close(b, "probe succeeded on another instance", sc, i, out);
  });
}
void Circuits::release(std::size_t deployment, Permit permit) {
  if (permit != Permit::probe || deployment >= deployments_.size()) return;
  std::lock_guard lk(mu_);
  Breaker& b = deployments_[deployment];
  if (b.state == CircuitState::half_open) b.probe_out = false;
  if (Breaker* p = CircuitsImpl::provider_breaker(*this, deployment);
      p && p->state == CircuitState::half_open && p->probe_out && p->probe_deployment == deployment)
    p->probe_out = false;
}

void Circuits::on_success(std::size_t deployment) {
  if (deployment >= deployments_.size()) return;
  std::vector<CircuitTransition> out;
  {
    std::lock_guard lk(mu_);
    CircuitsImpl::healthy(*this, deployment, clock_.now(), out);
  }
  CircuitsImpl::emit(*this, out);
}

void Circuits::on_failure(std::size_t deployment, config::FailureClass cls) {
  if (deployment >= deployments_.size()) return;
  std::vector<CircuitTransition> out;
  {
    std::lock_guard lk(mu_);
    if (counts_against_deployment(cls))
      CircuitsImpl::failed(*this, deployment, cls, clock_.now(), out);
    else
      CircuitsImpl::healthy(*this, deployment, clock_.now(), out);
  }
  CircuitsImpl::emit(*this, out);
}

void Circuits::open_deployment(std::size_t deployment, const std::string& reason) {
  if (deployment >= deployments_.size()) return;
  std::vector<CircuitTransition> out;
  {
    std::lock_guard lk(mu_);
    const auto now = clock_.now();
    CircuitsImpl::refresh_provider(*this, deployment, now, out);
    CircuitsImpl::refresh_deployment(*this, deployment, now, out);
    CircuitsImpl::open_deployment(*this, deployment, now, reason, out);
  }
  CircuitsImpl::emit(*this, out);
}

void Circuits::open_provider(const std::string& provider, const std::string& reason, milliseconds cooldown) {
  if (provider.empty()) return;
  std::vector<CircuitTransition> out;
  {
    std::lock_guard lk(mu_);
    const auto now = clock_.now();
    Breaker& b = providers_[provider];
    CircuitsImpl::refresh(b, now, "provider", provider, out);
    CircuitsImpl::open(b, now, cooldown, reason, "provider", provider, out);
  }
  CircuitsImpl::emit(*this, out);
}

void Circuits::open_remote(const std::string& scope, const std::string& id, const std::string& reason,
                           milliseconds remaining) {
  const std::string why = "opened on another instance: " + reason;
  apply_remote(scope, id, [&](Breaker& b, core::SteadyTime now, const char* sc, const std::string& i, std::vector<CircuitTransition>& out) {
    CircuitsImpl::open(b, now, remaining, why, sc, i, out);
  });
}

void Circuits::apply_remote(const std::string& scope, const std::string& id,
                            const std::function<void(Breaker&, core::SteadyTime, const char*, const std::string&,
                                                     std::vector<CircuitTransition>&)>& change) {
  std::vector<CircuitTransition> out;
  {
    std::lock_guard lk(mu_);
    Breaker* b = nullptr;
    const char* sc = nullptr;
    if (scope == "deployment") {
      const auto& ids = setup_.deployment_ids;
      const auto it = std::find(ids.begin(), ids.end(), id);
      if (it != ids.end()) b = &deployments_[static_cast<std::size_t>(it - ids.begin())], sc = "deployment";
    } else if (scope == "provider") {
      b = &providers_[id], sc = "provider";  // a provider is known by name alone
    } else if (scope == "feature") {
      if (auto it = features_.find(id); it != features_.end()) b = &it->second, sc = "feature";
    }
    if (b == nullptr) return;  // an unknown id or scope
    const auto now = clock_.now();
    CircuitsImpl::refresh(*b, now, sc, id, out);
    change(*b, now, sc, id, out);
  }
  for (auto& t : out) t.remote = true;
  CircuitsImpl::emit(*this, out);
}
CircuitState Circuits::deployment_state(std::size_t deployment) const {
  if (deployment >= deployments_.size()) return CircuitState::closed;
  std::vector<CircuitTransition> out;
  CircuitState s;
  {
    std::lock_guard lk(mu_);
    CircuitsImpl::refresh_deployment(*this, deployment, clock_.now(), out);
    s = deployments_[deployment].state;
  }
  CircuitsImpl::emit(*this, out);
  return s;
}

CircuitState Circuits::provider_state(const std::string& provider) const {
  std::vector<CircuitTransition> out;
  CircuitState s = CircuitState::closed;
  {
    std::lock_guard lk(mu_);
    auto it = providers_.find(provider);
    if (it != providers_.end()) {
      CircuitsImpl::refresh(it->second, clock_.now(), "provider", provider, out);
      s = it->second.state;
    }
  }
  CircuitsImpl::emit(*this, out);
  return s;
}

Permit Circuits::acquire_feature(const std::string& group) {
  std::vector<CircuitTransition> out;
  Permit p = Permit::closed;
  {
    std::lock_guard lk(mu_);
    auto it = features_.find(group);
    if (it != features_.end()) {
      Breaker& b = it->second;
      CircuitsImpl::refresh(b, clock_.now(), "feature", group, out);
      switch (b.state) {
        case CircuitState::closed: p = Permit::closed; break;
        case CircuitState::open: p = Permit::denied; break;
        case CircuitState::half_open:
          if (b.probe_out) {
            p = Permit::denied;
          } else {
            b.probe_out = true;
            b.probe_since = clock_.now();
            p = Permit::probe;
          }
          break;
      }
    }
    // A group never seen and never configured is closed; its breaker appears with its first result.
  }
  CircuitsImpl::emit(*this, out);
  return p;
}

void Circuits::release_feature(const std::string& group, Permit permit) {
  if (permit != Permit::probe) return;
  std::lock_guard lk(mu_);
  auto it = features_.find(group);
  if (it != features_.end()) it->second.probe_out = false;
}

void Circuits::on_feature_result(const std::string& group, bool met_budget, Permit permit) {
  if (permit == Permit::denied) return;  // the request did not take the normal path
  std::vector<CircuitTransition> out;
  {
    std::lock_guard lk(mu_);
    const auto now = clock_.now();
    Breaker& b = features_[group];
    CircuitsImpl::refresh(b, now, "feature", group, out);
    const FeatureCircuitSettings s = CircuitsImpl::feature_settings(*this, group);
    if (met_budget) {
      b.consecutive = 0;
      if (b.state == CircuitState::half_open) CircuitsImpl::close(b, "probe met its budget", "feature", group, out);
    } else {
      ++b.consecutive;
      if (b.state == CircuitState::half_open && permit == Permit::probe) {
        CircuitsImpl::open(b, now, s.cooldown, "probe missed its budget", "feature", group, out);
      } else if (b.state == CircuitState::closed && b.consecutive >= std::max(1, s.consecutive_failures)) {
        CircuitsImpl::open(b, now, s.cooldown, std::to_string(b.consecutive) + " requests in a row missed their budget",
                           "feature", group, out);
      }
    }
  }
  CircuitsImpl::emit(*this, out);
}

CircuitState Circuits::feature_state(const std::string& group) const {
  std::vector<CircuitTransition> out;
  CircuitState s = CircuitState::closed;
  {
    std::lock_guard lk(mu_);
    auto it = features_.find(group);
    if (it != features_.end()) {
      CircuitsImpl::refresh(it->second, clock_.now(), "feature", group, out);
      s = it->second.state;
    }
  }
  CircuitsImpl::emit(*this, out);
  return s;
}

std::vector<CircuitView> Circuits::snapshot() const {
  std::vector<CircuitTransition> out;
  std::vector<CircuitView> views;
  {
    std::lock_guard lk(mu_);
    const auto now = clock_.now();
    for (std::size_t d = 0; d < deployments_.size(); ++d) {
      CircuitsImpl::refresh_deployment(*this, d, now, out);
      auto [req, fail] = CircuitsImpl::counts(deployments_[d], CircuitsImpl::settings(*this, d), now);
      views.push_back(CircuitsImpl::view("deployment", CircuitsImpl::id_of(*this, d), deployments_[d], now, req, fail));
    }
    // Providers in order of first appearance in model_list, then any other (opened by name), by name.
    std::vector<std::string> providers;
    for (const std::string& p : setup_.deployment_providers)
      if (!p.empty() && std::find(providers.begin(), providers.end(), p) == providers.end()) providers.push_back(p);
    std::set<std::string> extra;
    for (const auto& [p, b] : providers_)
      if (std::find(providers.begin(), providers.end(), p) == providers.end()) extra.insert(p);
    providers.insert(providers.end(), extra.begin(), extra.end());
    for (const std::string& p : providers) {
      Breaker& b = providers_[p];
      CircuitsImpl::refresh(b, now, "provider", p, out);
      views.push_back(CircuitsImpl::view("provider", p, b, now, 0, 0));
    }
    std::set<std::string> groups;
    for (const auto& [g, b] : features_) groups.insert(g);
    for (const std::string& g : groups) {
      Breaker& b = features_[g];
      CircuitsImpl::refresh(b, now, "feature", g, out);
      views.push_back(CircuitsImpl::view("feature", g, b, now, 0, 0));
    }
  }
  CircuitsImpl::emit(*this, out);
  return views;
}

}  // namespace tollgate::policy
