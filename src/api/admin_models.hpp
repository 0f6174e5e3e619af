#pragma once
/// LiteLLM's model management endpoints and config reload (issue 11 §5, §6; docs.litellm.ai
/// "proxy/model_management"; docs/admin_api.md "Models"):
///
/// - `GET /model/info`, `GET /v1/model/info` (`?litellm_model_id=` filters): {"data": [{model_name,
///   litellm_params (api_key left out), model_info: {id, db_model, mode, litellm_provider,
///   input_cost_per_token, output_cost_per_token, ...}}]}, one per deployment of the snapshot in
///   force. The master key sees every deployment; a virtual key those of the groups it may call.
/// - `POST /model/new`, `/model/update`, `/model/delete` (master key): with
///   general_settings.store_model_in_db, the deployment is kept in the store and served by every
///   instance on it; without, 400 `store_model_in_db_disabled` (LiteLLM answers 500 with the same
///   sense). A body is checked by the config loader as a `model_list` entry next to the running
///   file (ModelAdminDeps::check_models): a bad body is 400 naming the field (`param`), nothing
///   stored. A deployment of the config file cannot be updated or deleted here (400).
/// - `POST /config/reload` (master key): re-reads the config file (app/reloader.hpp); 200 with
///   what changed, 400 `config_invalid` with every reason when the file is refused (the running
///   config is kept).
/// Errors are OpenAI error bodies. Synchronous (store calls): run on the admin thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auth/identities.hpp"
#include "config/loader.hpp"
#include "config/reload.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"
#include "store/store.hpp"

namespace tollgate::api {

/// What the model endpoints work with (wired by app/serve.cpp over app::Reloader).
struct ModelAdminDeps {
  std::shared_ptr<store::Store> store;                   ///< null: the writes answer 503 "no database configured"
  std::function<config::ReloadReport()> reload_file;     ///< POST /config/reload
  std::function<config::ReloadReport()> refresh_models;  ///< after a write: serve the store's models now
  /// The config with `models` as the store's models; the one with id `subject` is reported
  /// relative to its entry (`litellm_params.model`).
  std::function<config::LoadResult(const std::vector<store::ProxyModelRecord>& models, const std::string& subject)>
      check_models;
};

class ModelAdmin {
 public:
  explicit ModelAdmin(ModelAdminDeps deps) : d_(std::move(deps)) {}
  /// Whether `path` (without query) is one of the endpoints above.
  static bool is_path(std::string_view path);
  /// Answers one request; `auth` is the caller's authentication (a refused key: its 401), `s`
  /// the snapshot in force.
  http::Response handle(const http::Request& req, const auth::AuthResult& auth, const pipeline::Services& s) const;

 private:
  ModelAdminDeps d_;
};

}  // namespace tollgate::api
