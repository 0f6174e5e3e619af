#include "api/gateway.hpp"

#include <algorithm>
#include <ctime>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "api/admin_models.hpp"
#include "api/caller.hpp"
#include "core/await_answer.hpp"
#include "api/errors.hpp"
#include "api/jobs.hpp"
#include "api/json_body.hpp"
#include "api/model_health.hpp"
#include "api/operation_decode.hpp"
#include "api/ops.hpp"
#include "api/responses_sink.hpp"
#include "api/sinks.hpp"
#include "api/stored_responses.hpp"
#include "api/ui_assets.hpp"
#include "auth/access.hpp"
#include "auth/caller_names.hpp"
#include "auth/credentials.hpp"
#include "auth/request_binding.hpp"
#include "cache/controls.hpp"
#include "policy/request_budget.hpp"
#include "core/ids.hpp"
#include "core/json_parse.hpp"
#include "providers/anthropic/translate.hpp"
#include "providers/native.hpp"
#include "providers/responses/translate.hpp"

namespace tollgate::api {
namespace net = boost::asio;
namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

enum class Format { openai, anthropic };

std::string error_json(Format f, const core::Error& e) {
  return f == Format::openai ? openai_error_json(e) : anthropic_error_json(e);
}

// By value: a handler may return this awaitable (it runs after the handler returned).
net::awaitable<void> send_error(http::ResponseWriter& w, Format f, core::Error e) {
  co_await w.send(json_response(e.status, error_json(f, e)));
}

/// Sends `res` (a handler that is no coroutine returns this awaitable).
net::awaitable<void> send_response(http::ResponseWriter& w, http::Response res) { co_await w.send(std::move(res)); }

std::string_view path_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

/// 404 for unknown paths, 405 for a known path with the wrong method; nullopt when routable.
std::optional<http::Response> route_check(const http::Request& req, std::string_view path, bool is_chat,
                                          bool is_messages, bool is_models, bool is_health, Format fmt) {
  // is_chat: any POST model endpoint in OpenAI's format (chat, embeddings, completions).
  if (!is_chat && !is_messages && !is_models && !is_health && path != "/health") {
    auto e = core::Error::caller(404, "invalid_request_error", "unknown path " + std::string(path), {}, "not_found");
    return json_response(404, error_json(fmt, e));
  }
  const bool want_post = is_chat || is_messages;
  const auto method = req.method();
  const bool ok = want_post ? method == bhttp::verb::post : (method == bhttp::verb::get || method == bhttp::verb::head);
  if (ok) return std::nullopt;
  auto e = core::Error::caller(405, "invalid_request_error",
                               "method " + std::string(req.method_string()) + " not allowed on " + std::string(path), {},
                               "method_not_allowed");
  auto res = json_response(405, error_json(fmt, e));
  res.set(bhttp::field::allow, want_post ? "POST" : "GET, HEAD");
  return res;
}

/// Liveness is 200 while the process runs (draining included). Readiness is LiteLLM's shape;
/// while the gateway drains for a stop it is 503 with status "draining", so that a load
/// balancer stops sending (docs/operations.md).
http::Response health_response(std::string_view path, const pipeline::Services& s, bool draining) {
  if (path != "/health/readiness") return json_response(200, "\"I'm alive!\"");
  json::object o;
  // A shared ledger that cannot admit paid attempts (Redis unreachable, counters being rebuilt)
  // takes the instance out of the load balancer's rotation, as a drain does.
  const bool ledger_ok = !s.ledger || s.ledger->available();
  o["status"] = draining ? "draining" : ledger_ok ? "healthy" : "unhealthy";
  o["db"] = !s.store ? "not configured" : s.store->health().writable ? "connected" : "unavailable";
  if (s.config->router_settings.redis.configured()) o["cache"] = ledger_ok ? "redis" : "redis unavailable";
  o["model_groups"] = s.config->model_groups().size();
  if (draining) o["draining"] = true;
  return json_response(draining || !ledger_ok ? 503 : 200, json::serialize(o));
}

/// How long a refused virtual key waits for an identity refresh before its 401.
constexpr std::chrono::milliseconds kMissRefreshWait{200};

/// A refused model call's 401, in the client's format.
http::Response auth_error_response(core::Error e, Format fmt) {
  if (fmt == Format::anthropic) e.type = "authentication_error";
  return json_response(e.status, error_json(fmt, e));
}

http::Response models_response(const pipeline::Services& s, const auth::Principal& principal) {
  json::array data;
  const auto created = static_cast<std::int64_t>(std::time(nullptr));
  std::vector<std::string> names;
  for (const auto& a : s.config->router_settings.model_group_alias)  // LiteLLM lists visible aliases
    if (!a.hidden && auth::may_call(principal, a.group, *s.config)) names.push_back(a.alias);
  for (const auto& g : s.config->model_groups())
    if (std::find(names.begin(), names.end(), g) == names.end() && s.groups->resolve_alias(g) == g &&
        auth::may_call(principal, g, *s.config))
      names.push_back(g);
  for (const auto& g : names) {
    json::object m;
    m["id"] = g;
    m["object"] = "model";
    m["created"] = created;
    m["owned_by"] = "tollgate";
    data.push_back(std::move(m));
  }
  json::object o;
  o["object"] = "list";
  o["data"] = std::move(data);
  return json_response(200, json::serialize(o));
}

/// Request-body keys that steer LiteLLM itself and must not reach a provider.
constexpr std::string_view kGatewayOnlyKeys[] = {"fallbacks", "context_window_fallback_dict", "num_retries",
                                                 "mock_response", "litellm_metadata", "caching"};

}  // namespace

