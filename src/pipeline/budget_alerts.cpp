#include "pipeline/budget_alerts.hpp"

#include <algorithm>

#include "budget/money.hpp"
#include "pipeline/admission.hpp"

namespace tollgate::pipeline {
namespace {

__extension__ typedef __int128 i128;  // exact products of nano-dollar amounts and percentages

constexpr std::size_t kMaxTracked = 100000;  ///< (scope, window) entries kept; the oldest windows go first

std::string percent_text(budget::Nanos spent, budget::Nanos max) {
  if (max <= 0) return "100";
  const auto tenths = static_cast<long long>((static_cast<i128>(spent) * 1000) / max);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10);
}

}  // namespace

void BudgetAlerts::check(const RunState& st) {
  if (!st.svc->alerts) return;
  const auto& thresholds = st.cfg.tollgate_settings.alerts.budget_thresholds;
  const auto now = std::chrono::system_clock::now();
  const auto now_ms = wall_ms();
  struct Raise {
    std::string kind, subject, message;
  };
  std::vector<Raise> raises;
  auto scopes = applicable_scopes(st.principal(), st.call.model, st.cfg);
  const auto& key = st.principal().key;
  if (key && key->soft_budget_nanos)
    scopes.push_back(budget::ScopeLimit{budget::ScopeId{budget::ScopeKind::key, key->token_hash}, -1, std::nullopt});
  {
    std::lock_guard lock(mu_);
    if (now_ms - pruned_at_ms_ > 60000 || fired_.size() > kMaxTracked) {
      pruned_at_ms_ = now_ms;
      std::erase_if(fired_, [now_ms](const auto& e) { return e.second.window_end_ms != 0 && e.second.window_end_ms <= now_ms; });
      if (fired_.size() > kMaxTracked) {  // the least recently fired half goes
        std::vector<std::int64_t> ages;
        ages.reserve(fired_.size());
        for (const auto& e : fired_) ages.push_back(e.second.last_ms);
        std::nth_element(ages.begin(), ages.begin() + static_cast<std::ptrdiff_t>(ages.size() / 2), ages.end());
        const auto cut = ages[ages.size() / 2];
        std::erase_if(fired_, [cut](const auto& e) { return e.second.last_ms < cut; });
      }
    }
    for (const auto& sc : scopes) {
      const bool soft = sc.max_budget < 0;
      const budget::Nanos max = soft ? *key->soft_budget_nanos : sc.max_budget;
      if (max <= 0 || max >= budget::kMaxNanos) continue;
      const std::string kind(budget::to_string(sc.scope.kind));
      const auto th = thresholds.find(kind);
      if (!soft && (th == thresholds.end() || th->second.empty())) continue;
      const auto state = st.svc->ledger->state(sc.scope, now);
      if (!state) continue;
      const budget::Nanos spent = state->spent;
      const std::int64_t window =
          state->window_start == budget::SystemTime::min()
              ? 0
              : std::chrono::duration_cast<std::chrono::milliseconds>(state->window_start.time_since_epoch()).count();
      const auto key_of = std::make_tuple(kind, sc.scope.id, window);
      const auto found = fired_.find(key_of);
      static const std::vector<int> kNone;
      const std::vector<int>& done = found == fired_.end() ? kNone : found->second.thresholds;
      auto mark = [&](int t) {
        auto& f = fired_[key_of];
        f.thresholds.push_back(t);
        f.last_ms = now_ms;
        f.window_end_ms = state->window_end == budget::SystemTime::max()
                              ? 0
                              : std::chrono::duration_cast<std::chrono::milliseconds>(state->window_end.time_since_epoch()).count();
      };
      const std::string name = scope_name(sc.scope);
      if (soft) {
        if (spent >= max && std::find(done.begin(), done.end(), -1) == done.end()) {
          mark(-1);
          raises.push_back({"soft_budget_crossed", name,
                            name + (key->key_alias.empty() ? "" : " (" + key->key_alias + ")") + " spent $" +
                                budget::format_dollars(spent) + ", over its soft budget of $" + budget::format_dollars(max)});
        }
        continue;
      }
      // Only the highest threshold newly crossed is raised: one alert per request at most per scope.
      int crossed = 0;
      std::vector<int> newly;
      for (int t : th->second)
        if (static_cast<i128>(spent) * 100 >= static_cast<i128>(max) * t &&
            std::find(done.begin(), done.end(), t) == done.end()) {
          newly.push_back(t);
          crossed = t;
        }
      for (int t : newly) mark(t);
      if (crossed == 0) continue;
      raises.push_back({"budget_threshold", name + " " + std::to_string(crossed) + "%",
                        name + " reached " + std::to_string(crossed) + "% of its budget: $" + budget::format_dollars(spent) +
                            " of $" + budget::format_dollars(max) + " spent (" + percent_text(spent, max) + "%)" +
                            (state->window_end == budget::SystemTime::max() ? std::string(" (lifetime budget)")
                                                                            : std::string(" in the current window"))});
    }
  }
  for (auto& r : raises) st.svc->alerts->raise(std::move(r.kind), std::move(r.subject), std::move(r.message));
}

}  // namespace tollgate::pipeline
