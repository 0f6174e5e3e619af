#include "api/admin.hpp"
#include "api/json_body.hpp"

#include <algorithm>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "api/admin_fields.hpp"
#include "api/caller.hpp"
#include "api/errors.hpp"
#include "api/sinks.hpp"
#include "auth/caller_names.hpp"
#include "auth/credentials.hpp"
#include "auth/keys.hpp"
#include "budget/money.hpp"
#include "core/ids.hpp"

namespace tollgate::api {
namespace json = boost::json;
namespace bhttp = boost::beast::http;
using admin::bad_field;
using admin::Field;

namespace {

using Reply = std::expected<json::value, core::Error>;

enum class Method { get, post, get_or_post };

struct Route {
  std::string_view path;
  Method method;
};

constexpr Route kRoutes[] = {
    {"/key/generate", Method::post},      {"/key/info", Method::get},           {"/key/update", Method::post},
    {"/key/delete", Method::post},        {"/key/list", Method::get},           {"/key/block", Method::post},
    {"/key/unblock", Method::post},       {"/user/new", Method::post},          {"/user/info", Method::get},
    {"/user/update", Method::post},       {"/team/new", Method::post},          {"/team/info", Method::get},
    {"/team/update", Method::post},       {"/team/member_add", Method::post},   {"/team/member_delete", Method::post},
    {"/organization/new", Method::post},  {"/organization/info", Method::get},  {"/customer/new", Method::post},
    {"/customer/info", Method::get},      {"/customer/block", Method::post},    {"/customer/unblock", Method::post},
    {"/spend/logs", Method::get},         {"/global/spend", Method::get},
    {"/tag/new", Method::post},           {"/tag/info", Method::get_or_post},   {"/tag/list", Method::get},
    {"/tag/update", Method::post},        {"/tag/delete", Method::post},
};

const Route* find_route(std::string_view path) {
  for (const auto& r : kRoutes)
    if (r.path == path) return &r;
  return nullptr;
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

std::string_view path_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

json::array string_array(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

json::value opt_string(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }
template <class T>
json::value opt_value(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value opt_time(const std::optional<std::int64_t>& ms) {
  return ms ? json::value(auth::iso8601_utc(*ms)) : json::value(nullptr);
}

// --- record → JSON (LiteLLM field names) ------------------------------------------------------

json::object key_object(const store::KeyRecord& k) {
  json::object o;
  o["token"] = k.token_hash;
  o["key_name"] = opt_string(k.key_name);
  o["key_alias"] = opt_string(k.key_alias);
  o["spend"] = 0;
  o["max_budget"] = admin::dollars_json(k.max_budget_nanos);
  o["soft_budget"] = admin::dollars_json(k.soft_budget_nanos);
  o["budget_duration"] = opt_value(k.budget_duration);
  o["budget_reset_at"] = nullptr;
  o["budget_limits"] = admin::json_text(k.budget_limits, json::array());
  o["model_max_budget"] = admin::json_text(k.model_max_budget, json::object());
  o["expires"] = opt_time(k.expires_at_ms);
  o["models"] = string_array(k.models);
  o["user_id"] = opt_string(k.user_id);
  o["team_id"] = opt_string(k.team_id);
  o["organization_id"] = opt_string(k.organization_id);
  o["metadata"] = admin::json_text(k.metadata, json::object());
  o["tags"] = string_array(k.tags);
  o["max_parallel_requests"] = opt_value(k.max_parallel_requests);
  o["rpm_limit"] = opt_value(k.rpm_limit);
  o["tpm_limit"] = opt_value(k.tpm_limit);
  o["blocked"] = k.blocked;
  o["created_at"] = auth::iso8601_utc(k.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(k.updated_at_ms);
  return o;
}

json::object user_object(const store::UserRecord& u) {
  json::object o;
  o["user_id"] = u.user_id;
  o["user_email"] = opt_string(u.user_email);
  o["user_alias"] = opt_string(u.user_alias);
  o["max_budget"] = admin::dollars_json(u.max_budget_nanos);
  o["budget_duration"] = opt_value(u.budget_duration);
  o["models"] = string_array(u.models);
  o["metadata"] = admin::json_text(u.metadata, json::object());
  o["rpm_limit"] = opt_value(u.rpm_limit);
  o["tpm_limit"] = opt_value(u.tpm_limit);
  o["created_at"] = auth::iso8601_utc(u.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(u.updated_at_ms);
  return o;
}

json::object member_object(const store::TeamMemberRecord& m) {
  json::object o;
  o["user_id"] = m.user_id;
  o["role"] = m.role;
  o["max_budget_in_team"] = admin::dollars_json(m.max_budget_in_team_nanos);
  o["budget_duration"] = opt_value(m.budget_duration);
  return o;
}

json::object team_object(const store::TeamRecord& t, const std::vector<store::TeamMemberRecord>& members) {
  json::object o;
  o["team_id"] = t.team_id;
  o["team_alias"] = opt_string(t.team_alias);
  o["organization_id"] = opt_string(t.organization_id);
  o["max_budget"] = admin::dollars_json(t.max_budget_nanos);
  o["budget_duration"] = opt_value(t.budget_duration);
  o["models"] = string_array(t.models);
  o["metadata"] = admin::json_text(t.metadata, json::object());
  o["rpm_limit"] = opt_value(t.rpm_limit);
  o["tpm_limit"] = opt_value(t.tpm_limit);
  o["blocked"] = t.blocked;
  json::array ms;
  for (const auto& m : members) ms.push_back(member_object(m));
  o["members_with_roles"] = std::move(ms);
  o["created_at"] = auth::iso8601_utc(t.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(t.updated_at_ms);
  return o;
}

json::object org_object(const store::OrganizationRecord& r) {
  json::object o;
  o["organization_id"] = r.organization_id;
  o["organization_alias"] = opt_string(r.organization_alias);
  o["max_budget"] = admin::dollars_json(r.max_budget_nanos);
  o["budget_duration"] = opt_value(r.budget_duration);
  o["models"] = string_array(r.models);
  o["metadata"] = admin::json_text(r.metadata, json::object());
  o["created_at"] = auth::iso8601_utc(r.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(r.updated_at_ms);
  return o;
}

json::object customer_object(const store::CustomerRecord& c) {
  json::object o;
  o["user_id"] = c.user_id;
  o["alias"] = opt_string(c.alias);
  o["blocked"] = c.blocked;
  o["max_budget"] = admin::dollars_json(c.max_budget_nanos);
  o["budget_duration"] = opt_value(c.budget_duration);
  json::object bt;
  bt["max_budget"] = admin::dollars_json(c.max_budget_nanos);
  bt["budget_duration"] = opt_value(c.budget_duration);
  o["litellm_budget_table"] = std::move(bt);
  o["created_at"] = auth::iso8601_utc(c.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(c.updated_at_ms);
  return o;
}

json::object tag_object(const store::TagRecord& t) {
  json::object o;
  o["name"] = t.name;
  o["description"] = opt_string(t.description);
  o["models"] = json::array();
  o["max_budget"] = admin::dollars_json(t.max_budget_nanos);
  o["budget_duration"] = opt_value(t.budget_duration);
  json::object bt;
  bt["max_budget"] = admin::dollars_json(t.max_budget_nanos);
  bt["budget_duration"] = opt_value(t.budget_duration);
  o["litellm_budget_table"] = std::move(bt);
  o["created_at"] = auth::iso8601_utc(t.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(t.updated_at_ms);
  return o;
}

json::object spend_log_object(const store::SpendLogRow& r) {
  json::object o;
  o["request_id"] = r.request_id;
  o["call_type"] = r.call_type;
  o["api_key"] = r.api_key;
  o["key_alias"] = opt_string(r.key_alias);
  o["spend"] = admin::dollars_json(r.spend_nanos);
  o["total_tokens"] = r.total_tokens;
  o["prompt_tokens"] = r.prompt_tokens;
  o["completion_tokens"] = r.completion_tokens;
  o["cached_tokens"] = r.cached_tokens;
  o["startTime"] = auth::iso8601_utc(r.start_ms);
  o["endTime"] = auth::iso8601_utc(r.end_ms);
  o["request_duration_ms"] = r.request_duration_ms;
  o["completionStartTime"] = opt_time(r.completion_start_ms);
  o["model"] = r.model;
  o["model_id"] = r.model_id;
  o["model_group"] = r.model_group;
  o["requested_model"] = r.requested_model;
  o["custom_llm_provider"] = r.custom_llm_provider;
  o["api_base"] = r.api_base;
  o["user"] = r.user;
  o["metadata"] = admin::json_text(r.metadata, json::object());
  o["cache_hit"] = r.cache_hit ? "True" : "False";  // LiteLLM writes the Python bool as a string
  o["cache_key"] = r.cache_key;
  o["cache_saved_cost"] = admin::dollars_json(r.cache_saved_nanos);
  o["request_tags"] = string_array(r.request_tags);
  o["team_id"] = opt_string(r.team_id);
  o["organization_id"] = opt_string(r.organization_id);
  o["end_user"] = r.end_user;
  o["status"] = r.status;
  o["error_status"] = opt_string(r.error_status);
  o["priced"] = r.priced;
  o["unknown_outcome"] = r.unknown_outcome;
  o["attempts"] = admin::json_text(r.attempts, json::array());
  o["skipped_fallbacks"] = admin::json_text(r.skipped_fallbacks, json::array());
  o["degradation"] = opt_string(r.degradation);
  o["decision"] = r.decision.empty() ? json::value(nullptr) : admin::json_text(r.decision, json::object());
  o["line_items"] = admin::json_text(r.line_items, json::array());
  return o;
}

// --- field application (shared by */new and */update) ----------------------------------------

/// Applies `field` when present in `body` (null clears it). `get` validates; `set` stores.
template <class Getter, class Setter>
std::optional<core::Error> apply(const json::object& body, std::string_view field, Getter get, Setter set) {
  if (!body.contains(field)) return std::nullopt;
  auto v = get(body, field);
  if (!v) return v.error();
  set(std::move(*v));
  return std::nullopt;
}


std::optional<core::Error> apply_money(const json::object& body, std::string_view f, std::optional<std::int64_t>& out) {
  return apply(body, f, admin::get_money, [&](auto v) { out = v; });
}
std::optional<core::Error> apply_count(const json::object& body, std::string_view f, std::optional<std::int64_t>& out) {
  return apply(body, f, admin::get_count, [&](auto v) { out = v; });
}
std::optional<core::Error> apply_string(const json::object& body, std::string_view f, std::string& out) {
  return apply(body, f, admin::get_string, [&](auto v) { out = v.value_or(""); });
}
/// A stored name (id, alias, e-mail): apply_string with the name limit (admin::get_name).
std::optional<core::Error> apply_name(const json::object& body, std::string_view f, std::string& out) {
  return apply(body, f, admin::get_name, [&](auto v) { out = v.value_or(""); });
}
/// A key's tags: names, at most auth::kMaxRequestTags of them.
std::optional<core::Error> apply_tags(const json::object& body, std::string_view f, std::vector<std::string>& out) {
  auto get = [](const json::object& b, std::string_view field) {
    return admin::get_name_list(b, field, auth::kMaxRequestTags);
  };
  return apply(body, f, get, [&](auto v) { out = v.value_or(std::vector<std::string>{}); });
}
std::optional<core::Error> apply_list(const json::object& body, std::string_view f, std::vector<std::string>& out) {
  return apply(body, f, admin::get_string_list, [&](auto v) { out = v.value_or(std::vector<std::string>{}); });
}
std::optional<core::Error> apply_object(const json::object& body, std::string_view f, std::string& out) {
  return apply(body, f, admin::get_object_text, [&](auto v) { out = v.value_or(""); });
}
std::optional<core::Error> apply_duration(const json::object& body, std::string_view f, std::optional<std::string>& out) {
  return apply(body, f, admin::get_budget_duration, [&](auto v) { out = v; });
}

#define TG_TRY(expr) \
  if (auto e_ = (expr)) return *e_;
#define TG_TRY_R(expr) \
  if (auto e_ = (expr)) return std::unexpected(*e_);

constexpr std::string_view kKeyFields[] = {
    "key_alias", "duration",  "models",          "max_budget",      "budget_duration",       "soft_budget",
    "budget_limits", "model_max_budget", "team_id", "user_id",   "organization_id",       "metadata",
    "tags",      "max_parallel_requests", "rpm_limit", "tpm_limit", "blocked"};
/// LiteLLM fields accepted and ignored (no Tollgate behaviour attaches to them).
constexpr std::string_view kKeyTolerated[] = {"aliases", "config", "permissions",
                                                                   "send_invite_email", "allowed_cache_controls",
                                                                   "key_type"};

/// 400 naming the first field of a /key/generate or /key/update body that is not a key field.
std::optional<core::Error> unknown_key_field(const json::object& body) {
  for (const auto& kv : body) {
    const std::string_view k = kv.key();
    if (k == "key" || std::ranges::find(kKeyFields, k) != std::end(kKeyFields) ||
        std::ranges::find(kKeyTolerated, k) != std::end(kKeyTolerated))
      continue;
    return bad_field(k, "unknown field: " + std::string(k));
  }
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Admin::Impl {
  AdminDeps d;

  std::int64_t now() const { return d.now_ms ? d.now_ms() : auth::unix_now_ms(); }

  void refresh() const {
    if (auto r = d.identities->reload(*d.store); !r)
      spdlog::error("admin: identity snapshot reload failed ({}); model calls use the previous snapshot",
                    r.error().message);
  }

  json::object key_with_spend(const store::KeyRecord& k) const {
    auto o = key_object(k);
    if (d.spend_for_key) {
      for (auto& kv : d.spend_for_key(k)) o[kv.key()] = kv.value();
    }
    return o;
  }

  /// 400 naming `field` when the referenced id does not exist (empty ids are not checked).
  std::optional<core::Error> check_refs(const std::string& user_id, const std::string& team_id,
                                        const std::string& org_id) const {
    auto check = [this](auto result, std::string_view field, const std::string& id) -> std::optional<core::Error> {
      if (result) return std::nullopt;
      if (result.error().code == store::StoreErrorCode::not_found)
        return bad_field(field, "unknown " + std::string(field) + " '" + id + "'");
      return store_error(result.error(), field);
    };
    if (!user_id.empty())
      if (auto e = check(d.store->get_user(user_id), "user_id", user_id)) return e;
    if (!team_id.empty())
      if (auto e = check(d.store->get_team(team_id), "team_id", team_id)) return e;
    if (!org_id.empty())
      if (auto e = check(d.store->get_organization(org_id), "organization_id", org_id)) return e;
    return std::nullopt;
  }

  /// Applies every key field present in `body` to `k` (validated).
  std::optional<core::Error> apply_key_fields(const json::object& body, store::KeyRecord& k) const {
    TG_TRY(apply_name(body, "key_alias", k.key_alias));
    if (body.contains("duration")) {
      auto s = admin::get_string(body, "duration");
      if (!s) return s.error();
      if (!*s) {
        k.expires_at_ms.reset();
      } else {
        auto ms = admin::parse_duration_ms(**s);
        if (!ms) return bad_field("duration", "duration: " + ms.error());
        k.expires_at_ms = now() + *ms;
      }
    }
    TG_TRY(apply_list(body, "models", k.models));
    TG_TRY(apply_money(body, "max_budget", k.max_budget_nanos));
    TG_TRY(apply_duration(body, "budget_duration", k.budget_duration));
    TG_TRY(apply_money(body, "soft_budget", k.soft_budget_nanos));
    if (body.contains("budget_limits")) {
      auto v = admin::get_budget_limits(body);
      if (!v) return v.error();
      k.budget_limits = v->value_or("");
    }
    if (body.contains("model_max_budget")) {
      auto v = admin::get_model_max_budget(body);
      if (!v) return v.error();
      k.model_max_budget = v->value_or("");
    }
    TG_TRY(apply_name(body, "team_id", k.team_id));
    TG_TRY(apply_name(body, "user_id", k.user_id));
    TG_TRY(apply_name(body, "organization_id", k.organization_id));
    TG_TRY(apply_object(body, "metadata", k.metadata));
    TG_TRY(apply_tags(body, "tags", k.tags));
    TG_TRY(apply_count(body, "max_parallel_requests", k.max_parallel_requests));
    TG_TRY(apply_count(body, "rpm_limit", k.rpm_limit));
    TG_TRY(apply_count(body, "tpm_limit", k.tpm_limit));
    if (body.contains("blocked")) {
      auto b = admin::get_bool(body, "blocked");
      if (!b) return b.error();
      k.blocked = b->value_or(false);
    }
    return std::nullopt;
  }

  /// A key given as the secret (`sk-...`) or its hash → the stored record; 404 when unknown.
  Field<store::KeyRecord> resolve_key(const std::string& given, std::string_view field) const {
    if (given.empty()) return std::unexpected(bad_field(field, "missing required field: " + std::string(field)));
    const std::string hash = auth::is_token_hash(given) ? given : auth::sha256_hex(given);
    auto k = d.store->get_key(hash);
    if (!k) {
      auto e = store_error(k.error(), "key");
      e.param = std::string(field);
      if (e.status == 404) e.message = "key not found (unknown or deleted): " + std::string(field);
      return std::unexpected(e);
    }
    return *k;
  }

  // --- keys ---
  Reply key_generate(const json::object& body) const {
    // `key` (a caller-chosen secret) is a LiteLLM field too.
    TG_TRY_R(unknown_key_field(body));
    std::string secret;
    if (auto given = admin::get_string(body, "key"); !given) return std::unexpected(given.error());
    else if (*given) {
      if (!(*given)->starts_with("sk-") || (*given)->size() < 20)
        return std::unexpected(bad_field("key", "key must start with 'sk-' and be at least 20 characters"));
      secret = **given;
    }
    if (secret.empty()) {
      auto g = auth::generate_key();
      if (!g) return std::unexpected(core::Error::gateway(500, "api_error", g.error()));
      secret = *g;
    }
    store::KeyRecord k;
    k.token_hash = auth::sha256_hex(secret);
    k.key_name = auth::mask_key(secret);
    TG_TRY_R(apply_key_fields(body, k));
    TG_TRY_R(check_refs(k.user_id, k.team_id, k.organization_id));
    k.created_at_ms = k.updated_at_ms = now();
    auto created = d.store->create_key(k);
    if (!created) return std::unexpected(store_error(created.error(), "key"));
    refresh();
    auto o = key_with_spend(*created);
    o["key"] = secret;
    return json::value(std::move(o));
  }

  Reply key_info(const std::string& target) const {
    auto given = admin::query_param(target, "key");
    auto k = resolve_key(given.value_or(""), "key");
    if (!k) return std::unexpected(k.error());
    json::object o;
    o["key"] = k->token_hash;
    o["info"] = key_with_spend(*k);
    return json::value(std::move(o));
  }

  Reply key_update(const json::object& body) const {
    TG_TRY_R(unknown_key_field(body));
    auto given = admin::get_string(body, "key");
    if (!given) return std::unexpected(given.error());
    auto k = resolve_key(given->value_or(""), "key");
    if (!k) return std::unexpected(k.error());
    TG_TRY_R(apply_key_fields(body, *k));
    TG_TRY_R(check_refs(body.contains("user_id") ? k->user_id : "", body.contains("team_id") ? k->team_id : "",
                        body.contains("organization_id") ? k->organization_id : ""));
    k->updated_at_ms = now();
    auto updated = d.store->update_key(*k);
    if (!updated) return std::unexpected(store_error(updated.error(), "key"));
    refresh();
    return json::value(key_with_spend(*updated));
  }

  Reply key_block(const json::object& body, bool blocked) const {
    TG_TRY_R(admin::check_fields(body, {"key"}));
    auto given = admin::require_string(body, "key");
    if (!given) return std::unexpected(given.error());
    auto k = resolve_key(*given, "key");
    if (!k) return std::unexpected(k.error());
    k->blocked = blocked;
    k->updated_at_ms = now();
    auto updated = d.store->update_key(*k);
    if (!updated) return std::unexpected(store_error(updated.error(), "key"));
    refresh();
    return json::value(key_with_spend(*updated));
  }

  Reply key_delete(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body, {"keys", "key_aliases"}));
    auto keys = admin::get_string_list(body, "keys");
    if (!keys) return std::unexpected(keys.error());
    auto aliases = admin::get_string_list(body, "key_aliases");
    if (!aliases) return std::unexpected(aliases.error());
    if ((!*keys || (*keys)->empty()) && (!*aliases || (*aliases)->empty()))
      return std::unexpected(bad_field("keys", "missing required field: keys (an array of keys or token hashes)"));
    std::vector<std::string> hashes;
    json::array deleted;
    if (*keys) {
      std::size_t i = 0;
      for (const auto& given : **keys) {
        auto k = resolve_key(given, "keys[" + std::to_string(i++) + "]");
        if (!k) return std::unexpected(k.error());
        hashes.push_back(k->token_hash);
        deleted.emplace_back(given);
      }
    }
    if (*aliases) {
      std::size_t i = 0;
      for (const auto& alias : **aliases) {
        store::KeyFilter f;
        f.key_alias = alias;
        auto found = d.store->list_keys(f);
        if (!found) return std::unexpected(store_error(found.error(), "key"));
        const std::string field = "key_aliases[" + std::to_string(i++) + "]";
        if (found->empty())
          return std::unexpected(core::Error::caller(404, "not_found_error", "no key with alias '" + alias + "'", field, "404"));
        hashes.push_back(found->front().token_hash);
        deleted.emplace_back(alias);
      }
    }
    for (const auto& h : hashes) {
      auto r = d.store->delete_key(h);
      if (!r && r.error().code != store::StoreErrorCode::not_found) {
        refresh();
        return std::unexpected(store_error(r.error(), "key"));
      }
    }
    refresh();
    json::object o;
    o["deleted_keys"] = std::move(deleted);
    return json::value(std::move(o));
  }

  Reply key_list(const std::string& target) const {
    store::KeyFilter f;
    f.user_id = admin::query_param(target, "user_id");
    f.team_id = admin::query_param(target, "team_id");
    f.organization_id = admin::query_param(target, "organization_id");
    f.key_alias = admin::query_param(target, "key_alias");
    std::int64_t page = 1, size = 10;
    for (auto [name, out] : {std::pair<const char*, std::int64_t*>{"page", &page}, {"size", &size}}) {
      if (auto v = admin::query_param(target, name)) {
        try {
          *out = std::stoll(*v);
        } catch (...) {
          *out = 0;
        }
        if (*out < 1) return std::unexpected(bad_field(name, std::string(name) + " must be a positive integer"));
      }
    }
    size = std::min<std::int64_t>(size, 1000);
    const bool full = admin::query_param(target, "return_full_object").value_or("") == "true";
    f.limit = 1'000'000;
    auto all = d.store->list_keys(f);
    if (!all) return std::unexpected(store_error(all.error(), "keys"));
    const auto total = static_cast<std::int64_t>(all->size());
    json::array keys;
    for (std::int64_t i = (page - 1) * size; i < std::min(total, page * size); ++i) {
      const auto& k = (*all)[static_cast<std::size_t>(i)];
      if (full) keys.push_back(key_with_spend(k));
      else keys.emplace_back(k.token_hash);
    }
    json::object o;
    o["keys"] = std::move(keys);
    o["total_count"] = total;
    o["current_page"] = page;
    o["total_pages"] = (total + size - 1) / size;
    return json::value(std::move(o));
  }

  // --- users ---
  Reply user_new(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body,
                                 {"user_id", "user_email", "user_alias", "max_budget", "budget_duration", "models",
                                  "metadata", "rpm_limit", "tpm_limit", "auto_create_key", "key_alias", "duration",
                                  "teams"},
                                 {"user_role", "send_invite_email", "sso_user_id"}));
    store::UserRecord u;
    TG_TRY_R(apply_name(body, "user_id", u.user_id));
    if (u.user_id.empty()) u.user_id = core::new_uuid();
    TG_TRY_R(apply_user_fields(body, u));
    auto create_key = admin::get_bool(body, "auto_create_key");
    if (!create_key) return std::unexpected(create_key.error());
    auto teams = admin::get_name_list(body, "teams");
    if (!teams) return std::unexpected(teams.error());
    if (*teams)
      for (const auto& t : **teams) TG_TRY_R(check_refs("", t, ""));
    // Validate the key fields before anything is written.
    store::KeyRecord k;
    TG_TRY_R(apply_name(body, "key_alias", k.key_alias));
    if (body.contains("duration")) {
      auto s = admin::get_string(body, "duration");
      if (!s) return std::unexpected(s.error());
      if (*s) {
        auto ms = admin::parse_duration_ms(**s);
        if (!ms) return std::unexpected(bad_field("duration", "duration: " + ms.error()));
        k.expires_at_ms = now() + *ms;
      }
    }
    u.created_at_ms = u.updated_at_ms = now();
    auto created = d.store->create_user(u);
    if (!created) return std::unexpected(store_error(created.error(), "user"));
    if (*teams)
      for (const auto& t : **teams) {
        store::TeamMemberRecord m;
        m.team_id = t;
        m.user_id = u.user_id;
        if (auto r = d.store->upsert_team_member(m); !r) {
          refresh();
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
      k.created_at_ms = k.updated_at_ms = now();
      auto ck = d.store->create_key(k);
      if (!ck) {
        refresh();
        return std::unexpected(store_error(ck.error(), "key"));
      }
      o["key"] = *secret;
      o["token"] = k.token_hash;
      o["key_alias"] = opt_string(k.key_alias);
      o["expires"] = opt_time(k.expires_at_ms);
    }
    refresh();
    return json::value(std::move(o));
  }

  std::optional<core::Error> apply_user_fields(const json::object& body, store::UserRecord& u) const {
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

  /// The scope's ledger figures merged into `o` (spend 0 when the budget layer is absent).
  void with_scope_spend(json::object& o, budget::ScopeKind kind, const std::string& id) const {
    if (!d.spend_for_scope) {
      o["spend"] = 0;
      return;
    }
    for (auto& kv : d.spend_for_scope(budget::ScopeId{kind, id})) o[kv.key()] = kv.value();
  }

  Reply user_info(const std::string& target) const {
    auto id = admin::query_param(target, "user_id");
    if (!id || id->empty()) return std::unexpected(bad_field("user_id", "missing required query parameter: user_id"));
    auto u = d.store->get_user(*id);
    if (!u) return std::unexpected(store_error(u.error(), "user " + *id));
    store::KeyFilter f;
    f.user_id = *id;
    auto keys = d.store->list_keys(f);
    if (!keys) return std::unexpected(store_error(keys.error(), "keys"));
    json::array ka;
    for (const auto& k : *keys) ka.push_back(key_with_spend(k));
    json::array teams;
    auto snap = d.identities->current();
    auto all_teams = d.store->list_teams();
    if (!all_teams) return std::unexpected(store_error(all_teams.error(), "teams"));
    for (const auto& t : *all_teams)
      if (snap->member(t.team_id, *id)) teams.emplace_back(t.team_id);
    json::object o;
    o["user_id"] = *id;
    auto info = user_object(*u);
    with_scope_spend(info, budget::ScopeKind::user, *id);
    o["user_info"] = std::move(info);
    o["keys"] = std::move(ka);
    o["teams"] = std::move(teams);
    return json::value(std::move(o));
  }

  Reply user_update(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body,
                                 {"user_id", "user_email", "user_alias", "max_budget", "budget_duration", "models",
                                  "metadata", "rpm_limit", "tpm_limit"},
                                 {"user_role", "password"}));
    auto id = admin::require_string(body, "user_id");
    if (!id) return std::unexpected(id.error());
    auto u = d.store->get_user(*id);
    if (!u) return std::unexpected(store_error(u.error(), "user " + *id));
    TG_TRY_R(apply_user_fields(body, *u));
    u->updated_at_ms = now();
    auto r = d.store->update_user(*u);
    if (!r) return std::unexpected(store_error(r.error(), "user"));
    refresh();
    return json::value(user_object(*r));
  }

  // --- teams ---
  std::optional<core::Error> apply_team_fields(const json::object& body, store::TeamRecord& t) const {
    TG_TRY(apply_name(body, "team_alias", t.team_alias));
    TG_TRY(apply_name(body, "organization_id", t.organization_id));
    TG_TRY(apply_money(body, "max_budget", t.max_budget_nanos));
    TG_TRY(apply_duration(body, "budget_duration", t.budget_duration));
    TG_TRY(apply_list(body, "models", t.models));
    TG_TRY(apply_object(body, "metadata", t.metadata));
    TG_TRY(apply_count(body, "rpm_limit", t.rpm_limit));
    TG_TRY(apply_count(body, "tpm_limit", t.tpm_limit));
    if (body.contains("blocked")) {
      auto b = admin::get_bool(body, "blocked");
      if (!b) return b.error();
      t.blocked = b->value_or(false);
    }
    return std::nullopt;
  }

  /// Members from `member` (object or array) or `members_with_roles`; validated, users must exist.
  Field<std::vector<store::TeamMemberRecord>> parse_members(const json::object& body, std::string_view field,
                                                            const std::string& team_id) const {
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
      if (auto e = admin::check_fields(o, {"user_id", "role"}, {"user_email"})) {
        e->param = at + "." + e->param;
        return std::unexpected(*e);
      }
      auto uid = admin::require_name(o, "user_id");
      if (!uid) return std::unexpected(bad_field(at + ".user_id", uid.error().message));
      auto role = admin::get_string(o, "role");
      if (!role) return std::unexpected(bad_field(at + ".role", role.error().message));
      store::TeamMemberRecord m;
      m.team_id = team_id;
      m.user_id = *uid;
      m.role = role->value_or("user");
      if (m.role != "user" && m.role != "admin")
        return std::unexpected(bad_field(at + ".role", "role must be \"user\" or \"admin\""));
      if (auto e = check_refs(m.user_id, "", "")) {
        e->param = at + ".user_id";
        return std::unexpected(*e);
      }
      out.push_back(std::move(m));
    }
    return out;
  }

  Field<json::object> team_json(const std::string& team_id) const {
    auto t = d.store->get_team(team_id);
    if (!t) return std::unexpected(store_error(t.error(), "team " + team_id));
    auto members = d.store->list_team_members(team_id);
    if (!members) return std::unexpected(store_error(members.error(), "team members"));
    return team_object(*t, *members);
  }

  Reply team_new(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body,
                                 {"team_id", "team_alias", "organization_id", "max_budget", "budget_duration", "models",
                                  "metadata", "rpm_limit", "tpm_limit", "blocked", "members_with_roles"},
                                 {"tags", "guardrails", "model_aliases"}));
    store::TeamRecord t;
    TG_TRY_R(apply_name(body, "team_id", t.team_id));
    if (t.team_id.empty()) t.team_id = core::new_uuid();
    TG_TRY_R(apply_team_fields(body, t));
    TG_TRY_R(check_refs("", "", t.organization_id));
    auto members = parse_members(body, "members_with_roles", t.team_id);
    if (!members) return std::unexpected(members.error());
    t.created_at_ms = t.updated_at_ms = now();
    auto created = d.store->create_team(t);
    if (!created) return std::unexpected(store_error(created.error(), "team"));
    for (const auto& m : *members)
      if (auto r = d.store->upsert_team_member(m); !r) {
        refresh();
        return std::unexpected(store_error(r.error(), "team member"));
      }
    refresh();
    auto o = team_json(t.team_id);
    if (!o) return std::unexpected(o.error());
    return json::value(std::move(*o));
  }

  Reply team_info(const std::string& target) const {
    auto id = admin::query_param(target, "team_id");
    if (!id || id->empty()) return std::unexpected(bad_field("team_id", "missing required query parameter: team_id"));
    auto t = team_json(*id);
    if (!t) return std::unexpected(t.error());
    store::KeyFilter f;
    f.team_id = *id;
    auto keys = d.store->list_keys(f);
    if (!keys) return std::unexpected(store_error(keys.error(), "keys"));
    json::array ka;
    for (const auto& k : *keys) ka.push_back(key_with_spend(k));
    json::object o;
    o["team_id"] = *id;
    with_scope_spend(*t, budget::ScopeKind::team, *id);
    o["team_info"] = std::move(*t);
    o["keys"] = std::move(ka);
    return json::value(std::move(o));
  }

  Reply team_update(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body,
                                 {"team_id", "team_alias", "organization_id", "max_budget", "budget_duration", "models",
                                  "metadata", "rpm_limit", "tpm_limit", "blocked"},
                                 {"tags", "guardrails", "model_aliases"}));
    auto id = admin::require_string(body, "team_id");
    if (!id) return std::unexpected(id.error());
    auto t = d.store->get_team(*id);
    if (!t) return std::unexpected(store_error(t.error(), "team " + *id));
    TG_TRY_R(apply_team_fields(body, *t));
    if (body.contains("organization_id")) TG_TRY_R(check_refs("", "", t->organization_id));
    t->updated_at_ms = now();
    auto r = d.store->update_team(*t);
    if (!r) return std::unexpected(store_error(r.error(), "team"));
    refresh();
    auto o = team_json(*id);
    if (!o) return std::unexpected(o.error());
    return json::value(std::move(*o));
  }

  Reply team_member_add(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body, {"team_id", "member", "max_budget_in_team", "budget_duration"}));
    auto id = admin::require_string(body, "team_id");
    if (!id) return std::unexpected(id.error());
    if (auto t = d.store->get_team(*id); !t) {
      if (t.error().code == store::StoreErrorCode::not_found)
        return std::unexpected(core::Error::caller(404, "not_found_error", "team " + *id + " not found", "team_id", "404"));
      return std::unexpected(store_error(t.error(), "team"));
    }
    if (!body.contains("member")) return std::unexpected(bad_field("member", "missing required field: member"));
    auto members = parse_members(body, "member", *id);
    if (!members) return std::unexpected(members.error());
    std::optional<std::int64_t> mb;
    TG_TRY_R(apply_money(body, "max_budget_in_team", mb));
    std::optional<std::string> dur;
    TG_TRY_R(apply_duration(body, "budget_duration", dur));
    for (auto& m : *members) {
      m.max_budget_in_team_nanos = mb;
      m.budget_duration = dur;
      if (auto r = d.store->upsert_team_member(m); !r) {
        refresh();
        return std::unexpected(store_error(r.error(), "team member"));
      }
    }
    refresh();
    auto o = team_json(*id);
    if (!o) return std::unexpected(o.error());
    return json::value(std::move(*o));
  }

