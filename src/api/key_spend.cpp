#include "api/key_spend.hpp"

#include <boost/json.hpp>

#include "api/admin_fields.hpp"
#include "auth/identities.hpp"
#include "pipeline/admission.hpp"

namespace tollgate::api {

boost::json::object key_spend_json(const budget::BudgetLedger& ledger, const config::Config& cfg,
                                   const store::KeyRecord& key) {
  const auto now = std::chrono::system_clock::now();
  auth::Principal p;
  p.key = std::make_shared<const store::KeyRecord>(key);
  boost::json::object o;
  boost::json::array windows;
  for (const auto& s : pipeline::applicable_scopes(p, std::string(), cfg)) {
    const auto st = ledger.state(s.scope, now);
    if (s.scope.kind == budget::ScopeKind::key) {
      for (auto& kv : scope_spend_json(ledger, s.scope)) o[kv.key()] = kv.value();
      // A window the ledger has not opened yet still has a next reset (LiteLLM shows it).
      if (o["budget_reset_at"].is_null() && s.period) {
        const auto end = budget::window_of(*s.period, now, ledger.reset_timezone()).end;
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(end.time_since_epoch()).count();
        o["budget_reset_at"] = auth::iso8601_utc(ms);
        o["budget_reset_at_ms"] = ms;
      }
    } else if (s.scope.kind == budget::ScopeKind::key_window) {
      boost::json::object w;
      w["budget_duration"] = s.scope.id.substr(key.token_hash.size() + 1);  // id is "<hash>/<duration>"
      w["spend"] = admin::dollars_json(st ? st->spent : 0);
      w["max_budget"] = admin::dollars_json(s.max_budget);
      windows.push_back(std::move(w));
    }
  }
  o["spend_windows"] = std::move(windows);
  return o;
}

boost::json::object scope_spend_json(const budget::BudgetLedger& ledger, const budget::ScopeId& scope) {
  const auto st = ledger.state(scope, std::chrono::system_clock::now());
  boost::json::object o;
  o["spend"] = admin::dollars_json(st ? st->spent : 0);
  o["reserved_spend"] = admin::dollars_json(st ? st->reserved : 0);
  o["budget_reset_at"] = nullptr;  // LiteLLM's field: null when no window applies
  if (st && st->window_end != budget::SystemTime::max()) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(st->window_end.time_since_epoch()).count();
    o["budget_reset_at"] = auth::iso8601_utc(ms);
    o["budget_reset_at_ms"] = ms;
  }
  return o;
}

void restart_key_window(budget::Ledger& ledger, const store::KeyRecord& key, budget::SystemTime now) {
  if (!key.budget_duration) return;
  auto period = budget::parse_budget_duration(*key.budget_duration);
  if (!period) return;
  ledger.load(budget::ScopeId{budget::ScopeKind::key, key.token_hash}, 0, now, *period);
}

}  // namespace tollgate::api
