#pragma once
/// Circuits (seed 003, "Use circuits to stop cascading provider incidents"; issue 4 §4).
///
/// - Deployment circuit: opens after `consecutive_failures` failures in a row, or when the
///   failure ratio over `window` reaches `failure_ratio` with at least `min_requests` attempts;
///   stays open for `cooldown`; then half-open: exactly one probe attempt goes through; the
///   probe's success closes it, its failure opens it again for another cooldown.
/// - Provider circuit (a provider = a deployment's provider_prefix): opens when at least
///   `open_ratio` of the provider's deployments are open (and it has at least `min_deployments`),
///   or at once on a commercial limit (for `commercial_limit_cooldown`); while open, none of the
///   provider's deployments is tried; after its cooldown it is half-open: one probe.
/// - Feature circuit (per model group): opens after `consecutive_failures` requests in a row
///   missed their latency or cost budget (or found no admissible target); while open, requests go
///   straight to the group's degradation mode; half-open lets one request take the normal path.
///
/// A half-open probe that never reports (a bug, a crash of its request) is given up after
/// kProbeLease, so that a circuit cannot stay half-open for good; a probe that legitimately runs
/// longer (a long stream) may then see a second probe beside it.
///
/// Every transition is reported to the `on_transition` callback (logging, metrics). One mutex,
/// never held across I/O or while calling out (the callback runs after the lock is released).
/// Thread-safe.

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "config/policy.hpp"
#include "core/clock.hpp"

namespace tollgate::policy {

using std::chrono::milliseconds;

enum class CircuitState { closed, open, half_open };

/// How long a half-open probe may stay out before another one is let through.
inline constexpr std::chrono::milliseconds kProbeLease{60000};
std::string_view to_string(CircuitState s);

/// A deployment circuit's thresholds (resolved from fallback_policy + router_settings).
struct CircuitSettings {
  int consecutive_failures = 4;    ///< default: router_settings.allowed_fails + 1
  double failure_ratio = 0;        ///< 0 = ratio trigger off
  milliseconds window{60000};
  int min_requests = 20;
  milliseconds cooldown{5000};     ///< default: router_settings.cooldown_time
  /// Per failure class (router_settings.allowed_fails_policy): opens after more than this many
  /// failures of the class in a row; such failures do not count toward consecutive_failures.
  std::array<std::optional<int>, config::kFailureClassCount> class_allowed_fails{};
};

/// A feature (model group) circuit's thresholds.
struct FeatureCircuitSettings {
  int consecutive_failures = 5;
  milliseconds cooldown{30000};
};

/// What a caller may do with a deployment (or feature) right now.
enum class Permit {
  denied,  ///< open (or its provider is open), or half-open with the probe already out
  closed,  ///< closed: go
  probe,   ///< half-open: this caller carries the single probe and must report its outcome
};

/// A state change, for logs and metrics.
struct CircuitTransition {
  std::string scope;  ///< "deployment" | "provider" | "feature"
  std::string id;     ///< deployment id, provider name or model group
  CircuitState from = CircuitState::closed;
  CircuitState to = CircuitState::closed;
  std::string reason; ///< "4 consecutive failures", "failure ratio 0.60 over 60000 ms", "commercial_limit", "probe succeeded", ...
  /// to == open: how long until it turns half-open (its cooldown), milliseconds.
  milliseconds open_for{0};
  /// Applied from another instance (Circuits::open_remote), not decided here: a cluster observer
  /// must not publish it again.
  bool remote = false;
};

/// One circuit as shown at GET /tollgate/circuits and in metrics.
struct CircuitView {
  std::string scope;
  std::string id;
  CircuitState state = CircuitState::closed;
  int consecutive_failures = 0;
  int window_requests = 0;
  int window_failures = 0;
  std::int64_t retry_in_ms = 0;      ///< open: time until half-open; else 0
  std::string reason;                ///< why it last opened (empty if never)
  std::uint64_t opened_total = 0;    ///< how many times it opened
};

class Circuits {
 public:
  /// Everything the registry needs to know about the deployments (index = Config::model_list index).
  struct Setup {
    std::vector<std::string> deployment_ids;
    std::vector<std::string> deployment_groups;
    std::vector<std::string> deployment_providers;
    std::vector<CircuitSettings> deployment_settings;
    std::unordered_map<std::string, FeatureCircuitSettings> feature_settings;  ///< by model group
    config::ProviderCircuitConfig provider;
  };
  /// Builds the setup from a config: thresholds layered model_groups.<g>.circuit over
  /// defaults.circuit over router_settings (allowed_fails + 1, cooldown_time).
  static Setup setup_from(const config::Config& cfg);

  Circuits(Setup setup, const core::Clock& clock, std::function<void(const CircuitTransition&)> on_transition = {});
  /// A reloaded config's circuits (config hot reload): `previous`'s clock, transition observer and
  /// probe gate, and its state carried over — a deployment's breaker by deployment id (a
  /// deployment whose id is new starts closed), providers and feature circuits by name. A probe
  /// `previous` let out stays `previous`'s (its result is reported there): the carried breaker
  /// has no probe out. Locks `previous` while copying.
  Circuits(Setup setup, const Circuits& previous);

