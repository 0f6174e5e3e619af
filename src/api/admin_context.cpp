#include "api/admin_context.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "api/admin_json.hpp"
#include "auth/keys.hpp"
#include "routing/constraints.hpp"

namespace tollgate::api::admin {
namespace json = boost::json;

const std::string& Call::caller_token() const {
  static const std::string none;
  return caller && caller->key ? caller->key->token_hash : none;
}

Context::Context(AdminDeps deps) : d_(std::move(deps)) {
  if (!d_.identities) d_.identities = std::make_shared<auth::Identities>();
}

std::int64_t Context::now() const { return d_.now_ms ? d_.now_ms() : auth::unix_now_ms(); }

void Context::refresh() const {
  if (auto r = d_.identities->reload(*d_.store); !r)
    spdlog::error("admin: identity snapshot reload failed ({}); model calls use the previous snapshot",
                  r.error().message);
}

std::optional<core::Error> Context::check_refs(const std::string& user_id, const std::string& team_id,
                                               const std::string& org_id) const {
  auto check = [](auto result, std::string_view field, const std::string& id) -> std::optional<core::Error> {
    if (result) return std::nullopt;
    if (result.error().code == store::StoreErrorCode::not_found)
      return bad_field(field, "unknown " + std::string(field) + " '" + id + "'");
    return store_error(result.error(), field);
  };
  if (!user_id.empty())
    if (auto e = check(d_.store->get_user(user_id), "user_id", user_id)) return e;
  if (!team_id.empty())
    if (auto e = check(d_.store->get_team(team_id), "team_id", team_id)) return e;
  if (!org_id.empty())
    if (auto e = check(d_.store->get_organization(org_id), "organization_id", org_id)) return e;
  return std::nullopt;
}

std::shared_ptr<const config::Config> Context::config() const {
  if (d_.current_config)
    if (auto c = d_.current_config()) return c;
  return d_.config;
}

std::optional<core::Error> Context::check_region(const std::string& region) const {
  if (region.empty()) return std::nullopt;
  const auto cfg = config();
  std::vector<std::string> in_use;
  for (const auto& d : cfg->model_list) {
    if (routing::same_region(d.region_name, region)) return std::nullopt;
    if (!d.region_name.empty() && std::none_of(in_use.begin(), in_use.end(), [&](const std::string& r) {
          return routing::same_region(d.region_name, r);
        }))
      in_use.push_back(d.region_name);
  }
  std::string list;
  for (const auto& r : in_use) list += (list.empty() ? "" : ", ") + r;
  return bad_field("allowed_model_region", "no deployment is in region '" + region +
                                               "' (litellm_params.region_name): every request would be refused; regions in use: " +
                                               (list.empty() ? std::string("none") : list));
}

std::optional<core::Error> Context::check_budget_ref(const std::string& budget_id, std::string_view field) const {
  if (budget_id.empty()) return std::nullopt;
  auto b = d_.store->get_budget(budget_id);
  if (b) return std::nullopt;
  if (b.error().code == store::StoreErrorCode::not_found)
    return bad_field(field, "unknown " + std::string(field) + " '" + budget_id + "' (create it with /budget/new)");
  return store_error(b.error(), field);
}

json::object Context::key_with_spend(const store::KeyRecord& k) const {
  auto o = key_object(k);
  // The ledger figures follow the limits admission uses: the snapshot's record, where a linked
  // budget's duration and limits are resolved (auth::apply_linked_budgets).
  auto resolved = d_.identities->current()->key(k.token_hash);
  if (d_.spend_for_key)
    for (auto& kv : d_.spend_for_key(resolved && resolved->updated_at_ms == k.updated_at_ms ? *resolved : k))
      o[kv.key()] = kv.value();
  return o;
}

void Context::with_scope_spend(json::object& o, budget::ScopeKind kind, const std::string& id) const {
  if (!d_.spend_for_scope) {
    o["spend"] = 0;
    return;
  }
  for (auto& kv : d_.spend_for_scope(budget::ScopeId{kind, id})) o[kv.key()] = kv.value();
}

Field<json::object> Context::customer_with_spend(const store::CustomerRecord& cu) const {
  auto o = customer_object(cu);
  if (!cu.budget_id.empty()) {
    auto b = d_.store->get_budget(cu.budget_id);
    if (!b && b.error().code != store::StoreErrorCode::not_found)
      return std::unexpected(store_error(b.error(), "budget " + cu.budget_id));
    if (b) o["litellm_budget_table"] = budget_object(*b);
  }
  // Without a budget an end user is no ledger scope (docs/budgets.md, "Memory"): its spend is
  // the spend log's, all time, as LiteLLM's end-user table keeps it. So it is where end-user ids
  // live in each caller's tenant (end_user_budget_scope): one ledger scope per tenant, and the
  // customer's spend is that of every tenant's requests naming it.
  const auto& cfg = *config();
  const bool global = cfg.tollgate_settings.end_user_budget_scope == config::TollgateSettings::EndUserBudgetScope::global;
  const bool budgeted =
      cu.max_budget_nanos || !cu.budget_id.empty() || cfg.litellm_settings.max_end_user_budget.has_value();
  with_scope_spend(o, budget::ScopeKind::end_user, cu.user_id);
  if (!budgeted || !global) {
    auto g = d_.store->global_spend(std::nullopt, std::nullopt);
    if (!g) return std::unexpected(store_error(g.error(), "spend of customer " + cu.user_id));
    std::int64_t nanos = 0;
    for (const auto& b : g->by_end_user)
      if (b.name == cu.user_id) nanos = b.spend_nanos;
    o["spend"] = dollars_json(nanos);
  }
  return o;
}

Field<store::KeyRecord> Context::resolve_key(const std::string& given, std::string_view field) const {
  if (given.empty()) return std::unexpected(bad_field(field, "missing required field: " + std::string(field)));
  const std::string hash = auth::is_token_hash(given) ? given : auth::sha256_hex(given);
  auto k = d_.store->get_key(hash);
  if (!k) {
    auto e = store_error(k.error(), "key");
    e.param = std::string(field);
    if (e.status == 404) e.message = "key not found (unknown or deleted): " + std::string(field);
    return std::unexpected(e);
  }
  return *k;
}

core::Error store_error(const store::StoreError& e, std::string_view what) {
  using store::StoreErrorCode;
  switch (e.code) {
    case StoreErrorCode::not_found:
      return core::Error::caller(404, "not_found_error", std::string(what) + " not found", e.field, "404");
    case StoreErrorCode::conflict:
      return core::Error::caller(409, "invalid_request_error",
                                 std::string(what) + ": duplicate " + (e.field.empty() ? "id" : e.field) +
                                     " (already exists)",
                                 e.field, "409");
    case StoreErrorCode::invalid:
      return core::Error::caller(400, "invalid_request_error", std::string(what) + ": " + e.message, e.field, "400");
    case StoreErrorCode::unavailable:
      break;
  }
  auto err = core::Error::gateway(503, "service_unavailable", "the database cannot be written or read: " + e.message, "503");
  return err;
}

Field<std::int64_t> positive_query_int(std::string_view target, std::string_view name, std::int64_t fallback) {
  auto v = query_param(target, name);
  if (!v) return fallback;
  std::int64_t out = 0;
  try {
    std::size_t used = 0;
    out = std::stoll(*v, &used);
    if (used != v->size()) out = 0;
  } catch (...) {
    out = 0;
  }
  if (out < 1) return std::unexpected(bad_field(name, std::string(name) + " must be a positive integer"));
  return out;
}

}  // namespace tollgate::api::admin