Gateway::Gateway(std::shared_ptr<pipeline::Services> services, std::shared_ptr<auth::Identities> identities,
                 std::shared_ptr<Admin> admin, std::shared_ptr<auth::IdentityRefresher> refresher)
    : Gateway(std::make_shared<pipeline::LiveServices>(std::move(services)), std::move(identities), std::move(admin),
              std::move(refresher)) {}

Gateway::Gateway(std::shared_ptr<pipeline::LiveServices> live, std::shared_ptr<auth::Identities> identities,
                 std::shared_ptr<Admin> admin, std::shared_ptr<auth::IdentityRefresher> refresher)
    : live_(std::move(live)),
      identities_(identities ? std::move(identities) : std::make_shared<auth::Identities>()),
      admin_(std::move(admin)),
      refresher_(std::move(refresher)) {}

net::awaitable<auth::AuthResult> Gateway::authenticate_fresh(const http::Request& req) {
  const auto arrived = std::chrono::steady_clock::now();
  const std::string master = live_->current()->config->general_settings.master_key;
  const auto index = identities_->current();
  auto p = authenticate(req, master, *index);
  if (p || !refresher_ || !presented_key(req).starts_with("sk-")) co_return p;
  // A key this instance does not know (yet): created or unblocked on another instance since the
  // last identity poll. The refresher looks at the store (off this thread) before the 401.
  auto& refresher = *refresher_;
  std::function<void(std::function<void(bool)>)> start = [&refresher, refused = index.get(),
                                                          arrived](std::function<void(bool)> done) {
    refresher.after_miss(refused, arrived, std::move(done));
  };
  auto retry = co_await core::await_answer<bool>(std::move(start), arrived + kMissRefreshWait, [](bool) {});
  if (retry && *retry) p = authenticate(req, master, *identities_->current());
  co_return p;
}

std::string Gateway::protocol_error_body(int status, std::string_view message) {
  const std::string type = status == 429 ? "rate_limit_error" : status >= 500 ? "api_error" : "invalid_request_error";
  return openai_error_json(core::Error::caller(status, type, std::string(message)));
}

// A coroutine keeps every local of every branch in its frame (GCC), and the frame of the call that
// is serving a stream lives as long as the stream: so `handle` only picks the path, the model
// calls' frame holds what they need, and everything else is in `serve_other`.
net::awaitable<void> Gateway::handle(http::Request& req, http::ResponseWriter& w) {
  const auto path = path_of(req.target());
  if (auto api = model_call_of(path)) co_await serve_model_call(req, w, path, *api);
  else co_await serve_other(req, w, path);
}

std::optional<Gateway::ModelCall> Gateway::model_call_of(std::string_view path) {
  if (path == "/v1/chat/completions" || path == "/chat/completions" || path == "/openai/v1/chat/completions")
    return ModelCall::chat;
  if (path == "/v1/embeddings" || path == "/embeddings" || path == "/openai/v1/embeddings") return ModelCall::embeddings;
  if (path == "/v1/completions" || path == "/completions" || path == "/openai/v1/completions") return ModelCall::completions;
  if (path == "/v1/messages" || path == "/anthropic/v1/messages") return ModelCall::messages;
  if (path == "/v1/responses" || path == "/responses" || path == "/openai/v1/responses") return ModelCall::responses;
  return std::nullopt;
}

