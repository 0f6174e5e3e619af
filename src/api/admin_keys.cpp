// The /key/* endpoints (LiteLLM proxy/virtual_keys).
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

constexpr std::string_view kKeyFields[] = {
    "key_alias", "duration",  "models",          "max_budget",      "budget_duration",       "soft_budget",
    "budget_limits", "model_max_budget", "team_id", "user_id",   "organization_id",       "metadata",
    "tags",      "max_parallel_requests", "rpm_limit", "tpm_limit", "blocked", "budget_id", "allowed_model_region"};
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


/// Applies every key field present in `body` to `k` (validated).
std::optional<core::Error> apply_key_fields(const Context& c, const json::object& body, store::KeyRecord& k) {
  TG_TRY(apply_name(body, "key_alias", k.key_alias));
  if (body.contains("duration")) {
    auto s = get_string(body, "duration");
    if (!s) return s.error();
    if (!*s) {
      k.expires_at_ms.reset();
    } else {
      auto ms = parse_duration_ms(**s);
      if (!ms) return bad_field("duration", "duration: " + ms.error());
      k.expires_at_ms = c.now() + *ms;
    }
  }
  TG_TRY(apply_list(body, "models", k.models));
  TG_TRY(apply_money(body, "max_budget", k.max_budget_nanos));
  TG_TRY(apply_duration(body, "budget_duration", k.budget_duration));
  TG_TRY(apply_money(body, "soft_budget", k.soft_budget_nanos));
  if (body.contains("budget_limits")) {
    auto v = get_budget_limits(body);
    if (!v) return v.error();
    k.budget_limits = v->value_or("");
  }
  if (body.contains("model_max_budget")) {
    auto v = get_model_max_budget(body);
    if (!v) return v.error();
    k.model_max_budget = v->value_or("");
  }
  TG_TRY(apply_name(body, "team_id", k.team_id));
  TG_TRY(apply_name(body, "user_id", k.user_id));
  TG_TRY(apply_name(body, "organization_id", k.organization_id));
  TG_TRY(apply_name(body, "budget_id", k.budget_id));
  TG_TRY(apply_name(body, "allowed_model_region", k.allowed_model_region));
  if (body.contains("allowed_model_region")) TG_TRY(c.check_region(k.allowed_model_region));
  TG_TRY(apply_object(body, "metadata", k.metadata));
  TG_TRY(apply_tags(body, "tags", k.tags));
  TG_TRY(apply_count(body, "max_parallel_requests", k.max_parallel_requests));
  TG_TRY(apply_count(body, "rpm_limit", k.rpm_limit));
  TG_TRY(apply_count(body, "tpm_limit", k.tpm_limit));
  if (body.contains("blocked")) {
    auto b = get_bool(body, "blocked");
    if (!b) return b.error();
    k.blocked = b->value_or(false);
  }
  return std::nullopt;
}

// --- keys ---
Reply key_generate(const Context& c, const json::object& body) {
  // `key` (a caller-chosen secret) is a LiteLLM field too.
  TG_TRY_R(unknown_key_field(body));
  std::string secret;
  if (auto given = get_string(body, "key"); !given) return std::unexpected(given.error());
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
  TG_TRY_R(apply_key_fields(c, body, k));
  TG_TRY_R(c.check_refs(k.user_id, k.team_id, k.organization_id));
  TG_TRY_R(c.check_budget_ref(k.budget_id));
  k.created_at_ms = k.updated_at_ms = c.now();
  auto created = c.store().create_key(k);
  if (!created) return std::unexpected(store_error(created.error(), "key"));
  c.refresh();
  auto o = c.key_with_spend(*created);
  o["key"] = secret;
  return json::value(std::move(o));
}

/// GET /key/info?key=: the master key reads any key; a virtual key only itself (`key` absent or
/// naming itself; any other key, known or not, is 403 so that a key cannot probe for others).
Reply key_info(const Context& c, const Call& q) {
  auto given = query_param(q.target, "key");
  if (!q.is_master()) {
    const auto& own = q.caller_token();
    if (given && !given->empty() && (auth::is_token_hash(*given) ? *given : auth::sha256_hex(*given)) != own)
      return std::unexpected(core::Error::caller(403, "auth_error", "a virtual key may only read its own key", "key", "403"));
    given = own;
  }
  auto k = c.resolve_key(given.value_or(""), "key");
  if (!k) return std::unexpected(k.error());
  json::object o;
  o["key"] = k->token_hash;
  o["info"] = c.key_with_spend(*k);
  return json::value(std::move(o));
}

Reply key_update(const Context& c, const json::object& body) {
  TG_TRY_R(unknown_key_field(body));
  auto given = get_string(body, "key");
  if (!given) return std::unexpected(given.error());
  auto k = c.resolve_key(given->value_or(""), "key");
  if (!k) return std::unexpected(k.error());
  const auto old_duration = k->budget_duration;
  TG_TRY_R(apply_key_fields(c, body, *k));
  if (body.contains("budget_id")) TG_TRY_R(c.check_budget_ref(k->budget_id));
  TG_TRY_R(c.check_refs(body.contains("user_id") ? k->user_id : "", body.contains("team_id") ? k->team_id : "",
                      body.contains("organization_id") ? k->organization_id : ""));
  k->updated_at_ms = c.now();
  auto updated = c.store().update_key(*k);
  if (!updated) return std::unexpected(store_error(updated.error(), "key"));
  c.refresh();
  // A budget_duration added or changed starts a new window with spend 0 now (LiteLLM #34270:
  // carrying the old spend into the new period is reported as a bug there).
  if (updated->budget_duration && updated->budget_duration != old_duration && c.deps().restart_key_window)
    c.deps().restart_key_window(*updated);
  return json::value(c.key_with_spend(*updated));
}

