#pragma once
/// The gateway's HTTP surface: routes requests to the OpenAI, Anthropic, model-list and health
/// endpoints, authenticates, decodes, and hands every model call to the one attempt loop.

#include <optional>
#include <string_view>
#include <atomic>
#include <expected>
#include <memory>

#include <boost/asio/thread_pool.hpp>

#include "api/admin.hpp"
#include "auth/identities.hpp"
#include "auth/identity_refresher.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"
#include "pipeline/health_monitor.hpp"
#include "pipeline/live_services.hpp"

namespace tollgate::api {

/// Model calls are authenticated against `identities` (auth::authenticate: master key or a
/// virtual key; open when no master key is configured) and checked for model access
/// (auth::may_call) before the attempt loop runs; admin paths go to `admin`.
class Gateway {
 public:
  /// `identities` null = an empty snapshot (master key only); `admin` null = no admin API (404);
  /// `refresher` (over the same identities) set: a refused virtual key waits up to 200 ms for an
  /// identity refresh before its 401 (a key created on another instance works at once).
  explicit Gateway(std::shared_ptr<pipeline::Services> services, std::shared_ptr<auth::Identities> identities = nullptr,
                   std::shared_ptr<Admin> admin = nullptr, std::shared_ptr<auth::IdentityRefresher> refresher = nullptr);
  /// As above over a live snapshot (config hot reload): each request runs on the snapshot in
  /// force when it arrived, to its end.
  explicit Gateway(std::shared_ptr<pipeline::LiveServices> live, std::shared_ptr<auth::Identities> identities = nullptr,
                   std::shared_ptr<Admin> admin = nullptr, std::shared_ptr<auth::IdentityRefresher> refresher = nullptr);
  /// Routes `/model/*`, `/v1/model/*` and `/config/reload` to `models` (api/admin_models.hpp);
  /// unset = those paths are 404. Call before serving.
  void set_model_admin(std::shared_ptr<class ModelAdmin> models) { model_admin_ = std::move(models); }
  /// The background health checks (general_settings.background_health_checks) whose last round
  /// GET /health answers from; unset = every GET /health runs a round. Call before serving.
  void set_health_monitor(std::shared_ptr<pipeline::HealthMonitor> m) { health_monitor_ = std::move(m); }
  /// The http::Handler: answers one request.
  boost::asio::awaitable<void> handle(http::Request& req, http::ResponseWriter& w);
  /// Body of errors the HTTP layer answers itself (OpenAI error format).
  static std::string protocol_error_body(int status, std::string_view message);
  /// From now on GET /health/readiness answers 503 {"status":"draining",...} (liveness stays
  /// 200): the gateway is stopping (SIGTERM). Thread-safe; there is no way back.
  void set_draining() { draining_ = true; }
  /// Waits for the admin requests still running on the admin thread, then ends it (shutdown,
  /// after the server's drain: their completions must not outlive the workers' contexts).
  void finish_admin() { admin_thread_.join(); }

 private:
  /// Parses, translates (Anthropic), validates and binds the caller: a ready call of client API
  /// `api` (messages: translated to chat), or the error to answer in the endpoint's format.
  std::expected<pipeline::ChatCall, core::Error> prepare_call(const pipeline::Services& services, const http::Request& req,
                                                              providers::CallApi api, std::shared_ptr<const auth::Principal> principal);
  /// The model APIs (their paths, LiteLLM's aliases included).
  enum class ModelCall { chat, embeddings, completions, messages, responses };
  /// Which model API `path` names; nullopt for every other path.
  static std::optional<ModelCall> model_call_of(std::string_view path);
  /// A model call: method check, authentication, then the call. Its frames live as long as a
  /// stream they serve, so they hold only what a model call needs: this one is no coroutine,
  /// authenticated_call's frame holds the snapshot and the principal, and the handlers below
  /// return the run's own awaitable (pipeline::serve_chat).
  boost::asio::awaitable<void> serve_model_call(http::Request& req, http::ResponseWriter& w, std::string_view path,
                                                ModelCall api);
  boost::asio::awaitable<void> authenticated_call(http::Request& req, http::ResponseWriter& w, ModelCall api);
  /// The caller's principal, or null once the authentication error was sent to it.
  boost::asio::awaitable<std::shared_ptr<const auth::Principal>> authenticate_or_refuse(const http::Request& req,
                                                                                       http::ResponseWriter& w,
                                                                                       bool anthropic_format);
  /// Every other path: the UI, the admin and ops APIs, jobs, stored responses, health, models.
  boost::asio::awaitable<void> serve_other(http::Request& req, http::ResponseWriter& w, std::string_view path);
  /// auth::authenticate for `req` (one key hash and lookup), against the identity index in
  /// force or, when it refuses a presented virtual key, the one in force after an identity
  /// refresh (waited for up to 200 ms without blocking this thread).
  boost::asio::awaitable<auth::AuthResult> authenticate_fresh(const http::Request& req);
  /// An OpenAI-format model call: chat completions, embeddings or legacy completions (`api`).
  /// These three are no coroutines: they return the awaitable of the run (or of its error).
  boost::asio::awaitable<void> openai_call(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                           http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal,
                                           providers::CallApi api);
  boost::asio::awaitable<void> messages(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                        http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal);
  /// POST /v1/responses (docs/responses_api.md).
  boost::asio::awaitable<void> responses(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                         http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal);
  std::shared_ptr<pipeline::LiveServices> live_;
  std::shared_ptr<class ModelAdmin> model_admin_;
  std::shared_ptr<pipeline::HealthMonitor> health_monitor_;
  std::shared_ptr<auth::Identities> identities_;
  std::shared_ptr<Admin> admin_;
  std::shared_ptr<auth::IdentityRefresher> refresher_;
  std::atomic<bool> draining_{false};
  /// One thread for admin requests (blocking store calls stay off the I/O workers).
  boost::asio::thread_pool admin_thread_{1};
};

}  // namespace tollgate::api
