// The /user/*, /team/*, /organization/* and /customer/* endpoints (LiteLLM proxy/users,
// proxy/team_budgets, proxy/customers).
#include "api/admin_context.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "api/admin_json.hpp"
#include "auth/caller_names.hpp"
#include "auth/keys.hpp"
#include "core/ids.hpp"

namespace tollgate::api::admin {
namespace json = boost::json;

namespace {

std::optional<core::Error> apply_user_fields(const json::object& body, store::UserRecord& u);

// --- users ---
Reply user_new(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body,
                               {"user_id", "user_email", "user_alias", "max_budget", "budget_duration", "models",
                                "metadata", "rpm_limit", "tpm_limit", "auto_create_key", "key_alias", "duration",
                                "teams"},
                               {"user_role", "send_invite_email", "sso_user_id"}));
  store::UserRecord u;
  TG_TRY_R(apply_name(body, "user_id", u.user_id));
  if (u.user_id.empty()) u.user_id = core::new_uuid();
  TG_TRY_R(apply_user_fields(body, u));
  auto create_key = get_bool(body, "auto_create_key");
  if (!create_key) return std::unexpected(create_key.error());
  auto teams = get_name_list(body, "teams");
  if (!teams) return std::unexpected(teams.error());
  if (*teams)
    for (const auto& t : **teams) TG_TRY_R(c.check_refs("", t, ""));
  // Validate the key fields before anything is written.
  store::KeyRecord k;
  TG_TRY_R(apply_name(body, "key_alias", k.key_alias));
  if (body.contains("duration")) {
    auto s = get_string(body, "duration");
    if (!s) return std::unexpected(s.error());
    if (*s) {
      auto ms = parse_duration_ms(**s);
      if (!ms) return std::unexpected(bad_field("duration", "duration: " + ms.error()));
      k.expires_at_ms = c.now() + *ms;
    }
  }
  u.created_at_ms = u.updated_at_ms = c.now();
  auto created = c.store().create_user(u);
  if (!created) return std::unexpected(store_error(created.error(), "user"));
  if (*teams)
    for (const auto& t : **teams) {
      store::TeamMemberRecord m;
      m.team_id = t;
      m.user_id = u.user_id;
      if (auto r = c.store().upsert_team_member(m); !r) {
        c.refresh();
        return std::unexpected(store_error(r.error(), "team member"));
      }
    }
  auto o = user_object(*created);
  o["key"] = nullptr;
  if (create_key->value_or(true)) {
    auto secret = auth::generate_key();
    if (!secret) return std::unexpected(core::Error::gateway(500, "api_error", secret.error()));
    k.token_hash = auth::sha256_hex(*secret);
    k.key_name = auth::mask_key(*secret);
    k.user_id = u.user_id;
    k.models = u.models;
    k.created_at_ms = k.updated_at_ms = c.now();
    auto ck = c.store().create_key(k);
    if (!ck) {
      c.refresh();
      return std::unexpected(store_error(ck.error(), "key"));
    }
    o["key"] = *secret;
    o["token"] = k.token_hash;
    o["key_alias"] = opt_string(k.key_alias);
    o["expires"] = opt_time(k.expires_at_ms);
  }
  c.refresh();
  return json::value(std::move(o));
}

std::optional<core::Error> apply_user_fields(const json::object& body, store::UserRecord& u) {
  TG_TRY(apply_name(body, "user_email", u.user_email));
  TG_TRY(apply_name(body, "user_alias", u.user_alias));
  TG_TRY(apply_money(body, "max_budget", u.max_budget_nanos));
  TG_TRY(apply_duration(body, "budget_duration", u.budget_duration));
  TG_TRY(apply_list(body, "models", u.models));
  TG_TRY(apply_object(body, "metadata", u.metadata));
  TG_TRY(apply_count(body, "rpm_limit", u.rpm_limit));
  TG_TRY(apply_count(body, "tpm_limit", u.tpm_limit));
  return std::nullopt;
}