  Reply team_member_delete(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body, {"team_id", "user_id"}, {"user_email"}));
    auto id = admin::require_string(body, "team_id");
    if (!id) return std::unexpected(id.error());
    auto uid = admin::require_string(body, "user_id");
    if (!uid) return std::unexpected(uid.error());
    auto r = d.store->remove_team_member(*id, *uid);
    if (!r) {
      auto e = store_error(r.error(), "membership of user " + *uid + " in team " + *id);
      if (e.status == 404) e.param = "user_id";
      return std::unexpected(e);
    }
    refresh();
    auto o = team_json(*id);
    if (!o) return std::unexpected(o.error());
    return json::value(std::move(*o));
  }

  // --- organizations ---
  Reply org_new(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body, {"organization_id", "organization_alias", "max_budget", "budget_duration",
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
    r.created_at_ms = r.updated_at_ms = now();
    auto created = d.store->create_organization(r);
    if (!created) return std::unexpected(store_error(created.error(), "organization"));
    refresh();
    return json::value(org_object(*created));
  }

  Reply org_info(const std::string& target) const {
    auto id = admin::query_param(target, "organization_id");
    if (!id || id->empty())
      return std::unexpected(bad_field("organization_id", "missing required query parameter: organization_id"));
    auto r = d.store->get_organization(*id);
    if (!r) return std::unexpected(store_error(r.error(), "organization " + *id));
    auto o = org_object(*r);
    with_scope_spend(o, budget::ScopeKind::organization, *id);
    auto teams = d.store->list_teams(*id);
    if (!teams) return std::unexpected(store_error(teams.error(), "teams"));
    json::array ta;
    for (const auto& t : *teams) ta.emplace_back(t.team_id);
    o["teams"] = std::move(ta);
    return json::value(std::move(o));
  }

  // --- customers ---
  Reply customer_new(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body, {"user_id", "alias", "max_budget", "budget_duration", "blocked"},
                                 {"budget_id", "allowed_model_region", "default_model"}));
    store::CustomerRecord c;
    auto id = admin::require_name(body, "user_id");
    if (!id) return std::unexpected(id.error());
    c.user_id = *id;
    TG_TRY_R(apply_name(body, "alias", c.alias));
    TG_TRY_R(apply_money(body, "max_budget", c.max_budget_nanos));
    TG_TRY_R(apply_duration(body, "budget_duration", c.budget_duration));
    if (body.contains("blocked")) {
      auto b = admin::get_bool(body, "blocked");
      if (!b) return std::unexpected(b.error());
      c.blocked = b->value_or(false);
    }
    c.created_at_ms = c.updated_at_ms = now();
    auto created = d.store->create_customer(c);
    if (!created) return std::unexpected(store_error(created.error(), "customer"));
    refresh();
    return json::value(customer_object(*created));
  }

  Reply customer_info(const std::string& target) const {
    auto id = admin::query_param(target, "end_user_id");
    if (!id || id->empty())
      return std::unexpected(bad_field("end_user_id", "missing required query parameter: end_user_id"));
    auto c = d.store->get_customer(*id);
    if (!c) return std::unexpected(store_error(c.error(), "customer " + *id));
    auto o = customer_object(*c);
    with_scope_spend(o, budget::ScopeKind::end_user, *id);
    return json::value(std::move(o));
  }

  Reply customer_block(const json::object& body, bool blocked) const {
    TG_TRY_R(admin::check_fields(body, {"user_ids"}));
    auto ids = admin::get_name_list(body, "user_ids");
    if (!ids) return std::unexpected(ids.error());
    if (!*ids || (*ids)->empty()) return std::unexpected(bad_field("user_ids", "missing required field: user_ids"));
    json::array done;
    for (const auto& id : **ids) {
      if (id.empty()) return std::unexpected(bad_field("user_ids", "user_ids must not contain an empty id"));
      auto c = d.store->get_customer(id);
      store::StoreResult<store::CustomerRecord> r;
      if (c) {
        c->blocked = blocked;
        c->updated_at_ms = now();
        r = d.store->update_customer(*c);
      } else if (c.error().code == store::StoreErrorCode::not_found) {
        store::CustomerRecord n;  // LiteLLM upserts: blocking an unseen end user creates it
        n.user_id = id;
        n.blocked = blocked;
        n.created_at_ms = n.updated_at_ms = now();
        r = d.store->create_customer(n);
      } else {
        r = std::unexpected(c.error());
      }
      if (!r) {
        refresh();
        return std::unexpected(store_error(r.error(), "customer " + id));
      }
      done.emplace_back(id);
    }
    refresh();
    json::object o;
    o[blocked ? "blocked_users" : "unblocked_users"] = std::move(done);
    return json::value(std::move(o));
  }

  // --- tag budgets ---
  /// Fields of /tag/new and /tag/update. `models` / `model_info` are accepted and ignored
  /// (LiteLLM tag routing is not implemented).
  static std::optional<core::Error> check_tag_fields(const json::object& body) {
    return admin::check_fields(body, {"name", "description", "max_budget", "budget_duration"},
                               {"models", "model_info", "budget_id"});
  }

  static std::optional<core::Error> apply_tag_fields(const json::object& body, store::TagRecord& t) {
    TG_TRY(apply_string(body, "description", t.description));
    TG_TRY(apply_money(body, "max_budget", t.max_budget_nanos));
    TG_TRY(apply_duration(body, "budget_duration", t.budget_duration));
    return std::nullopt;
  }

  Reply tag_new(const json::object& body) const {
    TG_TRY_R(check_tag_fields(body));
    auto name = admin::require_name(body, "name");
    if (!name) return std::unexpected(name.error());
    store::TagRecord t;
    t.name = *name;
    TG_TRY_R(apply_tag_fields(body, t));
    t.created_at_ms = t.updated_at_ms = now();
    auto created = d.store->create_tag(t);
    if (!created) return std::unexpected(store_error(created.error(), "tag " + *name));
    refresh();
    return json::value(tag_object(*created));
  }

  Reply tag_update(const json::object& body) const {
    TG_TRY_R(check_tag_fields(body));
    auto name = admin::require_string(body, "name");
    if (!name) return std::unexpected(name.error());
    auto t = d.store->get_tag(*name);
    if (!t) return std::unexpected(store_error(t.error(), "tag " + *name));
    TG_TRY_R(apply_tag_fields(body, *t));
    t->updated_at_ms = now();
    auto r = d.store->update_tag(*t);
    if (!r) return std::unexpected(store_error(r.error(), "tag " + *name));
    refresh();
    return json::value(tag_object(*r));
  }

  Reply tag_delete(const json::object& body) const {
    TG_TRY_R(admin::check_fields(body, {"name"}));
    auto name = admin::require_string(body, "name");
    if (!name) return std::unexpected(name.error());
    auto r = d.store->delete_tag(*name);
    if (!r) return std::unexpected(store_error(r.error(), "tag " + *name));
    refresh();
    json::object o;
    o["message"] = "Tag " + *name + " deleted successfully";
    o["name"] = *name;
    return json::value(std::move(o));
  }

  /// GET /tag/info?names=a,b or POST /tag/info {"names": [...]}: {name: tag, ...}; 404 on the
  /// first unknown name.
  Reply tag_info(const std::string& target, const json::object& body, bool is_post) const {
    std::vector<std::string> names;
    if (is_post) {
      TG_TRY_R(admin::check_fields(body, {"names"}));
      auto v = admin::get_string_list(body, "names");
      if (!v) return std::unexpected(v.error());
      if (*v) names = std::move(**v);
    } else if (auto q = admin::query_param(target, "names")) {
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
      auto t = d.store->get_tag(n);
      if (!t) {
        auto e = store_error(t.error(), "tag " + n);
        if (e.status == 404) e.param = "names";
        return std::unexpected(e);
      }
      o[n] = tag_object(*t);
    }
    return json::value(std::move(o));
  }

  Reply tag_list() const {
    auto tags = d.store->list_tags();
    if (!tags) return std::unexpected(store_error(tags.error(), "tags"));
    json::array a;
    for (const auto& t : *tags) a.push_back(tag_object(t));
    return json::value(std::move(a));
  }

  // --- spend ---
  Reply spend_logs(const std::string& target) const {
    store::SpendLogFilter f;
    if (auto k = admin::query_param(target, "api_key"); k && !k->empty())
      f.api_key = auth::is_token_hash(*k) ? *k : auth::sha256_hex(*k);
    if (auto v = admin::query_param(target, "user_id"); v && !v->empty()) f.user = *v;
    if (auto v = admin::query_param(target, "team_id"); v && !v->empty()) f.team_id = *v;
    if (auto v = admin::query_param(target, "request_id"); v && !v->empty()) f.request_id = *v;
    if (auto v = admin::query_param(target, "start_date"); v && !v->empty()) {
      auto ms = admin::parse_iso_time_ms(*v);
      if (!ms) return std::unexpected(bad_field("start_date", "start_date: " + ms.error()));
      f.start_ms = *ms;
    }
    if (auto v = admin::query_param(target, "end_date"); v && !v->empty()) {
      auto ms = admin::parse_iso_time_ms(*v);
      if (!ms) return std::unexpected(bad_field("end_date", "end_date: " + ms.error()));
      // A bare date includes that whole day (LiteLLM's UI sends dates).
      f.end_ms = v->size() == 10 ? *ms + 86'400'000 : *ms;
    }
    if (auto v = admin::query_param(target, "limit")) {
      try {
        f.limit = std::stoll(*v);
      } catch (...) {
        f.limit = 0;
      }
      if (f.limit < 1) return std::unexpected(bad_field("limit", "limit must be a positive integer"));
    }
    auto rows = d.store->query_spend_logs(f);
    if (!rows) return std::unexpected(store_error(rows.error(), "spend logs"));
    json::array a;
    for (const auto& r : *rows) a.push_back(spend_log_object(r));
    return json::value(std::move(a));
  }

  Reply global_spend() const {
    auto g = d.store->global_spend(std::nullopt, std::nullopt);
    if (!g) return std::unexpected(store_error(g.error(), "global spend"));
    json::object o;
    o["spend"] = admin::dollars_json(g->total_spend_nanos);
    json::value max = nullptr;
    if (const auto& mb = d.config->litellm_settings.max_budget)
      if (auto n = budget::parse_dollars(*mb)) max = admin::dollars_json(*n);
    o["max_budget"] = max;
    o["requests"] = g->requests;
    o["total_tokens"] = g->total_tokens;
    return json::value(std::move(o));
  }
};

