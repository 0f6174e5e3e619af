#include "api/admin_models.hpp"

#include <algorithm>
#include <boost/json.hpp>

#include "api/admin_fields.hpp"
#include "api/errors.hpp"
#include "api/json_body.hpp"
#include "api/sinks.hpp"
#include "auth/access.hpp"
#include "budget/money.hpp"
#include "core/ids.hpp"

namespace tollgate::api {
namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

using Reply = std::expected<json::object, core::Error>;

std::string_view path_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

http::Response error_response(const core::Error& e) { return json_response(e.status, openai_error_json(e)); }

core::Error bad(std::string message, std::string param, std::string code = {}) {
  return core::Error::caller(400, "invalid_request_error", std::move(message), std::move(param), std::move(code));
}

core::Error store_error(const store::StoreError& e) {
  switch (e.code) {
    case store::StoreErrorCode::not_found:
      return core::Error::caller(404, "not_found_error", e.message, e.field, "404");
    case store::StoreErrorCode::conflict:
      return core::Error::caller(409, "invalid_request_error", e.message, e.field, "409");
    case store::StoreErrorCode::invalid:
      return bad(e.message, e.field);
    case store::StoreErrorCode::unavailable:
      break;
  }
  return core::Error::gateway(503, "service_unavailable", "the database is unavailable: " + e.message, "503");
}

/// A price per token as LiteLLM shows it (a JSON number of dollars), from the exact decimal text.
json::value price_json(budget::PerTokenPrice p) {
  std::error_code ec;
  auto v = json::parse(budget::format_price_per_token(p), ec);
  return ec ? json::value(nullptr) : v;
}

/// Exact decimal text ("0.0000025", the loader's) as a JSON number; null if it is not one.
json::value number_json(const std::string& text) {
  std::error_code ec;
  auto v = json::parse(text, ec);
  return ec || !v.is_number() ? json::value(nullptr) : v;
}

/// An entry (a model_list item) as shown: litellm_params without api_key (LiteLLM pops it).
json::object redacted(json::object entry) {
  if (auto* lp = entry.if_contains("litellm_params"); lp && lp->is_object()) lp->as_object().erase("api_key");
  return entry;
}

json::object model_info_entry(const config::Deployment& d, const budget::ResolvedPrice& price,
                              const json::object* stored) {
  json::object lp;
  json::object mi;
  if (stored) {
    const auto shown = redacted(*stored);
    if (auto* p = shown.if_contains("litellm_params"); p && p->is_object()) lp = p->as_object();
    if (auto* p = shown.if_contains("model_info"); p && p->is_object()) mi = p->as_object();
  } else {
    lp["model"] = d.provider_prefix.empty() ? d.upstream_model : d.provider_prefix + "/" + d.upstream_model;
    if (!d.api_base.empty()) lp["api_base"] = d.api_base;
    if (!d.api_version.empty()) lp["api_version"] = d.api_version;
    if (d.rpm) lp["rpm"] = *d.rpm;
    if (d.tpm) lp["tpm"] = *d.tpm;
    if (d.timeout) lp["timeout"] = static_cast<double>(d.timeout->count()) / 1000.0;
    if (d.stream_timeout) lp["stream_timeout"] = static_cast<double>(d.stream_timeout->count()) / 1000.0;
    if (d.input_cost_per_token) lp["input_cost_per_token"] = number_json(*d.input_cost_per_token);
    if (d.output_cost_per_token) lp["output_cost_per_token"] = number_json(*d.output_cost_per_token);
  }
  mi["id"] = d.id;
  mi["db_model"] = d.db_model;
  mi["mode"] = "chat";
  mi["litellm_provider"] = d.provider_prefix;
  if (!d.base_model.empty()) mi["base_model"] = d.base_model;
  if (price.status != budget::PriceStatus::unpriced) {
    mi["input_cost_per_token"] = price_json(price.price.input);
    mi["output_cost_per_token"] = price_json(price.price.output);
  } else {
    mi["input_cost_per_token"] = nullptr;
    mi["output_cost_per_token"] = nullptr;
  }
  mi["max_input_tokens"] = d.max_input_tokens ? json::value(*d.max_input_tokens) : json::value(nullptr);
  const json::value max_out = d.max_output_tokens ? json::value(*d.max_output_tokens) : json::value(nullptr);
  mi["max_output_tokens"] = max_out;
  mi["max_tokens"] = max_out;
  json::array groups;
  for (const auto& g : d.access_groups) groups.push_back(json::value(g));
  mi["access_groups"] = std::move(groups);
  json::object out;
  out["model_name"] = d.model_name;
  out["litellm_params"] = std::move(lp);
  out["model_info"] = std::move(mi);
  return out;
}

std::optional<json::object> parse_entry(const std::string& text) {
  std::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

/// The loader's verdict on the store's models with `candidate` in place: its first error as a
/// 400 naming the field, or nullopt. Every error is in the message.
std::optional<core::Error> refused(const config::LoadResult& r) {
  if (r.ok()) return std::nullopt;
  std::string message;
  for (const auto& e : r.errors) {
    if (!message.empty()) message += "; ";
    message += e.to_string();
  }
  return bad(message, r.errors.empty() ? std::string() : r.errors.front().path, "invalid_model");
}

json::array entry_warnings(const config::LoadResult& r) {
  json::array out;
  for (const auto& w : r.warnings)
    if (w.path.starts_with("litellm_params") || w.path.starts_with("model_info") || w.path.starts_with("model_name"))
      out.push_back(json::value(w.to_string()));
  return out;
}

json::object report_json(const config::ReloadReport& r) {
  json::object o;
  o["status"] = r.applied ? "reloaded" : "refused";
  json::array errors, warnings, restart;
  for (const auto& e : r.errors) errors.push_back(json::value(e.to_string()));
  for (const auto& w : r.warnings) warnings.push_back(json::value(w.to_string()));
  for (const auto& s : r.restart_required) restart.push_back(json::value(s));
  o["errors"] = std::move(errors);
  o["warnings"] = std::move(warnings);
  o["restart_required"] = std::move(restart);
  o["model_groups"] = r.model_groups;
  o["deployments"] = r.deployments;
  return o;
}

class Handler {
 public:
  Handler(const ModelAdminDeps& d, const pipeline::Services& s) : d_(d), s_(s) {}

  Reply info(const std::string& target, const auth::Principal& caller, bool everything) const {
    const auto only = admin::query_param(target, "litellm_model_id");
    std::vector<store::ProxyModelRecord> stored;
    if (d_.store && s_.config->general_settings.store_model_in_db)
      if (auto m = d_.store->list_proxy_models()) stored = std::move(*m);
    json::array data;
    const auto& list = s_.config->model_list;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto& d = list[i];
      if (only && d.id != *only) continue;
      if (!everything && !auth::may_call(caller, d.model_name, *s_.config)) continue;
      std::optional<json::object> entry;
      if (d.db_model)
        for (const auto& m : stored)
          if (m.model_id == d.id) entry = parse_entry(m.entry);
      data.push_back(model_info_entry(d, i < s_.prices.size() ? s_.prices[i] : budget::ResolvedPrice{},
                                      entry ? &*entry : nullptr));
    }
    json::object o;
    o["data"] = std::move(data);
    return o;
  }

  Reply model_new(json::object body) const {
    if (auto e = writable()) return std::unexpected(*e);
    json::value* info = body.if_contains("model_info");
    if (info && !info->is_object() && !info->is_null())
      return std::unexpected(bad("model_info must be an object", "model_info"));
    if (!info || info->is_null()) info = &(body["model_info"] = json::object());
    auto& mi = info->as_object();
    std::string id;
    if (auto* v = mi.if_contains("id"); v && !v->is_null()) {
      if (!v->is_string() || v->as_string().empty())
        return std::unexpected(bad("model_info.id must be a non-empty string", "model_info.id"));
      id = std::string(v->as_string());
    } else {
      id = core::new_uuid();
      mi["id"] = id;
    }
    auto models = d_.store->list_proxy_models();
    if (!models) return std::unexpected(store_error(models.error()));
    bool taken = false;
    for (const auto& m : *models) taken = taken || m.model_id == id;
    for (const auto& d : s_.config->model_list) taken = taken || d.id == id;
    if (taken)
      return std::unexpected(core::Error::caller(409, "invalid_request_error", "a model with id " + id + " exists",
                                                 "model_info.id", "409"));
    store::ProxyModelRecord rec;
    rec.model_id = id;
    if (auto* n = body.if_contains("model_name"); n && n->is_string()) rec.model_name = std::string(n->as_string());
    rec.entry = json::serialize(body);
    models->push_back(rec);
    const auto checked = d_.check_models(*models, id);
    if (auto e = refused(checked)) return std::unexpected(*e);
    auto created = d_.store->create_proxy_model(rec);
    if (!created) return std::unexpected(store_error(created.error()));
    return answer(*created, checked);
  }

  Reply model_update(json::object body) const {
    if (auto e = writable()) return std::unexpected(*e);
    const json::value* info = body.if_contains("model_info");
    const json::value* idv = info && info->is_object() ? info->as_object().if_contains("id") : nullptr;
    if (!idv || !idv->is_string() || idv->as_string().empty())
      return std::unexpected(bad("model_info.id is required (the model to update)", "model_info.id"));
    const std::string id(idv->as_string());
    auto models = d_.store->list_proxy_models();
    if (!models) return std::unexpected(store_error(models.error()));
    auto it = std::find_if(models->begin(), models->end(), [&](const auto& m) { return m.model_id == id; });
    if (it == models->end()) return std::unexpected(not_stored(id));
    auto entry = parse_entry(it->entry);
    if (!entry) entry = json::object();
    if (auto* n = body.if_contains("model_name")) (*entry)["model_name"] = *n;
    for (const char* section : {"litellm_params", "model_info"}) {
      const json::value* given = body.if_contains(section);
      if (!given || given->is_null()) continue;
      if (!given->is_object()) return std::unexpected(bad(std::string(section) + " must be an object", section));
      json::value& into = (*entry)[section];
      if (!into.is_object()) into = json::object();
      for (const auto& [k, v] : given->as_object()) {
        if (v.is_null())
          into.as_object().erase(k);
        else
          into.as_object()[k] = v;
      }
    }
    json::value& info_out = (*entry)["model_info"];
    if (!info_out.is_object()) info_out = json::object();
    info_out.as_object()["id"] = id;
    it->entry = json::serialize(*entry);
    if (auto* n = entry->if_contains("model_name"); n && n->is_string()) it->model_name = std::string(n->as_string());
    const auto checked = d_.check_models(*models, id);
    if (auto e = refused(checked)) return std::unexpected(*e);
    auto updated = d_.store->update_proxy_model(*it);
    if (!updated) return std::unexpected(store_error(updated.error()));
    return answer(*updated, checked);
  }

  Reply model_delete(const json::object& body) const {
    if (auto e = writable()) return std::unexpected(*e);
    const json::value* idv = body.if_contains("id");
    if (!idv || !idv->is_string() || idv->as_string().empty())
      return std::unexpected(bad("id is required (the model_info.id of the model to delete)", "id"));
    const std::string id(idv->as_string());
    auto models = d_.store->list_proxy_models();
    if (!models) return std::unexpected(store_error(models.error()));
    auto it = std::find_if(models->begin(), models->end(), [&](const auto& m) { return m.model_id == id; });
    if (it == models->end()) return std::unexpected(not_stored(id));
    models->erase(it);
    // Deleting may break the rest (a fallback naming the group it served): checked like a write.
    if (auto e = refused(d_.check_models(*models, ""))) return std::unexpected(*e);
    if (auto r = d_.store->delete_proxy_model(id); !r) return std::unexpected(store_error(r.error()));
    (void)d_.refresh_models();
    json::object o;
    o["message"] = "Model: " + id + " deleted successfully";
    return o;
  }

 private:
  std::optional<core::Error> writable() const {
    if (!s_.config->general_settings.store_model_in_db)
      return bad(
          "general_settings.store_model_in_db is not true: models cannot be added, updated or deleted through "
          "the API (set it to true to enable this feature; model_list in the config file is reloaded with "
          "SIGHUP or POST /config/reload)",
          "", "store_model_in_db_disabled");
    if (!d_.store) return core::Error::gateway(503, "service_unavailable", "no database configured", "503");
    return std::nullopt;
  }

  core::Error not_stored(const std::string& id) const {
    for (const auto& d : s_.config->model_list)
      if (d.id == id && !d.db_model)
        return bad("model " + id + " is defined in the config file " + s_.config->source_path +
                       ": edit the file and reload it (SIGHUP or POST /config/reload)",
                   "id", "config_model");
    return core::Error::caller(404, "not_found_error", "model " + id + " not found", "id", "404");
  }

  Reply answer(const store::ProxyModelRecord& rec, const config::LoadResult& checked) const {
    const auto applied = d_.refresh_models();
    auto entry = parse_entry(rec.entry);
    json::object o = entry ? redacted(std::move(*entry)) : json::object();
    o["model_id"] = rec.model_id;
    o["created_at"] = auth::iso8601_utc(rec.created_at_ms);
    o["updated_at"] = auth::iso8601_utc(rec.updated_at_ms);
    o["warnings"] = entry_warnings(checked);
    if (!applied.applied) o["served"] = false;  // stored; this instance could not rebuild (logged)
    return o;
  }

  const ModelAdminDeps& d_;
  const pipeline::Services& s_;
};

}  // namespace

