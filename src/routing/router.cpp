#include "routing/router.hpp"

#include <algorithm>
#include <limits>

#include "config/wildcard.hpp"

namespace tollgate::routing {

ModelGroups::ModelGroups(const config::Config& cfg) {
  for (std::size_t i = 0; i < cfg.model_list.size(); ++i) {
    const auto& name = cfg.model_list[i].model_name;
    auto& members = groups_[name];
    if (members.empty() && config::is_wildcard(name)) patterns_.push_back(name);
    members.push_back(i);
  }
  for (const auto& a : cfg.router_settings.model_group_alias) aliases_.emplace(a.alias, a.group);
  std::stable_sort(patterns_.begin(), patterns_.end(), [](const std::string& a, const std::string& b) {
    return config::wildcard_specificity(a) > config::wildcard_specificity(b);
  });
}

std::string ModelGroups::resolve_alias(std::string_view name) const {
  auto it = aliases_.find(std::string(name));
  return it != aliases_.end() ? it->second : std::string(name);
}

std::string ModelGroups::canonical(std::string_view input) const {
  const std::string name = resolve_alias(input);
  if (groups_.contains(name)) return name;
  for (const auto& p : patterns_)
    if (config::wildcard_capture(p, name)) return p;
  return std::string(name);
}

const std::vector<std::size_t>* ModelGroups::find(std::string_view input) const {
  const std::string group = resolve_alias(input);
  auto it = groups_.find(group);
  if (it != groups_.end()) return &it->second;
  for (const auto& p : patterns_)
    if (config::wildcard_capture(p, group)) return &groups_.find(p)->second;
  return nullptr;
}

const std::vector<std::string>* fallback_rule_for(const std::vector<config::FallbackRule>& rules, std::string_view group) {
  for (const auto& r : rules)
    if (r.from == group) return &r.to;
  for (const auto& r : rules)
    if (r.from == "*") return &r.to;
  return nullptr;
}

std::vector<std::string> fallback_groups(const config::Config& cfg, std::string_view group, policy::FailureClass cls) {
  std::vector<std::string> out;
  auto add = [&](const std::vector<std::string>* list) {
    if (!list) return;
    for (const auto& g : *list)
      if (g != group && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  };
  const auto& ls = cfg.litellm_settings;
  switch (cls) {
    case policy::FailureClass::context_overflow: add(fallback_rule_for(ls.context_window_fallbacks, group)); break;
    case policy::FailureClass::content_policy: add(fallback_rule_for(ls.content_policy_fallbacks, group)); break;
    default:
      add(fallback_rule_for(ls.fallbacks, group));
      add(&ls.default_fallbacks);
      break;
  }
  return out;
}

RouterState::RouterState(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
                         const policy::Circuits* circuits)
    : cfg_(std::move(cfg)), clock_(clock), circuits_(circuits), groups_(*cfg_), deps_(cfg_->model_list.size()) {}

RouterState::RouterState(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
                         const policy::Circuits* circuits, const RouterState& previous)
    : RouterState(std::move(cfg), clock, circuits) {
  std::lock_guard lk(previous.mu_);
  std::unordered_map<std::string_view, std::size_t> old_index;
  for (std::size_t i = 0; i < previous.cfg_->model_list.size() && i < previous.deps_.size(); ++i)
    old_index.emplace(previous.cfg_->model_list[i].id, i);
  for (std::size_t i = 0; i < cfg_->model_list.size(); ++i)
    if (auto it = old_index.find(cfg_->model_list[i].id); it != old_index.end()) {
      deps_[i] = previous.deps_[it->second];
      deps_[i].in_flight = 0;
    }
}

void RouterState::roll_minute_locked(Dep& d, core::SteadyTime now) {
  const long long minute =
      std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch()).count();
  if (minute != d.minute) {
    d.minute = minute;
    d.minute_requests = 0;
    d.minute_tokens = 0;
  }
}

bool RouterState::available_locked(std::size_t i, core::SteadyTime now) const {
  const Dep& d = deps_[i];
  if (circuits_ && !circuits_->available(i)) return false;
  const auto& dep = cfg_->model_list[i];
  const long long minute = std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch()).count();
  const bool same_minute = d.minute == minute;
  if (dep.rpm && same_minute && d.minute_requests >= *dep.rpm) return false;
  if (dep.tpm && same_minute && d.minute_tokens >= *dep.tpm) return false;
  return true;
}