// ---------------------------------------------------------------------------------------------

Admin::Admin(AdminDeps deps) : impl_(std::make_shared<Impl>()) {
  impl_->d = std::move(deps);
  if (!impl_->d.identities) impl_->d.identities = std::make_shared<auth::Identities>();
}

bool Admin::is_admin_path(std::string_view path) { return find_route(path) != nullptr; }

namespace {

http::Response error_response(const core::Error& e) { return json_response(e.status, openai_error_json(e)); }


}  // namespace

http::Response Admin::handle(const http::Request& req) const {
  const std::string target(req.target());
  const auto path = path_of(target);
  const Route* route = find_route(path);
  if (!route) return error_response(core::Error::caller(404, "invalid_request_error", "unknown path " + std::string(path), {}, "not_found"));

  const auto& master = impl_->d.config->general_settings.master_key;
  const auto presented = presented_key(req);
  if (master.empty())
    return error_response(core::Error::caller(
        401, "auth_error", "the admin API needs general_settings.master_key to be configured", {}, "401"));
  if (presented.empty() || !auth::constant_time_equal(presented, master))
    return error_response(core::Error::caller(
        401, "auth_error",
        presented.empty() ? "Authentication Error, No api key passed in." : "Authentication Error, only the master key may call " + std::string(path),
        {}, "401"));

  const auto m = req.method();
  const bool is_get = m == bhttp::verb::get || m == bhttp::verb::head;
  const bool is_post = m == bhttp::verb::post;
  const bool allowed = route->method == Method::get    ? is_get
                       : route->method == Method::post ? is_post
                                                       : is_get || is_post;
  if (!allowed) {
    auto res = error_response(core::Error::caller(405, "invalid_request_error",
                                                  "method " + std::string(req.method_string()) + " not allowed on " + std::string(path), {},
                                                  "method_not_allowed"));
    res.set(bhttp::field::allow, route->method == Method::get    ? "GET, HEAD"
                                 : route->method == Method::post ? "POST"
                                                                 : "GET, HEAD, POST");
    return res;
  }
  const bool want_get = !is_post;
  if (!impl_->d.store)
    return error_response(core::Error::gateway(503, "service_unavailable", "no database configured", "503"));

  json::object body;
  if (!want_get) {
    auto b = parse_json_object(req.body(), 32, true);
    if (!b) return error_response(b.error());
    body = std::move(*b);
  }
  const Impl& a = *impl_;
  Reply r;
  if (path == "/key/generate") r = a.key_generate(body);
  else if (path == "/key/info") r = a.key_info(target);
  else if (path == "/key/update") r = a.key_update(body);
  else if (path == "/key/delete") r = a.key_delete(body);
  else if (path == "/key/list") r = a.key_list(target);
  else if (path == "/key/block") r = a.key_block(body, true);
  else if (path == "/key/unblock") r = a.key_block(body, false);
  else if (path == "/user/new") r = a.user_new(body);
  else if (path == "/user/info") r = a.user_info(target);
  else if (path == "/user/update") r = a.user_update(body);
  else if (path == "/team/new") r = a.team_new(body);
  else if (path == "/team/info") r = a.team_info(target);
  else if (path == "/team/update") r = a.team_update(body);
  else if (path == "/team/member_add") r = a.team_member_add(body);
  else if (path == "/team/member_delete") r = a.team_member_delete(body);
  else if (path == "/organization/new") r = a.org_new(body);
  else if (path == "/organization/info") r = a.org_info(target);
  else if (path == "/customer/new") r = a.customer_new(body);
  else if (path == "/customer/info") r = a.customer_info(target);
  else if (path == "/customer/block") r = a.customer_block(body, true);
  else if (path == "/customer/unblock") r = a.customer_block(body, false);
  else if (path == "/tag/new") r = a.tag_new(body);
  else if (path == "/tag/info") r = a.tag_info(target, body, is_post);
  else if (path == "/tag/list") r = a.tag_list();
  else if (path == "/tag/update") r = a.tag_update(body);
  else if (path == "/tag/delete") r = a.tag_delete(body);
  else if (path == "/spend/logs") r = a.spend_logs(target);
  else r = a.global_spend();
  if (!r) return error_response(r.error());
  return json_response(200, json::serialize(*r));
}

}  // namespace tollgate::api