Reply user_info(const Context& c, const std::string& target) {
  auto id = query_param(target, "user_id");
  if (!id || id->empty()) return std::unexpected(bad_field("user_id", "missing required query parameter: user_id"));
  auto u = c.store().get_user(*id);
  if (!u) return std::unexpected(store_error(u.error(), "user " + *id));
  store::KeyFilter f;
  f.user_id = *id;
  auto keys = c.store().list_keys(f);
  if (!keys) return std::unexpected(store_error(keys.error(), "keys"));
  json::array ka;
  for (const auto& k : *keys) ka.push_back(c.key_with_spend(k));
  json::array teams;
  auto snap = c.deps().identities->current();
  auto all_teams = c.store().list_teams();
  if (!all_teams) return std::unexpected(store_error(all_teams.error(), "teams"));
  for (const auto& t : *all_teams)
    if (snap->member(t.team_id, *id)) teams.emplace_back(t.team_id);
  json::object o;
  o["user_id"] = *id;
  auto info = user_object(*u);
  c.with_scope_spend(info, budget::ScopeKind::user, *id);
  o["user_info"] = std::move(info);
  o["keys"] = std::move(ka);
  o["teams"] = std::move(teams);
  return json::value(std::move(o));
}

Reply user_update(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body,
                               {"user_id", "user_email", "user_alias", "max_budget", "budget_duration", "models",
                                "metadata", "rpm_limit", "tpm_limit"},
                               {"user_role", "password"}));
  auto id = require_string(body, "user_id");
  if (!id) return std::unexpected(id.error());
  auto u = c.store().get_user(*id);
  if (!u) return std::unexpected(store_error(u.error(), "user " + *id));
  TG_TRY_R(apply_user_fields(body, *u));
  u->updated_at_ms = c.now();
  auto r = c.store().update_user(*u);
  if (!r) return std::unexpected(store_error(r.error(), "user"));
  c.refresh();
  return json::value(user_object(*r));
}

// --- teams ---
std::optional<core::Error> apply_team_fields(const Context& c, const json::object& body, store::TeamRecord& t) {
  TG_TRY(apply_name(body, "team_alias", t.team_alias));
  TG_TRY(apply_name(body, "organization_id", t.organization_id));
  TG_TRY(apply_money(body, "max_budget", t.max_budget_nanos));
  TG_TRY(apply_duration(body, "budget_duration", t.budget_duration));
  TG_TRY(apply_list(body, "models", t.models));
  TG_TRY(apply_object(body, "metadata", t.metadata));
  TG_TRY(apply_count(body, "rpm_limit", t.rpm_limit));
  TG_TRY(apply_count(body, "tpm_limit", t.tpm_limit));
  TG_TRY(apply_name(body, "budget_id", t.budget_id));
  TG_TRY(apply_name(body, "allowed_model_region", t.allowed_model_region));
  if (body.contains("allowed_model_region")) TG_TRY(c.check_region(t.allowed_model_region));
  if (body.contains("blocked")) {
    auto b = get_bool(body, "blocked");
    if (!b) return b.error();
    t.blocked = b->value_or(false);
  }
  return std::nullopt;
}