net::awaitable<void> Gateway::serve_model_call(http::Request& req, http::ResponseWriter& w, std::string_view path,
                                               ModelCall api) {
  const bool is_messages = api == ModelCall::messages;
  const Format fmt = is_messages ? Format::anthropic : Format::openai;
  if (auto early = route_check(req, path, !is_messages, is_messages, false, false, fmt))
    return send_response(w, std::move(*early));
  return authenticated_call(req, w, api);
}

net::awaitable<std::shared_ptr<const auth::Principal>> Gateway::authenticate_or_refuse(const http::Request& req,
                                                                                      http::ResponseWriter& w,
                                                                                      bool anthropic_format) {
  auto principal = co_await authenticate_fresh(req);
  if (principal) co_return std::move(*principal);
  co_await w.send(auth_error_response(std::move(principal.error()), anthropic_format ? Format::anthropic : Format::openai));
  co_return nullptr;
}

net::awaitable<void> Gateway::authenticated_call(http::Request& req, http::ResponseWriter& w, ModelCall api) {
  // The snapshot this request runs on, to its end (a config reload installs the next one).
  auto services = live_->current();
  // Authenticate (master key or virtual key) before anything else is looked at.
  auto principal = co_await authenticate_or_refuse(req, w, api == ModelCall::messages);
  if (!principal) co_return;
  if (api == ModelCall::messages) co_await messages(std::move(services), req, w, std::move(principal));
  else if (api == ModelCall::responses) co_await responses(std::move(services), req, w, std::move(principal));
  else
    co_await openai_call(std::move(services), req, w, std::move(principal),
                         api == ModelCall::embeddings    ? providers::CallApi::embeddings
                         : api == ModelCall::completions ? providers::CallApi::completions
                                                         : providers::CallApi::chat);
}

net::awaitable<void> Gateway::serve_other(http::Request& req, http::ResponseWriter& w, std::string_view path) {
  const bool is_models = path == "/v1/models" || path == "/models";
  const bool is_health = path == "/health/liveliness" || path == "/health/liveness" || path == "/health/readiness";
  const Format fmt = Format::openai;
  const auto services = live_->current();

  if (is_ui_path(path)) {
    // The web UI's static files: no key (every data call it makes is authenticated on its own).
    co_await w.send(ui_response(req, path));
    co_return;
  }
  if (model_admin_ && ModelAdmin::is_path(path)) {
    auto principal = co_await authenticate_fresh(req);
    // Store calls and reloads: on the admin thread, like the admin API.
    auto run = [this, &req, services, &principal]() -> net::awaitable<http::Response> {
      co_return model_admin_->handle(req, principal, *services);
    };
    auto op = net::co_spawn(admin_thread_.get_executor(), run, net::use_awaitable);
    auto res = co_await std::move(op);
    co_await w.send(std::move(res));
    co_return;
  }
  if (admin_ && Admin::is_admin_path(path)) {
    // Admin handlers call the store synchronously: run them on the admin thread, never on this
    // worker (its other connections keep streaming meanwhile).
    auto run_admin = [this, &req]() -> net::awaitable<http::Response> { co_return admin_->handle(req); };
    auto op = net::co_spawn(admin_thread_.get_executor(), run_admin, net::use_awaitable);
    auto res = co_await std::move(op);
    co_await w.send(std::move(res));
    co_return;
  }
  if (is_ops_path(path)) {
    co_await w.send(ops_response(req, path, *services, *identities_->current()));
    co_return;
  }
  if (path.starts_with(kJobsPrefix)) {
    (void)co_await authenticate_fresh(req);  // a key new to this instance: refreshed before job_response checks it
    // A store read: on the admin thread, like the admin API.
    auto run_job = [this, &req, path, services]() -> net::awaitable<http::Response> {
      co_return job_response(req, path.substr(kJobsPrefix.size()), *services, *identities_->current());
    };
    auto op = net::co_spawn(admin_thread_.get_executor(), run_job, net::use_awaitable);
    auto res = co_await std::move(op);
    co_await w.send(std::move(res));
    co_return;
  }
  if (auto stored_id = stored_response_id(path)) {
    // GET / DELETE /v1/responses/{id}: passed through to an OpenAI deployment, never charged.
    auto principal = co_await authenticate_fresh(req);
    if (!principal) {
      co_await w.send(auth_error_response(std::move(principal.error()), fmt));
      co_return;
    }
    auto res = co_await stored_response(req, *stored_id, *services, **principal);
    co_await w.send(std::move(res));
    co_return;
  }
  if (auto early = route_check(req, path, false, false, is_models, is_health, fmt)) {
    co_await w.send(std::move(*early));
    co_return;
  }
  if (is_health) {
    co_await w.send(health_response(path, *services, draining_.load()));
    co_return;
  }
  // Authenticate (master key or virtual key) before anything else is looked at.
  auto principal = co_await authenticate_fresh(req);
  if (!principal) {
    co_await w.send(auth_error_response(std::move(principal.error()), fmt));
    co_return;
  }
  if (path == "/health") {  // LiteLLM's model health checks (api/model_health.hpp)
    co_await model_health(services, req, w, **principal, health_monitor_);
    co_return;
  }
  if (is_models) {
    auto res = models_response(*services, **principal);
    co_await w.send(std::move(res));
    co_return;
  }
  // route_check answered every other path (404 or 405) above.
  auto e = core::Error::caller(404, "invalid_request_error", "unknown path " + std::string(path), {}, "not_found");
  co_await w.send(json_response(404, error_json(fmt, e)));
}

