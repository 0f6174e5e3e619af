// The budget endpoints: /budget/* (reusable budgets linked by budget_id, LiteLLM
// proxy/users "budget_id") and /tag/* (tag budgets, LiteLLM proxy/tag_budgets).
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

// --- tag budgets ---
/// Fields of /tag/new and /tag/update. `models` / `model_info` (LiteLLM's per-tag model lists
/// from its UI's tag management) are accepted and ignored: tag routing follows the deployments'
/// `litellm_params.tags` (docs/config.md "Routing constraints").
std::optional<core::Error> check_tag_fields(const json::object& body) {
  return check_fields(body, {"name", "description", "max_budget", "budget_duration"},
                             {"models", "model_info", "budget_id"});
}

std::optional<core::Error> apply_tag_fields(const json::object& body, store::TagRecord& t) {
  TG_TRY(apply_string(body, "description", t.description));
  TG_TRY(apply_money(body, "max_budget", t.max_budget_nanos));
  TG_TRY(apply_duration(body, "budget_duration", t.budget_duration));
  return std::nullopt;
}

Reply tag_new(const Context& c, const json::object& body) {
  TG_TRY_R(check_tag_fields(body));
  auto name = require_name(body, "name");
  if (!name) return std::unexpected(name.error());
  store::TagRecord t;
  t.name = *name;
  TG_TRY_R(apply_tag_fields(body, t));
  t.created_at_ms = t.updated_at_ms = c.now();
  auto created = c.store().create_tag(t);
  if (!created) return std::unexpected(store_error(created.error(), "tag " + *name));
  c.refresh();
  return json::value(tag_object(*created));
}

Reply tag_update(const Context& c, const json::object& body) {
  TG_TRY_R(check_tag_fields(body));
  auto name = require_string(body, "name");
  if (!name) return std::unexpected(name.error());
  auto t = c.store().get_tag(*name);
  if (!t) return std::unexpected(store_error(t.error(), "tag " + *name));
  TG_TRY_R(apply_tag_fields(body, *t));
  t->updated_at_ms = c.now();
  auto r = c.store().update_tag(*t);
  if (!r) return std::unexpected(store_error(r.error(), "tag " + *name));
  c.refresh();
  return json::value(tag_object(*r));
}

Reply tag_delete(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body, {"name"}));
  auto name = require_string(body, "name");
  if (!name) return std::unexpected(name.error());
  auto r = c.store().delete_tag(*name);
  if (!r) return std::unexpected(store_error(r.error(), "tag " + *name));
  c.refresh();
  json::object o;
  o["message"] = "Tag " + *name + " deleted successfully";
  o["name"] = *name;
  return json::value(std::move(o));
}

/// GET /tag/info?names=a,b or POST /tag/info {"names": [...]}: {name: tag, ...}; 404 on the
/// first unknown name.
Reply tag_info(const Context& c, const std::string& target, const json::object& body, bool is_post) {
  std::vector<std::string> names;
  if (is_post) {
    TG_TRY_R(check_fields(body, {"names"}));
    auto v = get_string_list(body, "names");
    if (!v) return std::unexpected(v.error());
    if (*v) names = std::move(**v);
  } else if (auto q = query_param(target, "names")) {
    std::string_view rest = *q;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      auto part = rest.substr(0, comma);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      if (!part.empty()) names.emplace_back(part);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (names.empty()) return std::unexpected(bad_field("names", "missing required field: names"));
  json::object o;
  for (const auto& n : names) {
    if (n.empty()) return std::unexpected(bad_field("names", "names must not contain an empty name"));
    auto t = c.store().get_tag(n);
    if (!t) {
      auto e = store_error(t.error(), "tag " + n);
      if (e.status == 404) e.param = "names";
      return std::unexpected(e);
    }
    o[n] = tag_object(*t);
  }
  return json::value(std::move(o));
}

Reply tag_list(const Context& c) {
  auto tags = c.store().list_tags();
  if (!tags) return std::unexpected(store_error(tags.error(), "tags"));
  json::array a;
  for (const auto& t : *tags) a.push_back(tag_object(t));
  return json::value(std::move(a));
}


// --- reusable budgets (/budget/*) -------------------------------------------------------------

/// Fields of /budget/new and /budget/update (LiteLLM BudgetNewRequest).
std::optional<core::Error> check_budget_fields(const json::object& body) {
  return check_fields(body, {"budget_id", "max_budget", "soft_budget", "max_parallel_requests", "tpm_limit", "rpm_limit",
                             "budget_duration"});
}

std::optional<core::Error> apply_budget_fields(const json::object& body, store::BudgetRecord& b) {
  TG_TRY(apply_money(body, "max_budget", b.max_budget_nanos));
  TG_TRY(apply_money(body, "soft_budget", b.soft_budget_nanos));
  TG_TRY(apply_count(body, "max_parallel_requests", b.max_parallel_requests));
  TG_TRY(apply_count(body, "tpm_limit", b.tpm_limit));
  TG_TRY(apply_count(body, "rpm_limit", b.rpm_limit));
  TG_TRY(apply_duration(body, "budget_duration", b.budget_duration));
  return std::nullopt;
}

Reply budget_new(const Context& c, const json::object& body) {
  TG_TRY_R(check_budget_fields(body));
  store::BudgetRecord b;
  TG_TRY_R(apply_name(body, "budget_id", b.budget_id));
  if (b.budget_id.empty()) b.budget_id = core::new_uuid();
  TG_TRY_R(apply_budget_fields(body, b));
  b.created_at_ms = b.updated_at_ms = c.now();
  auto created = c.store().create_budget(b);
  if (!created) return std::unexpected(store_error(created.error(), "budget"));
  c.refresh();
  return json::value(budget_object(*created));
}

Reply budget_update(const Context& c, const json::object& body) {
  TG_TRY_R(check_budget_fields(body));
  auto id = require_string(body, "budget_id");
  if (!id) return std::unexpected(id.error());
  auto b = c.store().get_budget(*id);
  if (!b) return std::unexpected(store_error(b.error(), "budget " + *id));
  TG_TRY_R(apply_budget_fields(body, *b));
  b->updated_at_ms = c.now();
  auto r = c.store().update_budget(*b);
  if (!r) return std::unexpected(store_error(r.error(), "budget " + *id));
  c.refresh();
  return json::value(budget_object(*r));
}

/// POST /budget/info {"budgets": [ids]}: the budgets, in the order asked; 404 on the first unknown.
Reply budget_info(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body, {"budgets"}));
  auto ids = get_name_list(body, "budgets");
  if (!ids) return std::unexpected(ids.error());
  if (!*ids || (*ids)->empty()) return std::unexpected(bad_field("budgets", "missing required field: budgets (an array of budget ids)"));
  json::array out;
  for (const auto& id : **ids) {
    auto b = c.store().get_budget(id);
    if (!b) {
      auto e = store_error(b.error(), "budget " + id);
      if (e.status == 404) e.param = "budgets";
      return std::unexpected(e);
    }
    out.push_back(budget_object(*b));
  }
  return json::value(std::move(out));
}

