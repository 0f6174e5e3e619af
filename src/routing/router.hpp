#pragma once
/// Model groups, deployment selection and fallback order (LiteLLM Router semantics).
///
/// A model group is every `model_list` entry sharing a `model_name`. Deployments are
/// identified by their index in Config::model_list. RouterState is the only mutable part:
/// per-deployment cooldowns, in-flight counts, latency and rpm/tpm usage. Thread-safe
/// (one small mutex, never held across I/O).

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "core/clock.hpp"
#include "policy/circuit.hpp"
#include "policy/failure.hpp"

namespace tollgate::routing {

using std::chrono::milliseconds;

/// Immutable index: group name → deployment indices (config order).
class ModelGroups {
 public:
  explicit ModelGroups(const config::Config& cfg);
  /// Deployment indices of `group`, or nullptr for an unknown group. An alias
  /// (router_settings.model_group_alias) is its group's, before any group of the same name; a
  /// name no group has is served by the most specific wildcard group that matches it
  /// (`openai/*` before `*`; config/wildcard.hpp), as in LiteLLM.
  const std::vector<std::size_t>* find(std::string_view group) const;
  /// The group an alias names, or `name` itself when it is no alias (aliases do not chain).
  std::string resolve_alias(std::string_view name) const;
  bool contains(std::string_view group) const { return find(group) != nullptr; }
  /// The configured group name that serves `name`: `name` itself for an exact group, the
  /// wildcard pattern for a name a wildcard serves, `name` when none does. Bounded label and
  /// key values (metrics, feature circuits) use it, never the caller's free-form name.
  std::string canonical(std::string_view name) const;

 private:
  std::unordered_map<std::string, std::vector<std::size_t>> groups_;
  std::unordered_map<std::string, std::string> aliases_;  ///< alias → group
  /// Wildcard group names, most specific first (config order among equals).
  std::vector<std::string> patterns_;
};

/// The targets `rules` (one of LiteLLM's fallback lists) gives `group`: its own rule, else the
/// `"*"` rule; nullptr when neither exists.
const std::vector<std::string>* fallback_rule_for(const std::vector<config::FallbackRule>& rules, std::string_view group);

/// The fallback list for a failure of class `cls` in `group` (LiteLLM's three lists):
/// context_overflow → `context_window_fallbacks[group]`; content_policy →
/// `content_policy_fallbacks[group]`; any other class → `fallbacks[group]` (or `fallbacks["*"]`)
/// followed by `default_fallbacks`. Whether the list is walked at all is the class's action's
/// decision (policy/failure.hpp). Duplicates and `group` itself are removed; no length cut here:
/// the request's fallback budget bounds how many are attempted.
std::vector<std::string> fallback_groups(const config::Config& cfg, std::string_view group, policy::FailureClass cls);

/// Live routing state of every deployment. Whether a deployment may be tried at all (its circuit,
/// and its provider's) is the policy::Circuits' decision; RouterState only asks.
class RouterState {
 public:
  /// `circuits` (may be null: every deployment is closed) must outlive this object.
  RouterState(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
              const policy::Circuits* circuits = nullptr);
  /// A reloaded config's routing state (config hot reload): as above, with `previous`'s
  /// per-deployment latency and rpm/tpm minute counts carried over by deployment id. In-flight
  /// counts start at 0: the attempts in flight report their end to `previous`.
  RouterState(std::shared_ptr<const config::Config> cfg, const core::Clock& clock, const policy::Circuits* circuits,
              const RouterState& previous);

  /// Chooses a deployment of `group` by the configured routing strategy, skipping deployments
  /// whose circuit (or provider circuit) is open and those at their rpm/tpm limit. Deployments in `avoid` (already tried by this
  /// request) are used only when nothing else is available; a deployment Tollgate cannot call
  /// only when the group has no callable one at all (and never twice). `random01` in [0,1) drives
  /// shuffles (injected for tests). nullopt when the group has no available deployment.
  /// `eligible` (may be null: every member): the members the request's routing constraints
  /// allow (routing/constraints.hpp); only those are chosen.
  std::optional<std::size_t> select(std::string_view group, const std::vector<std::size_t>& avoid,
                                    double random01, const std::vector<std::size_t>* eligible = nullptr);

  /// Records that an attempt on `deployment` started (least-busy, rpm).
  void on_attempt_start(std::size_t deployment);
  /// Records a finished attempt: latency of successes (latency-based routing) and tokens (tpm).
  void on_attempt_end(std::size_t deployment, bool failed, milliseconds latency, std::int64_t tokens);

  int in_flight(std::size_t deployment) const;

 private:
  struct Dep {
    int in_flight = 0;
    double latency_ewma_ms = -1;          // < 0: never measured
    long long minute = -1;
    std::int64_t minute_requests = 0;
    std::int64_t minute_tokens = 0;
  };
  bool available_locked(std::size_t i, core::SteadyTime now) const;
  void roll_minute_locked(Dep& d, core::SteadyTime now);

  std::shared_ptr<const config::Config> cfg_;
  const core::Clock& clock_;
  const policy::Circuits* circuits_;
  ModelGroups groups_;
  mutable std::mutex mu_;
  std::vector<Dep> deps_;
};

}  // namespace tollgate::routing