/// Members from `member` (object or array) or `members_with_roles`; validated, users must exist.
Field<std::vector<store::TeamMemberRecord>> parse_members(const Context& c, const json::object& body, std::string_view field,
                                                          const std::string& team_id) {
  std::vector<store::TeamMemberRecord> out;
  const auto* v = body.if_contains(field);
  if (!v || v->is_null()) return out;
  json::array items;
  if (v->is_object()) items.push_back(*v);
  else if (v->is_array()) items = v->as_array();
  else return std::unexpected(bad_field(field, std::string(field) + " must be an object {user_id, role} or an array of them"));
  std::size_t i = 0;
  for (const auto& item : items) {
    const std::string at = std::string(field) + (v->is_array() ? "[" + std::to_string(i++) + "]" : "");
    if (!item.is_object()) return std::unexpected(bad_field(at, at + " must be an object {user_id, role}"));
    const auto& o = item.as_object();
    if (auto e = check_fields(o, {"user_id", "role"}, {"user_email"})) {
      e->param = at + "." + e->param;
      return std::unexpected(*e);
    }
    auto uid = require_name(o, "user_id");
    if (!uid) return std::unexpected(bad_field(at + ".user_id", uid.error().message));
    auto role = get_string(o, "role");
    if (!role) return std::unexpected(bad_field(at + ".role", role.error().message));
    store::TeamMemberRecord m;
    m.team_id = team_id;
    m.user_id = *uid;
    m.role = role->value_or("user");
    if (m.role != "user" && m.role != "admin")
      return std::unexpected(bad_field(at + ".role", "role must be \"user\" or \"admin\""));
    if (auto e = c.check_refs(m.user_id, "", "")) {
      e->param = at + ".user_id";
      return std::unexpected(*e);
    }
    out.push_back(std::move(m));
  }
  return out;
}

Field<json::object> team_json(const Context& c, const std::string& team_id) {
  auto t = c.store().get_team(team_id);
  if (!t) return std::unexpected(store_error(t.error(), "team " + team_id));
  auto members = c.store().list_team_members(team_id);
  if (!members) return std::unexpected(store_error(members.error(), "team members"));
  return team_object(*t, *members);
}

Reply team_new(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body,
                               {"team_id", "team_alias", "organization_id", "max_budget", "budget_duration", "models",
                                "metadata", "rpm_limit", "tpm_limit", "blocked", "budget_id", "allowed_model_region", "members_with_roles"},
                               {"tags", "guardrails", "model_aliases"}));
  store::TeamRecord t;
  TG_TRY_R(apply_name(body, "team_id", t.team_id));
  if (t.team_id.empty()) t.team_id = core::new_uuid();
  TG_TRY_R(apply_team_fields(c, body, t));
  TG_TRY_R(c.check_refs("", "", t.organization_id));
  TG_TRY_R(c.check_budget_ref(t.budget_id));
  auto members = parse_members(c, body, "members_with_roles", t.team_id);
  if (!members) return std::unexpected(members.error());
  t.created_at_ms = t.updated_at_ms = c.now();
  auto created = c.store().create_team(t);
  if (!created) return std::unexpected(store_error(created.error(), "team"));
  for (const auto& m : *members)
    if (auto r = c.store().upsert_team_member(m); !r) {
      c.refresh();
      return std::unexpected(store_error(r.error(), "team member"));
    }
  c.refresh();
  auto o = team_json(c, t.team_id);
  if (!o) return std::unexpected(o.error());
  return json::value(std::move(*o));
}

Reply team_info(const Context& c, const std::string& target) {
  auto id = query_param(target, "team_id");
  if (!id || id->empty()) return std::unexpected(bad_field("team_id", "missing required query parameter: team_id"));
  auto t = team_json(c, *id);
  if (!t) return std::unexpected(t.error());
  store::KeyFilter f;
  f.team_id = *id;
  auto keys = c.store().list_keys(f);
  if (!keys) return std::unexpected(store_error(keys.error(), "keys"));
  json::array ka;
  for (const auto& k : *keys) ka.push_back(c.key_with_spend(k));
  json::object o;
  o["team_id"] = *id;
  c.with_scope_spend(*t, budget::ScopeKind::team, *id);
  o["team_info"] = std::move(*t);
  o["keys"] = std::move(ka);
  return json::value(std::move(o));
}

