#pragma once
/// The compiled policy of each model group: its classification table, configured request
/// budget and degradation mode, built once from `fallback_policy` (defaults layered under
/// model_groups.<group>). Immutable; thread-safe to share.

#include <string>
#include <string_view>
#include <unordered_map>

#include "config/config.hpp"
#include "core/string_hash.hpp"
#include "policy/failure.hpp"
#include "policy/request_budget.hpp"

namespace tollgate::policy {

struct GroupPolicy {
  ClassTable classes;                 ///< default table + defaults.classes + model_groups.<g>.classes
  RequestBudget budget;               ///< configured_budget(cfg, group)
  config::DegradationConfig degradation;  ///< model_groups.<g>.degradation, else defaults.degradation
};

class PolicySet {
 public:
  explicit PolicySet(const config::Config& cfg);
  /// The policy of `group`; a group without its own section gets the defaults.
  const GroupPolicy& for_group(std::string_view group) const;

 private:
  GroupPolicy defaults_;
  /// Looked up by string_view without building a std::string (several lookups per request).
  std::unordered_map<std::string, GroupPolicy, core::StringHash, std::equal_to<>> groups_;
};

}  // namespace tollgate::policy
