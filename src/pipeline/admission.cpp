#include "pipeline/admission.hpp"

#include <algorithm>
#include <utility>

#include <boost/json.hpp>

#include "budget/cost.hpp"
#include "budget/money.hpp"
#include "budget/scope.hpp"
#include "budget/token_bounds.hpp"
#include "budget/window.hpp"

namespace tollgate::pipeline {
namespace json = boost::json;
using budget::Nanos;
using budget::ScopeId;
using budget::ScopeKind;
using budget::ScopeLimit;

namespace {

std::optional<budget::BudgetPeriod> period_of(const std::optional<std::string>& duration) {
  if (!duration || duration->empty()) return std::nullopt;
  auto p = budget::parse_budget_duration(*duration);
  if (!p) return std::nullopt;
  return *p;
}

/// Adds a scope. Without a budget the scope is still charged (its spend is tracked for
/// /key/info, spend headers and a budget set later) but never refuses: limit kMaxNanos.
void add(std::vector<ScopeLimit>& out, ScopeKind kind, std::string id, std::optional<std::int64_t> max,
         const std::optional<std::string>& duration) {
  out.push_back(ScopeLimit{ScopeId{kind, std::move(id)}, max.value_or(budget::kMaxNanos), period_of(duration)});
}

/// Dollars in stored JSON (a number or a decimal string) → nano-dollars, exactly. Unreadable
/// values give 0 so that a malformed budget refuses rather than admits (fail closed).
Nanos dollars_of(const json::value& v) {
  if (v.is_string()) return budget::parse_dollars(std::string(v.as_string())).value_or(0);
  if (v.is_int64() || v.is_uint64() || v.is_double()) return budget::parse_dollars(json::serialize(v)).value_or(0);
  return 0;
}

std::optional<std::string> duration_of(const json::object& o) {
  if (auto* d = o.if_contains("budget_duration"); d && d->is_string()) return std::string(d->as_string());
  return std::nullopt;
}

/// A budget object stored as JSON: {"max_budget": dollars | "max_budget_nanos": n, "budget_duration"?}.
std::optional<Nanos> limit_of(const json::object& o) {
  if (auto* n = o.if_contains("max_budget_nanos"); n && n->is_int64()) return n->as_int64();
  if (auto* d = o.if_contains("max_budget"); d && !d->is_null()) return dollars_of(*d);
  return std::nullopt;
}

void add_key_windows(std::vector<ScopeLimit>& out, const store::KeyRecord& k) {
  if (k.budget_limits.empty()) return;
  boost::system::error_code ec;
  auto v = json::parse(k.budget_limits, ec);
  if (ec || !v.is_array()) {
    out.push_back(ScopeLimit{ScopeId{ScopeKind::key_window, budget::key_window_id(k.token_hash, "invalid")}, 0, std::nullopt});
    return;
  }
  for (const auto& e : v.as_array()) {
    if (!e.is_object()) continue;
    const auto& o = e.as_object();
    auto dur = duration_of(o);
    auto lim = limit_of(o);
    if (!lim) continue;
    out.push_back(ScopeLimit{ScopeId{ScopeKind::key_window, budget::key_window_id(k.token_hash, dur.value_or("lifetime"))},
                             *lim, period_of(dur)});
  }
}

void add_key_model(std::vector<ScopeLimit>& out, const store::KeyRecord& k, const std::string& group) {
  if (k.model_max_budget.empty()) return;
  boost::system::error_code ec;
  auto v = json::parse(k.model_max_budget, ec);
  if (ec || !v.is_object()) {
    out.push_back(ScopeLimit{ScopeId{ScopeKind::key_model, budget::key_model_id(k.token_hash, group)}, 0, std::nullopt});
    return;
  }
  auto* entry = v.as_object().if_contains(group);
  if (!entry) return;
  if (entry->is_object()) {
    if (auto lim = limit_of(entry->as_object()))
      out.push_back(ScopeLimit{ScopeId{ScopeKind::key_model, budget::key_model_id(k.token_hash, group)}, *lim,
                               period_of(duration_of(entry->as_object()))});
  } else {
    out.push_back(
        ScopeLimit{ScopeId{ScopeKind::key_model, budget::key_model_id(k.token_hash, group)}, dollars_of(*entry), std::nullopt});
  }
}

std::optional<std::int64_t> config_dollars(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return budget::parse_dollars(*text).value_or(0);
}

}  // namespace

namespace {

/// "<kind>:<id>/<user>" with '%' and '/' of the tenant id escaped, so the first '/' after the
/// kind ends the tenant (split_end_user_scope reads it back).
std::string tenant_scoped(std::string_view kind, std::string_view id, std::string_view user) {
  std::string out(kind);
  out += ':';
  for (char c : id) {
    if (c == '%') out += "%25";
    else if (c == '/') out += "%2F";
    else out += c;
  }
  out += '/';
  out += user;
  return out;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> split_end_user_scope(std::string_view id) {
  for (std::string_view kind : {"team", "organization", "key"}) {
    if (id.size() <= kind.size() || id.substr(0, kind.size()) != kind || id[kind.size()] != ':') continue;
    const auto rest = id.substr(kind.size() + 1);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    std::string tenant(kind);
    tenant += ' ';
    const auto enc = rest.substr(0, slash);
    for (std::size_t i = 0; i < enc.size(); ++i) {
      if (enc.substr(i, 3) == "%25") tenant += '%', i += 2;
      else if (enc.substr(i, 3) == "%2F") tenant += '/', i += 2;
      else tenant += enc[i];
    }
    return std::pair{tenant, std::string(rest.substr(slash + 1))};
  }
  return std::nullopt;
}

std::string end_user_scope_id(const auth::Principal& p, config::TollgateSettings::EndUserBudgetScope mode) {
  using Mode = config::TollgateSettings::EndUserBudgetScope;
  if (mode == Mode::global || !p.key) return p.end_user;
  const auto& k = *p.key;
  std::string org = k.organization_id;
  if (org.empty() && p.organization) org = p.organization->organization_id;
  if (mode == Mode::organization && !org.empty()) return tenant_scoped("organization", org, p.end_user);
  if (!k.team_id.empty()) return tenant_scoped("team", k.team_id, p.end_user);
  if (!org.empty()) return tenant_scoped("organization", org, p.end_user);
  return tenant_scoped("key", k.token_hash, p.end_user);
}

std::vector<ScopeLimit> applicable_scopes(const auth::Principal& p, const std::string& group,
                                          const config::Config& cfg) {
  std::vector<ScopeLimit> out;
  if (const auto& k = p.key) {
    add(out, ScopeKind::key, k->token_hash, k->max_budget_nanos, k->budget_duration);
    add_key_windows(out, *k);
    add_key_model(out, *k, group);
  }
  if (p.user) {
    // The personal budget limits team keys only with apply_user_budget_to_team_keys; the
    // user's spend is tracked either way.
    const bool team_key = p.key && !p.key->team_id.empty();
    const bool applies = !team_key || cfg.general_settings.apply_user_budget_to_team_keys;
    add(out, ScopeKind::user, p.user->user_id, applies ? p.user->max_budget_nanos : std::nullopt,
        p.user->budget_duration);
  }
  if (p.team) add(out, ScopeKind::team, p.team->team_id, p.team->max_budget_nanos, p.team->budget_duration);
  if (p.membership)
    add(out, ScopeKind::team_member, budget::team_member_id(p.membership->team_id, p.membership->user_id),
        p.membership->max_budget_in_team_nanos, p.membership->budget_duration);
  if (p.organization)
    add(out, ScopeKind::organization, p.organization->organization_id, p.organization->max_budget_nanos,
        p.organization->budget_duration);
  // End users are named by callers, so there may be any number of them: one is a scope only
  // while a budget applies to it (its customer record's, else max_end_user_budget). Without one
  // its spend is in the spend log's end_user column, and the ledger keeps nothing for it.
  // Their ids live in the caller's tenant unless configured global (end_user_scope_id).
  if (!p.end_user.empty()) {
    if (p.customer && p.customer->max_budget_nanos)
      add(out, ScopeKind::end_user, end_user_scope_id(p, cfg.tollgate_settings.end_user_budget_scope),
          p.customer->max_budget_nanos, p.customer->budget_duration);
    else if (cfg.litellm_settings.max_end_user_budget)
      add(out, ScopeKind::end_user, end_user_scope_id(p, cfg.tollgate_settings.end_user_budget_scope),
          config_dollars(cfg.litellm_settings.max_end_user_budget), cfg.litellm_settings.budget_duration);
  }
  for (const auto& t : p.tag_budgets)
    if (t) add(out, ScopeKind::tag, t->name, t->max_budget_nanos, t->budget_duration);
  if (cfg.litellm_settings.max_budget)
    add(out, ScopeKind::global, "global", config_dollars(cfg.litellm_settings.max_budget),
        cfg.litellm_settings.budget_duration);
  return out;
}

namespace {

void set_window(store::LedgerScope& ls, const budget::BudgetPeriod& period, const budget::ResetTimezone& tz,
                std::chrono::system_clock::time_point at) {
  const auto w = budget::window_of(period, at, tz);
  ls.window_start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(w.start.time_since_epoch()).count();
  ls.window_end_ms = std::chrono::duration_cast<std::chrono::milliseconds>(w.end.time_since_epoch()).count();
  ls.period = budget::to_string(period);
}

}  // namespace

std::vector<store::LedgerScope> ledger_scopes(const std::vector<ScopeLimit>& scopes, const budget::ResetTimezone& tz,
                                              std::chrono::system_clock::time_point now) {
  std::vector<store::LedgerScope> out;
  out.reserve(scopes.size());
  for (const auto& s : scopes) {
    store::LedgerScope ls;
    ls.kind = std::string(budget::to_string(s.scope.kind));
    ls.id = s.scope.id;
    if (s.period) set_window(ls, *s.period, tz, now);
    out.push_back(std::move(ls));
  }
  return out;
}

store::LedgerScope ledger_scope_at(const store::LedgerScope& scope, const budget::ResetTimezone& tz, std::int64_t now_ms) {
  if (scope.period.empty() || now_ms < scope.window_end_ms) return scope;
  auto period = budget::parse_budget_duration(scope.period);
  if (!period) return scope;
  store::LedgerScope out = scope;
  set_window(out, *period, tz, std::chrono::system_clock::time_point(std::chrono::milliseconds(now_ms)));
  return out;
}

std::string scope_name(const ScopeId& s) {
  if (s.kind == ScopeKind::end_user)
    if (auto parts = split_end_user_scope(s.id)) return "end_user " + parts->second + " (of " + parts->first + ")";
  return s.kind == ScopeKind::global ? std::string("global") : std::string(budget::to_string(s.kind)) + " " + s.id;
}

std::optional<AdmissionDecision> admit_unreserved(const config::Config& cfg, const budget::ResolvedPrice& price,
                                                  const std::vector<ScopeLimit>& scopes) {
  AdmissionDecision d;
  d.price_status = price.status;
  if (price.status == budget::PriceStatus::priced_zero) return d;  // nothing to reserve
  if (price.status != budget::PriceStatus::unpriced) return std::nullopt;
  // Refused only where a budget attaches: a scope that is merely tracked cannot be defeated.
  const bool budget_attaches = std::any_of(scopes.begin(), scopes.end(),
                                           [](const ScopeLimit& s) { return s.max_budget < budget::kMaxNanos; });
  if (!budget_attaches || !cfg.general_settings.block_unpriced_models) return d;  // served, recorded as unpriced
  d.outcome = AdmissionDecision::Outcome::unpriced_blocked;
  d.error = core::Error::gateway(403, "unpriced_model_blocked",
                                 "this model has no known price and a budget applies to this request: it cannot be "
                                 "metered, so it is refused (" + price.how + ")",
                                 "unpriced_model_blocked");
  d.reason = "unpriced_model_blocked";
  return d;
}

AdmissionDecision admission_decision(budget::ReserveResult r, const budget::ResolvedPrice& price,
                                     const std::vector<ScopeLimit>& scopes, const AttemptPlan& plan) {
  AdmissionDecision d;
  d.price_status = price.status;
  if (!r) {
    const auto& f = r.error();
    d.outcome = AdmissionDecision::Outcome::budget_exceeded;
    const std::string scope = scope_name(f.scope);
    if (f.reason == budget::RefusalReason::budget_exceeded) {
      const bool fixed = plan.range.min == plan.range.max;
      d.error = core::Error::gateway(
          429, "budget_exceeded",
          "Budget has been exceeded: " + scope + " cannot cover this request (max budget $" +
              budget::format_dollars(f.limit) + ", $" + budget::format_dollars(f.committed) +
              " spent or reserved; this attempt needs " + (fixed ? "" : "at least ") + "$" +
              budget::format_dollars(f.requested) +
              (fixed ? "" : " for its input and " + std::to_string(plan.least) + " output tokens") + ")",
          "429");
      d.reason = "budget_exceeded " + scope;
    } else {
      d.error = core::Error::gateway(503, "api_error", "spend could not be recorded; paid requests are refused",
                                     "ledger_unavailable");
      d.reason = "ledger_unavailable";
    }
    return d;
  }
  d.reservation = std::move(*r);
  // Nothing reserved (no scope, or no limit anywhere): the plan's whole range, which may still
  // have been lowered by the request's cost ceiling.
  const budget::Nanos granted = d.reservation.empty() ? plan.range.max : d.reservation.amount();
  d.output_tokens = plan.tokens_for(granted);
  d.worst = plan.cost_at(*d.output_tokens);
  // Lowered by a budget (or the request's cost ceiling), not merely by what int64 can express.
  d.output_reduced = *d.output_tokens < plan.want && (d.reservation.reduced() || plan.ceiling_capped);
  if (d.reservation.reduced() && d.reservation.binding_scope() < scopes.size())
    d.reduced_by = scope_name(scopes[d.reservation.binding_scope()].scope);
  else if (d.output_reduced)
    d.reduced_by = "max_request_cost";
  return d;
}

AdmissionDecision admit(budget::Ledger& ledger, const config::Config& cfg, const budget::ResolvedPrice& price,
                        const std::vector<ScopeLimit>& scopes, const AttemptPlan& plan,
                        std::chrono::system_clock::time_point now) {
  if (auto d = admit_unreserved(cfg, price, scopes)) return std::move(*d);
  return admission_decision(ledger.reserve(scopes, plan.range, now), price, scopes, plan);
}

budget::Charge attempt_charge(const budget::ResolvedPrice& price, const providers::Usage& usage) {
  if (price.status != budget::PriceStatus::priced) return {};
  return budget::price_usage(price.price, usage);
}

}  // namespace tollgate::pipeline