Reply team_update(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body,
                               {"team_id", "team_alias", "organization_id", "max_budget", "budget_duration", "models",
                                "metadata", "rpm_limit", "tpm_limit", "blocked", "budget_id", "allowed_model_region"},
                               {"tags", "guardrails", "model_aliases"}));
  auto id = require_string(body, "team_id");
  if (!id) return std::unexpected(id.error());
  auto t = c.store().get_team(*id);
  if (!t) return std::unexpected(store_error(t.error(), "team " + *id));
  TG_TRY_R(apply_team_fields(c, body, *t));
  if (body.contains("organization_id")) TG_TRY_R(c.check_refs("", "", t->organization_id));
  if (body.contains("budget_id")) TG_TRY_R(c.check_budget_ref(t->budget_id));
  t->updated_at_ms = c.now();
  auto r = c.store().update_team(*t);
  if (!r) return std::unexpected(store_error(r.error(), "team"));
  c.refresh();
  auto o = team_json(c, *id);
  if (!o) return std::unexpected(o.error());
  return json::value(std::move(*o));
}

Reply team_member_add(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body, {"team_id", "member", "max_budget_in_team", "budget_duration"}));
  auto id = require_string(body, "team_id");
  if (!id) return std::unexpected(id.error());
  if (auto t = c.store().get_team(*id); !t) {
    if (t.error().code == store::StoreErrorCode::not_found)
      return std::unexpected(core::Error::caller(404, "not_found_error", "team " + *id + " not found", "team_id", "404"));
    return std::unexpected(store_error(t.error(), "team"));
  }
  if (!body.contains("member")) return std::unexpected(bad_field("member", "missing required field: member"));
  auto members = parse_members(c, body, "member", *id);
  if (!members) return std::unexpected(members.error());
  std::optional<std::int64_t> mb;
  TG_TRY_R(apply_money(body, "max_budget_in_team", mb));
  std::optional<std::string> dur;
  TG_TRY_R(apply_duration(body, "budget_duration", dur));
  for (auto& m : *members) {
    m.max_budget_in_team_nanos = mb;
    m.budget_duration = dur;
    if (auto r = c.store().upsert_team_member(m); !r) {
      c.refresh();
      return std::unexpected(store_error(r.error(), "team member"));
    }
  }
  c.refresh();
  auto o = team_json(c, *id);
  if (!o) return std::unexpected(o.error());
  return json::value(std::move(*o));
}

Reply team_member_delete(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body, {"team_id", "user_id"}, {"user_email"}));
  auto id = require_string(body, "team_id");
  if (!id) return std::unexpected(id.error());
  auto uid = require_string(body, "user_id");
  if (!uid) return std::unexpected(uid.error());
  auto r = c.store().remove_team_member(*id, *uid);
  if (!r) {
    auto e = store_error(r.error(), "membership of user " + *uid + " in team " + *id);
    if (e.status == 404) e.param = "user_id";
    return std::unexpected(e);
  }
  c.refresh();
  auto o = team_json(c, *id);
  if (!o) return std::unexpected(o.error());
  return json::value(std::move(*o));
}

// --- organizations ---
Reply org_new(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body, {"organization_id", "organization_alias", "max_budget", "budget_duration",
                                      "models", "metadata"},
                               {"tpm_limit", "rpm_limit", "soft_budget"}));
  store::OrganizationRecord r;
  TG_TRY_R(apply_name(body, "organization_id", r.organization_id));
  if (r.organization_id.empty()) r.organization_id = core::new_uuid();
  TG_TRY_R(apply_name(body, "organization_alias", r.organization_alias));
  TG_TRY_R(apply_money(body, "max_budget", r.max_budget_nanos));
  TG_TRY_R(apply_duration(body, "budget_duration", r.budget_duration));
  TG_TRY_R(apply_list(body, "models", r.models));
  TG_TRY_R(apply_object(body, "metadata", r.metadata));
  r.created_at_ms = r.updated_at_ms = c.now();
  auto created = c.store().create_organization(r);
  if (!created) return std::unexpected(store_error(created.error(), "organization"));
  c.refresh();
  return json::value(org_object(*created));
}