namespace {

/// The caller's body as a deployment speaking its API gets it: without the keys that steer
/// LiteLLM / Tollgate (kGatewayOnlyKeys, cache controls) and the caller's tags (`tags`, a
/// non-string `metadata.tags`: Tollgate's, not the provider's).
json::object native_body_of(const json::object& body) {
  json::object out = body;
  for (auto k : kGatewayOnlyKeys) out.erase(k);
  (void)cache::take_controls(out);
  out.erase("tags");
  if (auto* md = out.if_contains("metadata"); md && md->is_object()) {
    auto& m = md->get_object();
    if (auto* t = m.if_contains("tags"); t && !t->is_string()) m.erase("tags");
  }
  return out;
}

/// Whether the model group named by `model` has a deployment that serves `api` natively.
bool group_serves_natively(const pipeline::Services& s, const json::value* model, providers::CallApi api) {
  if (model == nullptr || !model->is_string()) return false;
  const auto* members = s.groups->find(s.groups->resolve_alias(model->get_string()));
  if (members == nullptr) return false;
  for (const auto i : *members)
    if (providers::native_adapter_for(s.config->model_list[i], api) != nullptr) return true;
  return false;
}

/// Removes what only a native Responses deployment can read (built-in tools, a tool_choice
/// naming one, stored-state references) from the copy the chat translation is made of.
void strip_native_only(json::object& body) {
  const auto drop = [](json::value* list, auto pred) {
    if (list == nullptr || !list->is_array()) return;
    auto& a = list->get_array();
    a.erase(std::remove_if(a.begin(), a.end(), pred), a.end());
  };
  const auto type_of = [](const json::value& v) -> std::string_view {
    const auto* o = v.if_object();
    const auto* type = o ? o->if_contains("type") : nullptr;
    return type && type->is_string() ? std::string_view(type->get_string()) : std::string_view("function");
  };
  drop(body.if_contains("tools"), [&](const json::value& t) { return type_of(t) != "function"; });
  if (auto* tc = body.if_contains("tool_choice"); tc && tc->is_object()) body.erase("tool_choice");
  for (const char* k : {"previous_response_id", "conversation", "prompt", "background"}) body.erase(k);
  drop(body.if_contains("input"), [&](const json::value& i) { return type_of(i) == "item_reference"; });
}

/// Validates the common parts of an OpenAI chat request; fills `call`. nullopt = valid.
std::optional<core::Error> decode_chat(json::object body, const pipeline::Services& s, pipeline::ChatCall& call) {
  auto* model = body.if_contains("model");
  if (!model || !model->is_string() || model->as_string().empty())
    return core::Error::caller(400, "invalid_request_error", "missing required parameter: 'model'", "model");
  call.model = s.groups->resolve_alias(model->as_string());
  if (call.model != model->as_string()) call.requested_as = std::string(model->as_string());
  if (!s.groups->contains(call.model))
    return core::Error::caller(400, "invalid_request_error",
                               "Invalid model name passed in model=" + call.model +
                                   ". Call `/v1/models` to view available models.",
                               "model", "model_not_found");
  if (call.api != providers::CallApi::chat) {
    // Embeddings and legacy completions: their own input fields and output bound.
    auto bad = call.api == providers::CallApi::embeddings ? decode_embeddings(body, call) : decode_completions(body, call);
    if (bad) return bad;
    for (auto k : kGatewayOnlyKeys) body.erase(k);
    body.erase("metadata");     // LiteLLM's (tags), not a field of these endpoints
    call.cache_controls = {};   // only chat answers are cached (pipeline/cache_step.cpp)
    (void)cache::take_controls(body);
    call.allow_degradation = false;  // degradation modes answer chat only
    core::adopt(call.body, std::move(body));
    return std::nullopt;
  }
  auto* messages = body.if_contains("messages");
  if (!messages || !messages->is_array())
    return core::Error::caller(400, "invalid_request_error", "missing required parameter: 'messages' (an array)", "messages");
  if (auto* st = body.if_contains("stream"); st && !st->is_null()) {
    if (!st->is_bool()) return core::Error::caller(400, "invalid_request_error", "'stream' must be a boolean", "stream");
    call.stream = st->as_bool();
  }
  if (auto* so = body.if_contains("stream_options"); so && so->is_object())
    if (auto* iu = so->as_object().if_contains("include_usage"); iu && iu->is_bool()) call.include_usage = iu->as_bool();
  for (auto k : kGatewayOnlyKeys) body.erase(k);
  // LiteLLM's per-request cache controls: read, checked and kept out of what a provider gets.
  auto controls = cache::take_controls(body);
  if (!controls)
    return core::Error::caller(400, "invalid_request_error", controls.error().message, controls.error().param,
                               "invalid_cache_control");
  call.cache_controls = std::move(*controls);
  if (auto bad = pipeline::read_caller_output(body, call.output, call.caller_output_fields)) return bad;
  core::adopt(call.body, std::move(body));
  return std::nullopt;
}


/// Request budgets (issue 4 §3): the key's metadata `tollgate_request_budget`
/// ({max_retries, max_fallbacks, deadline_ms, max_request_cost, first_token_timeout_ms,
/// stream_idle_timeout_ms}) and the request's x-tollgate-*
/// headers. Both may only tighten the group's budget (the attempt loop keeps the smaller value).
/// A malformed header is the caller's error (400); malformed key metadata is logged and ignored.
std::optional<core::Error> read_budget_overrides(const http::Request& req, pipeline::ChatCall& call) {
  if (call.principal && call.principal->key)
    for (const auto& bad : policy::read_key_budget(call.principal->key->metadata, call.key_budget))
      spdlog::warn("key {}: metadata {} (ignored)", call.principal->key->key_alias, bad);
  for (const char* header : policy::kOverrideHeaders) {
    auto it = req.find(header);
    if (it == req.end()) continue;
    const std::string_view value(it->value().data(), it->value().size());
    if (auto bad = policy::parse_override_field(header, value, call.request_budget))
      return core::Error::caller(400, "invalid_request_error", *bad, header, "invalid_budget_header");
  }
  return std::nullopt;
}

}  // namespace

