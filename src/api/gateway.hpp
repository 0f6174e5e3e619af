#pragma once
/// The gateway's HTTP surface: routes requests to the OpenAI, Anthropic, model-list and health
/// endpoints, authenticates, decodes, and hands every model call to the one attempt loop.

#include <atomic>
#include <expected>
#include <memory>

#include <boost/asio/thread_pool.hpp>

#include "api/admin.hpp"
#include "auth/identities.hpp"
#include "auth/identity_refresher.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"
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
  /// auth::authenticate for `req` (one key hash and lookup), against the identity index in
  /// force or, when it refuses a presented virtual key, the one in force after an identity
  /// refresh (waited for up to 200 ms without blocking this thread).
  boost::asio::awaitable<auth::AuthResult> authenticate_fresh(const http::Request& req);
  /// An OpenAI-format model call: chat completions, embeddings or legacy completions (`api`).
  boost::asio::awaitable<void> openai_call(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                           http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal,
                                           providers::CallApi api);
  boost::asio::awaitable<void> messages(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                        http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal);
  std::shared_ptr<pipeline::LiveServices> live_;
  std::shared_ptr<class ModelAdmin> model_admin_;
  std::shared_ptr<auth::Identities> identities_;
  std::shared_ptr<Admin> admin_;
  std::shared_ptr<auth::IdentityRefresher> refresher_;
  std::atomic<bool> draining_{false};
  /// One thread for admin requests (blocking store calls stay off the I/O workers).
  boost::asio::thread_pool admin_thread_{1};
};

}  // namespace tollgate::api
