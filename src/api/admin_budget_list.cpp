// GET /tollgate/budgets (docs/admin_api.md) and the listing behind it (api/budget_list.hpp).
#include "api/budget_list.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "api/admin_ui.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::api {
namespace json = boost::json;
using budget::ScopeId;
using budget::ScopeKind;

namespace {

struct ScopeLess {
  bool operator()(const ScopeId& a, const ScopeId& b) const {
    return a.kind != b.kind ? a.kind < b.kind : a.id < b.id;
  }
};

/// The model groups a key's model_max_budget names (each is a key_model scope of its own).
std::vector<std::string> model_budget_groups(const store::KeyRecord& k) {
  std::vector<std::string> out;
  if (k.model_max_budget.empty()) return out;
  boost::system::error_code ec;
  auto v = json::parse(k.model_max_budget, ec);
  if (ec || !v.is_object()) return {""};  // admission fails closed on it: listed with limit 0
  for (const auto& kv : v.as_object()) out.emplace_back(kv.key());
  return out;
}

std::string or_id(const std::string& alias, const std::string& id) { return alias.empty() ? id : alias; }

/// Collects scopes in discovery order; the first source that names a scope decides its limit,
/// as the most specific caller admission would apply it to (a key before a bare record).
class Collector {
 public:
  Collector(const auth::IdentityIndex& index, const config::Config& cfg) : index_(index), cfg_(cfg) {}

  void add_principal(const auth::Principal& p, const std::string& group) {
    for (auto& s : pipeline::applicable_scopes(p, group, cfg_)) add(s);
  }
  void add_key(const std::shared_ptr<const store::KeyRecord>& k) {
    auto bound = auth::with_request(auth::principal_of_key(index_, k), index_, "", {});
    if (!bound) return;
    add_principal(**bound, "");
    for (const auto& g : model_budget_groups(*k)) add_principal(**bound, g);
  }
  /// An end-user scope the ledger holds: listed with the limit admission computes for a caller of
  /// its tenant naming that end user; skipped when admission would no longer apply it.
  void add_end_user(const std::string& scope_id) {
    auth::Principal p;
    std::string user = scope_id;
    if (auto parts = pipeline::split_end_user_scope(scope_id)) {
      const auto space = parts->first.find(' ');
      const std::string kind = parts->first.substr(0, space), id = parts->first.substr(space + 1);
      auto key = std::make_shared<store::KeyRecord>();
      if (kind == "team") key->team_id = id;
      else if (kind == "organization") key->organization_id = id;
      else key->token_hash = id;
      p.key = std::move(key);
      user = parts->second;
    }
    p.end_user = user;
    p.customer = index_.customer(user);
    for (auto& s : pipeline::applicable_scopes(p, "", cfg_))
      if (s.scope.kind == ScopeKind::end_user && s.scope.id == scope_id) add(s);
  }
  const std::vector<budget::ScopeLimit>& scopes() const { return order_; }

 private:
  void add(budget::ScopeLimit& s) {
    if (seen_.insert(s.scope).second) order_.push_back(std::move(s));
  }
  const auth::IdentityIndex& index_;
  const config::Config& cfg_;
  std::set<ScopeId, ScopeLess> seen_;  // tracked-only scopes too: they decide, then are dropped
  std::vector<budget::ScopeLimit> order_;
};

std::string scope_display_name(const auth::IdentityIndex& index, const ScopeId& s) {
  auto key_alias = [&](std::string_view hash) {
    auto k = index.key(hash);
    return k && !k->key_alias.empty() ? k->key_alias : std::string(hash);
  };
  switch (s.kind) {
    case ScopeKind::key: return key_alias(s.id);
    case ScopeKind::user:
      if (auto u = index.user(s.id)) return or_id(u->user_alias, s.id);
      return s.id;
    case ScopeKind::team:
      if (auto t = index.team(s.id)) return or_id(t->team_alias, s.id);
      return s.id;
    case ScopeKind::organization:
      if (auto o = index.organization(s.id)) return or_id(o->organization_alias, s.id);
      return s.id;
    case ScopeKind::team_member: {
      const auto slash = s.id.find('/');
      if (slash == std::string::npos) return s.id;
      const std::string team = s.id.substr(0, slash);
      auto t = index.team(team);
      return (t ? or_id(t->team_alias, team) : team) + "/" + s.id.substr(slash + 1);
    }
    case ScopeKind::end_user: {
      auto parts = pipeline::split_end_user_scope(s.id);
      const std::string user = parts ? parts->second : s.id;
      auto cu = index.customer(user);
      return cu && !cu->alias.empty() ? cu->alias : user;
    }
    case ScopeKind::key_model:
    case ScopeKind::key_window: {
      const auto slash = s.id.find('/');
      if (slash == std::string::npos) return s.id;
      return key_alias(std::string_view(s.id).substr(0, slash)) + " " + s.id.substr(slash + 1);
    }
    case ScopeKind::tag:
    case ScopeKind::global: break;
  }
  return s.id;
}

}  // namespace