Reply org_info(const Context& c, const std::string& target) {
  auto id = query_param(target, "organization_id");
  if (!id || id->empty())
    return std::unexpected(bad_field("organization_id", "missing required query parameter: organization_id"));
  auto r = c.store().get_organization(*id);
  if (!r) return std::unexpected(store_error(r.error(), "organization " + *id));
  auto o = org_object(*r);
  c.with_scope_spend(o, budget::ScopeKind::organization, *id);
  auto teams = c.store().list_teams(*id);
  if (!teams) return std::unexpected(store_error(teams.error(), "teams"));
  json::array ta;
  for (const auto& t : *teams) ta.emplace_back(t.team_id);
  o["teams"] = std::move(ta);
  return json::value(std::move(o));
}

// --- customers ---
/// The fields /customer/new and /customer/update take (LiteLLM's NewCustomerRequest /
/// UpdateCustomerRequest), validated, applied to `cu` where present.
std::optional<core::Error> apply_customer_fields(const Context& c, const json::object& body, store::CustomerRecord& cu) {
  TG_TRY(check_fields(body,
                      {"user_id", "alias", "max_budget", "budget_duration", "blocked", "budget_id", "allowed_model_region"},
                      {"default_model"}));
  TG_TRY(apply_name(body, "alias", cu.alias));
  TG_TRY(apply_money(body, "max_budget", cu.max_budget_nanos));
  TG_TRY(apply_duration(body, "budget_duration", cu.budget_duration));
  TG_TRY(apply_name(body, "budget_id", cu.budget_id));
  if (body.contains("budget_id")) TG_TRY(c.check_budget_ref(cu.budget_id));
  TG_TRY(apply_name(body, "allowed_model_region", cu.allowed_model_region));
  if (body.contains("allowed_model_region")) TG_TRY(c.check_region(cu.allowed_model_region));
  if (body.contains("blocked")) {
    auto b = get_bool(body, "blocked");
    if (!b) return b.error();
    cu.blocked = b->value_or(false);
  }
  return std::nullopt;
}

Reply customer_new(const Context& c, const json::object& body) {
  store::CustomerRecord cu;
  auto id = require_name(body, "user_id");
  if (!id) return std::unexpected(id.error());
  cu.user_id = *id;
  TG_TRY_R(apply_customer_fields(c, body, cu));
  cu.created_at_ms = cu.updated_at_ms = c.now();
  auto created = c.store().create_customer(cu);
  if (!created) return std::unexpected(store_error(created.error(), "customer"));
  c.refresh();
  return json::value(customer_object(*created));
}

Reply customer_update(const Context& c, const json::object& body) {
  auto id = require_name(body, "user_id");
  if (!id) return std::unexpected(id.error());
  auto cu = c.store().get_customer(*id);
  if (!cu) return std::unexpected(store_error(cu.error(), "customer " + *id));
  TG_TRY_R(apply_customer_fields(c, body, *cu));
  cu->updated_at_ms = c.now();
  auto r = c.store().update_customer(*cu);
  if (!r) return std::unexpected(store_error(r.error(), "customer"));
  c.refresh();
  return json::value(customer_object(*r));
}

Reply customer_info(const Context& c, const std::string& target) {
  auto id = query_param(target, "end_user_id");
  if (!id || id->empty())
    return std::unexpected(bad_field("end_user_id", "missing required query parameter: end_user_id"));
  auto cu = c.store().get_customer(*id);
  if (!cu) return std::unexpected(store_error(cu.error(), "customer " + *id));
  auto o = c.customer_with_spend(*cu);
  if (!o) return std::unexpected(o.error());
  return json::value(std::move(*o));
}