std::expected<pipeline::ChatCall, core::Error> Gateway::prepare_call(const pipeline::Services& services,
                                                                    const http::Request& req, providers::CallApi api,
                                                                    std::shared_ptr<const auth::Principal> principal) {
  const bool anthropic = api == providers::CallApi::messages;
  pipeline::ChatCall call;
  // A Responses call runs as chat (its translation) but where a deployment serves it natively.
  if (!anthropic && api != providers::CallApi::responses) call.api = api;
  call.call_type = std::string(providers::litellm_call_type(api));
  call.start = services.clock->now();
  call.call_id = core::new_uuid();
  auto body = parse_json_object(req.body(), 64, false);
  if (!body) return std::unexpected(body.error());
  // The caller's own names (end user, tags) are checked on the body as sent, before anything
  // else reads them: an oversized or mistyped one is refused before it becomes a scope or a row.
  const auto caller_api = anthropic ? auth::CallerApi::anthropic_messages : auth::CallerApi::openai_chat;
  auto names = auth::read_caller_names(*body, caller_api);
  if (!names) return std::unexpected(std::move(names.error()));
  if (auto h = req.find("x-litellm-tags"); h != req.end())
    if (auto bad = auth::add_header_tags(std::string_view(h->value().data(), h->value().size()), *names))
      return std::unexpected(std::move(*bad));
  // The caller's own body, for the deployments that speak its API (native pass-through).
  std::optional<json::object> native;
  if (anthropic || api == providers::CallApi::responses) native = native_body_of(*body);
  if (api == providers::CallApi::responses) {
    if (auto hidden = providers::responses::hidden_input_field(*body)) call.hidden_input = std::move(*hidden);
  } else if (const auto* mcp = anthropic ? body->if_contains("mcp_servers") : nullptr;
             mcp && mcp->is_array() && !mcp->get_array().empty()) {
    call.hidden_input = "mcp_servers";  // the MCP servers' tool definitions are billed as input
  }
  if (anthropic) {
    auto chat = providers::anthropic::messages_request_to_chat(*body);
    if (!chat) return std::unexpected(core::Error::caller(400, "invalid_request_error", chat.error()));
    core::adopt(*body, std::move(*chat));
    call.include_usage = true;  // the Anthropic stream reports usage in message_delta
  }
  if (api == providers::CallApi::responses) {
    // A feature only the Responses API itself serves: only the group's OpenAI/Azure deployments
    // may be sent it (none: refused before anything is sent). The chat translation then only
    // bounds the input for admission.
    auto feature = providers::responses::native_only_feature(*body);
    if (feature) {
      if (!group_serves_natively(services, body->if_contains("model"), providers::CallApi::responses))
        return std::unexpected(core::Error::caller(
            400, "invalid_request_error",
            "'" + *feature + "' is only served by OpenAI and Azure deployments (Tollgate stores no responses and "
                             "cannot translate it to this model group's deployments)",
            feature->substr(0, feature->find_first_of(".[=")), "unsupported_parameter"));
      strip_native_only(*body);
      call.native_only_feature = *feature;
    }
    auto chat = providers::responses::request_to_chat(*body);
    if (!chat) return std::unexpected(std::move(chat.error()));
    core::adopt(*body, std::move(*chat));
    call.native_api = providers::CallApi::responses;
  } else if (anthropic) {
    call.native_api = providers::CallApi::messages;
  }
  call.native_body = std::move(native);
  if (auto err = decode_chat(std::move(*body), services, call)) return std::unexpected(std::move(*err));
  auto bound =
      auth::bind_request(principal, *identities_->current(), call.model, call.body, *services.config, *names);
  if (!bound) return std::unexpected(std::move(bound.error()));
  call.principal = std::move(*bound);
  if (auto refused = anonymous_budget_refusal(*call.principal, call.model, *services.config))
    return std::unexpected(std::move(*refused));
  if (auto err = read_budget_overrides(req, call)) return std::unexpected(std::move(*err));
  // W3C Trace Context: a valid traceparent makes the run a child of the caller's span; an
  // invalid one is ignored (a new trace starts), as the spec asks.
  if (auto tp = req.find("traceparent"); tp != req.end()) {
    call.parent_trace = telemetry::parse_traceparent(std::string_view(tp->value().data(), tp->value().size()));
    if (call.parent_trace)
      if (auto ts = req.find("tracestate"); ts != req.end())
        if (auto v = std::string_view(ts->value().data(), ts->value().size()); telemetry::valid_tracestate(v))
          call.parent_trace->tracestate = std::string(v);
  }
  return call;
}