Reply key_block(const Context& c, const json::object& body, bool blocked) {
  TG_TRY_R(check_fields(body, {"key"}));
  auto given = require_string(body, "key");
  if (!given) return std::unexpected(given.error());
  auto k = c.resolve_key(*given, "key");
  if (!k) return std::unexpected(k.error());
  k->blocked = blocked;
  k->updated_at_ms = c.now();
  auto updated = c.store().update_key(*k);
  if (!updated) return std::unexpected(store_error(updated.error(), "key"));
  c.refresh();
  return json::value(c.key_with_spend(*updated));
}

Reply key_delete(const Context& c, const json::object& body) {
  TG_TRY_R(check_fields(body, {"keys", "key_aliases"}));
  auto keys = get_string_list(body, "keys");
  if (!keys) return std::unexpected(keys.error());
  auto aliases = get_string_list(body, "key_aliases");
  if (!aliases) return std::unexpected(aliases.error());
  if ((!*keys || (*keys)->empty()) && (!*aliases || (*aliases)->empty()))
    return std::unexpected(bad_field("keys", "missing required field: keys (an array of keys or token hashes)"));
  std::vector<std::string> hashes;
  json::array deleted;
  if (*keys) {
    std::size_t i = 0;
    for (const auto& given : **keys) {
      auto k = c.resolve_key(given, "keys[" + std::to_string(i++) + "]");
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
      auto found = c.store().list_keys(f);
      if (!found) return std::unexpected(store_error(found.error(), "key"));
      const std::string field = "key_aliases[" + std::to_string(i++) + "]";
      if (found->empty())
        return std::unexpected(core::Error::caller(404, "not_found_error", "no key with alias '" + alias + "'", field, "404"));
      hashes.push_back(found->front().token_hash);
      deleted.emplace_back(alias);
    }
  }
  for (const auto& h : hashes) {
    auto r = c.store().delete_key(h);
    if (!r && r.error().code != store::StoreErrorCode::not_found) {
      c.refresh();
      return std::unexpected(store_error(r.error(), "key"));
    }
  }
  c.refresh();
  json::object o;
  o["deleted_keys"] = std::move(deleted);
  return json::value(std::move(o));
}

Reply key_list(const Context& c, const std::string& target) {
  store::KeyFilter f;
  f.user_id = query_param(target, "user_id");
  f.team_id = query_param(target, "team_id");
  f.organization_id = query_param(target, "organization_id");
  f.key_alias = query_param(target, "key_alias");
  auto page_q = positive_query_int(target, "page", 1);
  if (!page_q) return std::unexpected(page_q.error());
  auto size_q = positive_query_int(target, "size", 10);
  if (!size_q) return std::unexpected(size_q.error());
  const std::int64_t page = *page_q;
  const std::int64_t size = std::min<std::int64_t>(*size_q, 1000);
  const bool full = query_param(target, "return_full_object").value_or("") == "true";
  f.limit = 1'000'000;
  auto all = c.store().list_keys(f);
  if (!all) return std::unexpected(store_error(all.error(), "keys"));
  const auto total = static_cast<std::int64_t>(all->size());
  json::array keys;
  for (std::int64_t i = (page - 1) * size; i < std::min(total, page * size); ++i) {
    const auto& k = (*all)[static_cast<std::size_t>(i)];
    if (full) keys.push_back(c.key_with_spend(k));
    else keys.emplace_back(k.token_hash);
  }
  json::object o;
  o["keys"] = std::move(keys);
  o["total_count"] = total;
  o["current_page"] = page;
  o["total_pages"] = (total + size - 1) / size;
  return json::value(std::move(o));
}

}  // namespace

std::span<const Route> key_routes() {
  static constexpr Route routes[] = {
      {"/key/generate", Method::post, [](const Context& c, const Call& q) { return key_generate(c, q.body); }},
      {"/key/info", Method::get, [](const Context& c, const Call& q) { return key_info(c, q); }, Access::key_read},
      {"/key/update", Method::post, [](const Context& c, const Call& q) { return key_update(c, q.body); }},
      {"/key/delete", Method::post, [](const Context& c, const Call& q) { return key_delete(c, q.body); }},
      {"/key/list", Method::get, [](const Context& c, const Call& q) { return key_list(c, q.target); }},
      {"/key/block", Method::post, [](const Context& c, const Call& q) { return key_block(c, q.body, true); }},
      {"/key/unblock", Method::post, [](const Context& c, const Call& q) { return key_block(c, q.body, false); }},
  };
  return routes;
}

}  // namespace tollgate::api::admin