Reply customer_block(const Context& c, const json::object& body, bool blocked) {
  TG_TRY_R(check_fields(body, {"user_ids"}));
  auto ids = get_name_list(body, "user_ids");
  if (!ids) return std::unexpected(ids.error());
  if (!*ids || (*ids)->empty()) return std::unexpected(bad_field("user_ids", "missing required field: user_ids"));
  json::array done;
  for (const auto& id : **ids) {
    if (id.empty()) return std::unexpected(bad_field("user_ids", "user_ids must not contain an empty id"));
    auto cu = c.store().get_customer(id);
    store::StoreResult<store::CustomerRecord> r;
    if (cu) {
      cu->blocked = blocked;
      cu->updated_at_ms = c.now();
      r = c.store().update_customer(*cu);
    } else if (cu.error().code == store::StoreErrorCode::not_found) {
      store::CustomerRecord n;  // LiteLLM upserts: blocking an unseen end user creates it
      n.user_id = id;
      n.blocked = blocked;
      n.created_at_ms = n.updated_at_ms = c.now();
      r = c.store().create_customer(n);
    } else {
      r = std::unexpected(cu.error());
    }
    if (!r) {
      c.refresh();
      return std::unexpected(store_error(r.error(), "customer " + id));
    }
    done.emplace_back(id);
  }
  c.refresh();
  json::object o;
  o[blocked ? "blocked_users" : "unblocked_users"] = std::move(done);
  return json::value(std::move(o));
}


// --- lists (LiteLLM GET /team/list, /user/list, /customer/list) -------------------------------

/// Comma-separated query values ("a,b" → {"a", "b"}); blanks dropped.
std::vector<std::string> query_list(std::string_view target, std::string_view name) {
  std::vector<std::string> out;
  auto q = query_param(target, name);
  if (!q) return out;
  std::string_view rest = *q;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    auto part = rest.substr(0, comma);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

/// GET /team/list[?user_id=&organization_id=]: an array of team objects, each with `spend` (the
/// team scope's ledger figures) and its `keys` (key objects), like LiteLLM's TeamListResponseObject.
Reply team_list(const Context& c, const std::string& target) {
  auto org = query_param(target, "organization_id");
  auto teams = c.store().list_teams(org && !org->empty() ? org : std::nullopt);
  if (!teams) return std::unexpected(store_error(teams.error(), "teams"));
  const auto user = query_param(target, "user_id").value_or("");
  if (!user.empty()) TG_TRY_R(c.check_refs(user, "", ""));
  auto snap = c.deps().identities->current();
  json::array out;
  for (const auto& t : *teams) {
    if (!user.empty() && !snap->member(t.team_id, user)) continue;
    auto o = team_json(c, t.team_id);
    if (!o) return std::unexpected(o.error());
    c.with_scope_spend(*o, budget::ScopeKind::team, t.team_id);
    store::KeyFilter f;
    f.team_id = t.team_id;
    auto keys = c.store().list_keys(f);
    if (!keys) return std::unexpected(store_error(keys.error(), "keys"));
    json::array ka;
    for (const auto& k : *keys) ka.push_back(c.key_with_spend(k));
    (*o)["keys"] = std::move(ka);
    out.push_back(std::move(*o));
  }
  return json::value(std::move(out));
}

/// GET /user/list[?user_ids=a,b&user_email=&team=&page=1&page_size=25]: LiteLLM's paginated
/// {"users": [user objects with spend and key_count], "total", "page", "page_size", "total_pages"}.
Reply user_list(const Context& c, const std::string& target) {
  auto page = positive_query_int(target, "page", 1);
  if (!page) return std::unexpected(page.error());
  auto size = positive_query_int(target, "page_size", 25);
  if (!size) return std::unexpected(size.error());
  if (*size > 100) return std::unexpected(bad_field("page_size", "page_size must be at most 100"));
  const auto ids = query_list(target, "user_ids");
  const auto email = query_param(target, "user_email").value_or("");
  const auto team = query_param(target, "team").value_or("");
  auto users = c.store().list_users();
  if (!users) return std::unexpected(store_error(users.error(), "users"));
  auto snap = c.deps().identities->current();
  std::vector<const store::UserRecord*> matched;
  for (const auto& u : *users) {
    if (!ids.empty() && std::ranges::find(ids, u.user_id) == ids.end()) continue;
    if (!email.empty() && u.user_email.find(email) == std::string::npos) continue;
    if (!team.empty() && !snap->member(team, u.user_id)) continue;
    matched.push_back(&u);
  }
  const auto total = static_cast<std::int64_t>(matched.size());
  json::array out;
  for (std::int64_t i = (*page - 1) * *size; i < std::min(total, *page * *size); ++i) {
    const auto& u = *matched[static_cast<std::size_t>(i)];
    auto o = user_object(u);
    c.with_scope_spend(o, budget::ScopeKind::user, u.user_id);
    store::KeyFilter f;
    f.user_id = u.user_id;
    auto keys = c.store().list_keys(f);
    if (!keys) return std::unexpected(store_error(keys.error(), "keys"));
    o["key_count"] = static_cast<std::int64_t>(keys->size());
    out.push_back(std::move(o));
  }
  json::object o;
  o["users"] = std::move(out);
  o["total"] = total;
  o["page"] = *page;
  o["page_size"] = *size;
  o["total_pages"] = (total + *size - 1) / *size;
  return json::value(std::move(o));
}

/// GET /customer/list: an array of end-user objects with `spend` (LiteLLM_EndUserTable).
Reply customer_list(const Context& c) {
  auto all = c.store().list_customers();
  if (!all) return std::unexpected(store_error(all.error(), "customers"));
  json::array out;
  for (const auto& cu : *all) {
    auto o = c.customer_with_spend(cu);
    if (!o) return std::unexpected(o.error());
    out.push_back(std::move(*o));
  }
  return json::value(std::move(out));
}

}  // namespace