std::optional<std::size_t> RouterState::select(std::string_view group, const std::vector<std::size_t>& avoid,
                                               double random01, const std::vector<std::size_t>* eligible) {
  const auto* members = eligible ? eligible : groups_.find(group);
  if (!members || members->empty()) return std::nullopt;
  const auto now = clock_.now();
  std::lock_guard lock(mu_);
  std::vector<std::size_t> fresh, tried, uncallable;
  bool has_callable = false;
  for (auto i : *members) {
    // A deployment Tollgate cannot call (provider not implemented, or unusable config) is chosen
    // only when the group has no callable deployment at all, available or not: a group whose
    // callable deployments are cooling down answers as they do (429/503), never with the 400.
    if (cfg_->model_list[i].provider == config::ProviderKind::unsupported) {
      if (std::find(avoid.begin(), avoid.end(), i) == avoid.end()) uncallable.push_back(i);
      continue;
    }
    has_callable = true;
    if (!available_locked(i, now)) continue;
    (std::find(avoid.begin(), avoid.end(), i) == avoid.end() ? fresh : tried).push_back(i);
  }
  if (has_callable) uncallable.clear();
  const auto& pool = !fresh.empty() ? fresh : !tried.empty() ? tried : uncallable;
  if (pool.empty()) return std::nullopt;
  if (pool.size() == 1) return pool.front();

  const auto pick_uniform = [&](const std::vector<std::size_t>& v) {
    auto k = static_cast<std::size_t>(random01 * static_cast<double>(v.size()));
    return v[std::min(k, v.size() - 1)];
  };
  // Among the best-scoring candidates (lower is better), pick uniformly.
  const auto pick_min = [&](auto score) {
    double best = std::numeric_limits<double>::infinity();
    std::vector<std::size_t> ties;
    for (auto i : pool) {
      const double s = score(i);
      if (s < best) {
        best = s;
        ties.assign(1, i);
      } else if (s == best) {
        ties.push_back(i);
      }
    }
    return pick_uniform(ties);
  };

  switch (cfg_->router_settings.routing_strategy) {
    case config::RoutingStrategy::least_busy:
      return pick_min([&](std::size_t i) { return static_cast<double>(deps_[i].in_flight); });
    case config::RoutingStrategy::latency_based:
      // Unmeasured deployments score 0 so each is explored once.
      return pick_min([&](std::size_t i) { return std::max(0.0, deps_[i].latency_ewma_ms); });
    case config::RoutingStrategy::usage_based:
      return pick_min([&](std::size_t i) {
        const auto& d = deps_[i];
        const auto tpm = cfg_->model_list[i].tpm;
        const double used = static_cast<double>(d.minute_tokens);
        return tpm && *tpm > 0 ? used / static_cast<double>(*tpm) : used;
      });
    case config::RoutingStrategy::simple_shuffle: {
      // Weighted by rpm when every candidate declares one (LiteLLM's simple-shuffle), else uniform.
      double total = 0;
      for (auto i : pool) {
        const auto& rpm = cfg_->model_list[i].rpm;
        if (!rpm || *rpm <= 0) return pick_uniform(pool);
        total += static_cast<double>(*rpm);
      }
      double x = random01 * total;
      for (auto i : pool) {
        x -= static_cast<double>(*cfg_->model_list[i].rpm);
        if (x < 0) return i;
      }
      return pool.back();
    }
  }
  return pick_uniform(pool);
}

void RouterState::on_attempt_start(std::size_t i) {
  const auto now = clock_.now();
  std::lock_guard lock(mu_);
  auto& d = deps_[i];
  roll_minute_locked(d, now);
  ++d.in_flight;
  ++d.minute_requests;
}

void RouterState::on_attempt_end(std::size_t i, bool failed, milliseconds latency, std::int64_t tokens) {
  const auto now = clock_.now();
  std::lock_guard lock(mu_);
  auto& d = deps_[i];
  d.in_flight = std::max(0, d.in_flight - 1);
  roll_minute_locked(d, now);
  // Saturating: a minute of absurd usage reports (10^15 tokens each) must not wrap the TPM count.
  d.minute_tokens = tokens > std::numeric_limits<std::int64_t>::max() - d.minute_tokens ? std::numeric_limits<std::int64_t>::max()
                                                                                        : d.minute_tokens + tokens;
  if (!failed) {
    const double ms = static_cast<double>(latency.count());
    d.latency_ewma_ms = d.latency_ewma_ms < 0 ? ms : 0.8 * d.latency_ewma_ms + 0.2 * ms;
  }
}

int RouterState::in_flight(std::size_t i) const {
  std::lock_guard lock(mu_);
  return deps_[i].in_flight;
}

}  // namespace tollgate::routing