bool ModelAdmin::is_path(std::string_view path) {
  return path == "/model/info" || path == "/v1/model/info" || path == "/model/new" || path == "/v1/model/new" ||
         path == "/model/update" || path == "/model/delete" || path == "/config/reload";
}

http::Response ModelAdmin::handle(const http::Request& req, const auth::AuthResult& auth,
                                  const pipeline::Services& s) const {
  const std::string target(req.target());
  const auto path = path_of(target);
  const bool is_info = path == "/model/info" || path == "/v1/model/info";
  const auto m = req.method();
  const bool ok_method = is_info ? (m == bhttp::verb::get || m == bhttp::verb::head) : m == bhttp::verb::post;
  if (!ok_method) {
    auto res = error_response(
        core::Error::caller(405, "invalid_request_error",
                            "method " + std::string(req.method_string()) + " not allowed on " + std::string(path), {},
                            "method_not_allowed"));
    res.set(bhttp::field::allow, is_info ? "GET, HEAD" : "POST");
    return res;
  }
  if (!auth) return error_response(auth.error());
  const auto& caller = **auth;
  const bool no_master = s.config->general_settings.master_key.empty();
  // A valid virtual key is known, just not allowed: 403, as on every master-only admin path
  // (docs/admin_api.md "Who may call what").
  if (!is_info && !caller.is_master)
    return error_response(no_master ? core::Error::caller(401, "auth_error",
                                                          "the admin API needs general_settings.master_key to be configured",
                                                          {}, "401")
                          : caller.key ? core::Error::caller(403, "auth_error", "the master key is required", {}, "403")
                                       : core::Error::caller(401, "auth_error",
                                                             "Authentication Error, only the master key may call " +
                                                                 std::string(path),
                                                             {}, "401"));
  Handler h(d_, s);
  Reply r;
  if (is_info) {
    r = h.info(target, caller, caller.is_master || no_master);
  } else if (path == "/config/reload") {
    const auto report = d_.reload_file();
    if (!report.applied) {
      std::string message = "config reload refused, the running config is kept:";
      for (const auto& e : report.errors) message += " " + e.to_string() + ";";
      auto e = bad(message, report.errors.empty() ? std::string() : report.errors.front().path, "config_invalid");
      json::value v = json::parse(openai_error_json(e));
      v.as_object()["reload"] = report_json(report);
      return json_response(400, json::serialize(v));
    }
    r = report_json(report);
  } else {
    auto body = parse_json_object(req.body(), 32, true);
    if (!body) return error_response(body.error());
    if (path == "/model/new" || path == "/v1/model/new")
      r = h.model_new(std::move(*body));
    else if (path == "/model/update")
      r = h.model_update(std::move(*body));
    else
      r = h.model_delete(*body);
  }
  if (!r) return error_response(r.error());
  return json_response(200, json::serialize(*r));
}

}  // namespace tollgate::api