std::span<const Route> entity_routes() {
  static constexpr Route routes[] = {
      {"/user/new", Method::post, [](const Context& c, const Call& q) { return user_new(c, q.body); }},
      {"/user/info", Method::get, [](const Context& c, const Call& q) { return user_info(c, q.target); }},
      {"/user/list", Method::get, [](const Context& c, const Call& q) { return user_list(c, q.target); }},
      {"/user/update", Method::post, [](const Context& c, const Call& q) { return user_update(c, q.body); }},
      {"/team/new", Method::post, [](const Context& c, const Call& q) { return team_new(c, q.body); }},
      {"/team/info", Method::get, [](const Context& c, const Call& q) { return team_info(c, q.target); }},
      {"/team/list", Method::get, [](const Context& c, const Call& q) { return team_list(c, q.target); }},
      {"/team/update", Method::post, [](const Context& c, const Call& q) { return team_update(c, q.body); }},
      {"/team/member_add", Method::post, [](const Context& c, const Call& q) { return team_member_add(c, q.body); }},
      {"/team/member_delete", Method::post,
       [](const Context& c, const Call& q) { return team_member_delete(c, q.body); }},
      {"/organization/new", Method::post, [](const Context& c, const Call& q) { return org_new(c, q.body); }},
      {"/organization/info", Method::get, [](const Context& c, const Call& q) { return org_info(c, q.target); }},
      {"/customer/new", Method::post, [](const Context& c, const Call& q) { return customer_new(c, q.body); }},
      {"/customer/update", Method::post, [](const Context& c, const Call& q) { return customer_update(c, q.body); }},
      {"/customer/info", Method::get, [](const Context& c, const Call& q) { return customer_info(c, q.target); }},
      {"/customer/list", Method::get, [](const Context& c, const Call&) { return customer_list(c); }},
      {"/customer/block", Method::post, [](const Context& c, const Call& q) { return customer_block(c, q.body, true); }},
      {"/customer/unblock", Method::post,
       [](const Context& c, const Call& q) { return customer_block(c, q.body, false); }},
  };
  return routes;
}

}  // namespace tollgate::api::admin