  /// Without side effects: whether acquire() would currently give a non-denied permit.
  bool available(std::size_t deployment) const;
  /// Asks to send one attempt to `deployment`. A `probe` permit must be followed by
  /// on_success/on_failure, or release() when the attempt is not sent after all.
  Permit acquire(std::size_t deployment);
  /// Gives back a permit whose attempt was never sent (a half-open probe becomes available again).
  void release(std::size_t deployment, Permit permit);
  /// A sent attempt succeeded: resets the consecutive count; a probe closes the circuit (and its
  /// provider's, if that was half-open).
  void on_success(std::size_t deployment);
  /// A sent attempt failed with a class that counts against the deployment
  /// (policy::counts_against_deployment). commercial_limit also opens the provider circuit.
  /// A class that does not count (the caller's errors) shows the deployment answered: it is
  /// treated as on_success.
  void on_failure(std::size_t deployment, config::FailureClass cls);
  /// Opens the deployment's circuit now (misconfigured credentials), for its cooldown.
  void open_deployment(std::size_t deployment, const std::string& reason);
  /// Opens a provider's circuit now for `cooldown`.
  void open_provider(const std::string& provider, const std::string& reason, milliseconds cooldown);
  /// Scaled out: asked before a half-open deployment's probe is sent (scope "deployment", the
  /// deployment id); false = another instance carries the cluster's one probe, so this acquire is
  /// denied and this instance keeps its own probe slot taken until that probe's result arrives
  /// (close_remote / open_remote) or kProbeLease passes. Called without the lock held, at most
  /// once per half-open period per circuit; must not throw. Set before any traffic.
  void set_probe_gate(std::function<bool(const std::string& scope, const std::string& id)> gate);
  /// Closes the circuit `scope`/`id` because another instance's probe succeeded (the opening it
  /// had published is gone). Ignored when closed or unknown; the transition is marked `remote`.
  void close_remote(const std::string& scope, const std::string& id);
  /// Opens the circuit `scope` ("deployment" by deployment id, "provider", "feature" by model
  /// group) for `remaining`, because another instance opened it (scaled out: a deployment failing
  /// behind one instance is failing for all). An unknown id is ignored; an open circuit keeps the
  /// later of the two ends. The transition it emits is marked `remote`.
  void open_remote(const std::string& scope, const std::string& id, const std::string& reason, milliseconds remaining);

  CircuitState deployment_state(std::size_t deployment) const;
  CircuitState provider_state(const std::string& provider) const;

  /// Feature circuit of `group`: closed → closed; open → denied; half-open → one probe.
  Permit acquire_feature(const std::string& group);
  /// Reports a request of `group` that took the normal path: `met_budget` false when it ran out of
  /// time or money or found no admissible target. A probe's result closes or reopens.
  void on_feature_result(const std::string& group, bool met_budget, Permit permit);
  /// Gives back a feature permit whose request said nothing about the group (the client left,
  /// the caller's own error): a half-open probe becomes available again.
  void release_feature(const std::string& group, Permit permit);
  CircuitState feature_state(const std::string& group) const;

  /// Every circuit that has seen traffic or configuration (deployments, providers, groups).
  std::vector<CircuitView> snapshot() const;

 private:
  /// Attempts counted in one slot of the sliding window (a slot is window / 60, at least 1 ms;
  /// the window covers the last 60 slots, the current one included).
  struct Slot {
    std::int64_t index = 0;
    int requests = 0;
    int failures = 0;
  };
  struct Breaker {
    CircuitState state = CircuitState::closed;
    core::SteadyTime open_until{};
    bool probe_out = false;
    core::SteadyTime probe_since{};  ///< when the probe went out (a lost probe is given up after kProbeLease)
    std::size_t probe_deployment = 0;  ///< provider breaker: the deployment carrying the half-open probe
    int consecutive = 0;
    /// Failures in a row of each class that has its own threshold (class_allowed_fails).
    std::array<int, config::kFailureClassCount> consecutive_by_class{};
    std::deque<Slot> window;           ///< oldest slot first; bounded memory whatever the traffic
    std::string reason;
    std::uint64_t opened_total = 0;
  };
  /// open_remote / close_remote: finds the breaker of `scope`/`id` (ignores unknown ones), brings
  /// it up to date, applies `change` under the lock, and emits the transitions marked remote.
  void apply_remote(const std::string& scope, const std::string& id,
                    const std::function<void(Breaker&, core::SteadyTime, const char*, const std::string&,
                                             std::vector<CircuitTransition>&)>& change);
  // Implementation detail helpers live in circuit.cpp.
  friend struct CircuitsImpl;
  Setup setup_;
  const core::Clock& clock_;
  std::function<void(const CircuitTransition&)> on_transition_;
  std::function<bool(const std::string&, const std::string&)> probe_gate_;
  mutable std::mutex mu_;
  mutable std::vector<Breaker> deployments_;
  mutable std::unordered_map<std::string, Breaker> providers_;
  mutable std::unordered_map<std::string, Breaker> features_;
};

}  // namespace tollgate::policy