Reply budget_list(const Context& c) {
  auto all = c.store().list_budgets();
  if (!all) return std::unexpected(store_error(all.error(), "budgets"));
  json::array out;
  for (const auto& b : *all) out.push_back(budget_object(b));
  return json::value(std::move(out));
}

/// POST /budget/delete {"id"}: refused (400 naming every linked key, team and customer) while
/// anything links the budget — LiteLLM's database refuses the delete through its foreign keys
/// (a 500 there); here the caller learns what to unlink first.
Reply budget_delete(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body, {"id"}));
  auto id = require_string(body, "id");
  if (!id) return std::unexpected(id.error());
  auto b = c.store().get_budget(*id);
  if (!b) return std::unexpected(store_error(b.error(), "budget " + *id));
  auto snap = c.store().load_all_identities();
  if (!snap) return std::unexpected(store_error(snap.error(), "identities"));
  std::vector<std::string> links;
  for (const auto& k : snap->keys)
    if (k.budget_id == *id) links.push_back("key " + (k.key_alias.empty() ? k.key_name : k.key_alias));
  for (const auto& t : snap->teams)
    if (t.budget_id == *id) links.push_back("team " + t.team_id);
  for (const auto& cu : snap->customers)
    if (cu.budget_id == *id) links.push_back("customer " + cu.user_id);
  if (!links.empty()) {
    std::string list;
    for (const auto& l : links) list += (list.empty() ? "" : ", ") + l;
    return std::unexpected(bad_field("id", "budget " + *id + " is still linked (budget_id) by: " + list +
                                               "; unlink them first"));
  }
  auto r = c.store().delete_budget(*id);
  if (!r) return std::unexpected(store_error(r.error(), "budget " + *id));
  c.refresh();
  return json::value(budget_object(*b));
}

}  // namespace

std::span<const Route> budget_routes() {
  static constexpr Route routes[] = {
      {"/budget/new", Method::post, [](const Context& c, const Call& q) { return budget_new(c, q.body); }},
      {"/budget/update", Method::post, [](const Context& c, const Call& q) { return budget_update(c, q.body); }},
      {"/budget/info", Method::post, [](const Context& c, const Call& q) { return budget_info(c, q.body); }},
      {"/budget/list", Method::get, [](const Context& c, const Call&) { return budget_list(c); }},
      {"/budget/delete", Method::post, [](const Context& c, const Call& q) { return budget_delete(c, q.body); }},
      {"/tag/new", Method::post, [](const Context& c, const Call& q) { return tag_new(c, q.body); }},
      {"/tag/info", Method::get_or_post,
       [](const Context& c, const Call& q) { return tag_info(c, q.target, q.body, q.is_post); }},
      {"/tag/list", Method::get, [](const Context& c, const Call&) { return tag_list(c); }},
      {"/tag/update", Method::post, [](const Context& c, const Call& q) { return tag_update(c, q.body); }},
      {"/tag/delete", Method::post, [](const Context& c, const Call& q) { return tag_delete(c, q.body); }},
  };
  return routes;
}

}  // namespace tollgate::api::admin