std::vector<BudgetRow> list_budgets(const auth::IdentityIndex& index, const config::Config& cfg,
                                    const budget::BudgetLedger& ledger, const budget::Ledger* local,
                                    const auth::Principal* caller, budget::SystemTime now) {
  Collector c(index, cfg);
  if (caller) {
    if (caller->key) c.add_key(caller->key);
    else c.add_principal(*caller, "");
  } else {
    auto keys = index.keys();
    std::ranges::sort(keys, {}, [](const auto& k) { return k->token_hash; });
    for (const auto& k : keys) c.add_key(k);
    // Records no key reaches still carry a budget of their own: listed as admission would apply
    // it to a caller holding just that record.
    for (const auto& u : index.users()) {
      auth::Principal p;
      p.user = u;
      c.add_principal(p, "");
    }
    for (const auto& t : index.teams()) {
      auth::Principal p;
      p.team = t;
      c.add_principal(p, "");
    }
    for (const auto& m : index.members()) {
      auth::Principal p;
      p.membership = m;
      c.add_principal(p, "");
    }
    for (const auto& o : index.organizations()) {
      auth::Principal p;
      p.organization = o;
      c.add_principal(p, "");
    }
    for (const auto& t : index.tags()) {
      auth::Principal p;
      p.tag_budgets.push_back(t);
      c.add_principal(p, "");
    }
    if (cfg.tollgate_settings.end_user_budget_scope == config::TollgateSettings::EndUserBudgetScope::global)
      for (const auto& cu : index.customers()) c.add_end_user(cu->user_id);
    if (local)
      for (const auto& id : local->scope_ids(ScopeKind::end_user)) c.add_end_user(id.id);
    c.add_principal(auth::Principal{}, "");  // the global budget
  }
  std::vector<BudgetRow> rows;
  for (const auto& s : c.scopes()) {
    if (s.max_budget >= budget::kMaxNanos) continue;  // tracked, never refused: not a budget
    BudgetRow r;
    r.scope = s.scope;
    r.name = scope_display_name(index, s.scope);
    r.max_budget = std::max<budget::Nanos>(s.max_budget, 0);
    if (s.period) r.budget_duration = budget::to_string(*s.period);
    if (auto st = ledger.state(s.scope, now)) {
      r.spend = st->spent;
      r.reserved = st->reserved;
      if (st->window_end != budget::SystemTime::max() && st->window_end != budget::SystemTime::min())
        r.reset_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(st->window_end.time_since_epoch()).count();
    }
    const double used = static_cast<double>(r.spend) + static_cast<double>(r.reserved);
    r.used_ratio = r.max_budget > 0 ? used / static_cast<double>(r.max_budget) : 1.0;
    rows.push_back(std::move(r));
  }
  std::ranges::stable_sort(rows, [](const BudgetRow& a, const BudgetRow& b) {
    if (a.used_ratio != b.used_ratio) return a.used_ratio > b.used_ratio;
    return ScopeLess{}(a.scope, b.scope);
  });
  return rows;
}

json::object budget_row_json(const BudgetRow& r) {
  json::object o;
  o["scope"] = budget::to_string(r.scope.kind);
  o["id"] = r.scope.id;
  o["name"] = r.name;
  o["max_budget"] = admin::dollars_json(r.max_budget);
  o["spend"] = admin::dollars_json(r.spend);
  o["reserved"] = admin::dollars_json(r.reserved);
  o["budget_duration"] = r.budget_duration ? json::value(*r.budget_duration) : json::value(nullptr);
  o["budget_reset_at"] = r.reset_at_ms ? json::value(auth::iso8601_utc(*r.reset_at_ms)) : json::value(nullptr);
  o["used_ratio"] = r.used_ratio;
  return o;
}

namespace admin {

Reply budgets(const Context& c, const Call& q) {
  auto limit = positive_query_int(q.target, "limit", 100);
  if (!limit) return std::unexpected(limit.error());
  if (*limit > 10'000) return std::unexpected(bad_field("limit", "limit must be at most 10000"));
  auto s = live_services(c);
  if (!s) return std::unexpected(s.error());
  const auto& services = **s;
  const auto rows = list_budgets(*c.deps().identities->current(), *services.config, *services.ledger,
                                 services.local_ledger, q.caller.get(), std::chrono::system_clock::now());
  json::array out;
  for (const auto& r : rows) {
    if (static_cast<std::int64_t>(out.size()) >= *limit) break;
    out.push_back(budget_row_json(r));
  }
  return json::value(json::object{{"budgets", std::move(out)}});
}

}  // namespace admin
}  // namespace tollgate::api
