#pragma once
/// Budget alerts (issue 10, seed 004): after a request settles, every budget scope of its caller
/// is compared with the configured thresholds (tollgate_settings.alerts.budget_thresholds,
/// percent of max_budget; a key's soft_budget too). A threshold crossed raises one
/// `budget_threshold` (or `soft_budget_crossed`) alert, once per scope, threshold and budget
/// window, in this process. Rendered from the run's state: an observer. Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// What has fired, per (scope, window).
class BudgetAlerts {
 public:
  /// Checks the scopes of `st`'s caller for its requested group; raises through st.svc->alerts.
  void check(const RunState& st);

 private:
  /// What fired for one (scope, window).
  struct Fired {
    std::vector<int> thresholds;   ///< percent; -1 = the soft budget
    std::int64_t window_end_ms = 0;  ///< 0 = a lifetime budget
    std::int64_t last_ms = 0;        ///< when it last fired (least recently used go first)
  };
  /// (scope kind, scope id, window start ms) → what fired. Entries exist only for scopes that
  /// fired; an ended window's entry is dropped, and past kMaxTracked the least recently used.
  std::map<std::tuple<std::string, std::string, std::int64_t>, Fired> fired_;
  std::mutex mu_;
  std::int64_t pruned_at_ms_ = 0;
};

}  // namespace tollgate::pipeline