net::awaitable<void> Gateway::openai_call(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                          http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal,
                                          providers::CallApi api) {
  auto call = prepare_call(*services, req, api, std::move(principal));
  if (!call) return send_error(w, Format::openai, std::move(call.error()));
  call->requester_ip = w.peer_address();
  return pipeline::serve_chat(std::move(services), std::move(*call), std::make_unique<OpenAiSink>(w));
}

net::awaitable<void> Gateway::messages(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                       http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal) {
  auto call = prepare_call(*services, req, providers::CallApi::messages, std::move(principal));
  if (!call) return send_error(w, Format::anthropic, std::move(call.error()));
  call->requester_ip = w.peer_address();
  auto sink = std::make_unique<AnthropicSink>(w, call->model);
  return pipeline::serve_chat(std::move(services), std::move(*call), std::move(sink));
}

net::awaitable<void> Gateway::responses(std::shared_ptr<pipeline::Services> services, http::Request& req,
                                        http::ResponseWriter& w, std::shared_ptr<const auth::Principal> principal) {
  auto call = prepare_call(*services, req, providers::CallApi::responses, std::move(principal));
  if (!call) return send_error(w, Format::openai, std::move(call.error()));
  call->requester_ip = w.peer_address();
  // The echo is read from the caller's body as sent (its own field names, before translation).
  json::object echo;
  if (auto original = parse_json_object(req.body(), 64, false))
    echo = providers::responses::response_echo(*original);
  auto sink = std::make_unique<ResponsesSink>(w, std::move(echo), call->requested_as.empty() ? call->model : call->requested_as);
  return pipeline::serve_chat(std::move(services), std::move(*call), std::move(sink));
}

}  // namespace tollgate::api
