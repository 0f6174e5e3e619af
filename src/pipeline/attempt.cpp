#include "pipeline/attempt.hpp"
#include "core/json_parse.hpp"

#include <ctime>

#include "config/wildcard.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/cache_step.hpp"
#include "pipeline/compat_metrics.hpp"
#include "pipeline/request_body.hpp"
#include "pipeline/response_facts.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/run_metrics.hpp"
#include "pipeline/stream_relay.hpp"
#include "pipeline/upstream_errors.hpp"
#include "providers/embeddings_list.hpp"
#include "providers/native.hpp"
#include "providers/prefill.hpp"
#include "providers/gemini/vertex_auth.hpp"
#include "routing/backoff.hpp"

namespace tollgate::pipeline {

using Usage = providers::Usage;

const providers::Provider* Attempter::native_adapter(const config::Deployment& d) const {
  if (!st_.call.native_body) return nullptr;
  // A client stream of chat chunks a continuation writes into takes chat chunks only.
  if (st_.client && st_.client->open() && !st_.client->native()) return nullptr;
  if (st_.cache_store && st_.call.native_only_feature.empty()) return nullptr;
  return providers::native_adapter_for(d, st_.call.native_api);
}

net::awaitable<void> Attempter::attempt(std::string group, std::size_t dep, AttemptResult& r) {
  Sending s;
  if (!prepare(group, dep, s, r)) co_return;
  if (const auto* auth = s.provider->authorizer()) {
    // Credentials minted at call time (Vertex AI's OAuth token): nothing is sent upstream
    // unless they are in hand; a refusal is classified like the upstream's own answer.
    auto granted = co_await auth->authorize(st_.deployment(dep), s.req, *st_.svc->transport, s.deadline);
    if (!granted) {
      refused_credentials(group, dep, s, granted.error(), r);
      co_return;
    }
  }
  http::CancelToken token;
  st_.token = &token;
  auto started_ex = co_await st_.svc->transport->start(s.req, s.deadline, &token);
  st_.token = nullptr;
  if (!started_ex) {
    not_started(group, dep, s, started_ex.error(), r);
    co_return;
  }
  std::unique_ptr<http::UpstreamExchange> ex = std::move(*started_ex);
  st_.exchange = ex.get();
  if (st_.gone) ex->cancel();
  const int status = ex->status();
  if (status < 200 || status >= 300 || !st_.call.stream) {
    auto body = co_await ex->read_all(static_cast<std::size_t>(st_.cfg.tollgate_settings.max_upstream_body_bytes), s.deadline);
    if (status < 200 || status >= 300) {
      upstream_refused(group, dep, s, *ex, body, r);
      co_return;
    }
    Reply reply;
    if (!take_answer(group, dep, s, *ex, body, reply, r)) co_return;
    if (!co_await st_.sink.send_completion(reply.completion, std::move(reply.raw), reply.headers)) st_.gone = true;
    r.ok = true;
    co_return;
  }
  co_await relay_stream(st_, *this, std::move(group), dep, std::move(ex), s.started, s.deadline, r);
  co_return;
}

bool Attempter::prepare(const std::string& group, std::size_t dep, Sending& s, AttemptResult& r) {
  // A wildcard deployment was bound to `group` by the walk before admission (try_group).
  const auto& d = st_.deployment(dep);
  // A call whose client API this deployment speaks itself is sent the caller's own body; the
  // others get the adapter of the call's API (its chat translation for messages / responses).
  const auto* native = native_adapter(d);
  // The walk (try_group) sends nothing to a deployment without an adapter, so null here is a
  // bug guard, answered as the caller's 400.
  const auto* adapter = native ? native : providers::adapter_for(d, st_.call.api);
  if (adapter == nullptr) {
    r.failure = FailureClass::caller_fix_required;
    r.error = core::Error::caller(400, "invalid_request_error", providers::operation_unsupported_message(d, st_.call.api),
                                  "model", "operation_not_supported");
    return false;
  }
  if (!native && !st_.call.native_only_feature.empty()) {
    // Nothing is sent: this deployment would get the chat translation, which cannot carry it.
    r.failure = FailureClass::caller_fix_required;
    r.error = core::Error::caller(400, "invalid_request_error",
                                  "'" + st_.call.native_only_feature + "' is only served by OpenAI and Azure deployments (" +
                                      d.id + " cannot express it)",
                                  "tools", "unsupported_parameter");
    return false;
  }
  const auto& provider = *adapter;
  s.provider = adapter;
  s.native = native != nullptr;
  const auto started = st_.svc->clock->now();
  s.started = started;
  st_.svc->router->on_attempt_start(dep);
  st_.last_dep = dep;
  st_.attempt_span_id = telemetry::new_span_id();
  st_.attempt_start_unix_nano = wall_ns();

  if (auto why = native ? std::nullopt : provider.refuse_request(d, st_.call.body)) {
    // Nothing is sent (settles at 0): this deployment's API cannot carry the request as the
    // caller wrote it. Recorded (the trace shows why), never counted against the deployment.
    r.failure = FailureClass::caller_fix_required;
    r.error = core::Error::caller(400, "invalid_request_error", "deployment " + d.id + ": " + why->message, why->param,
                                  "unsupported_parameter");
    record(group, dep, 0, r.failure, started, 0, r.evidence);
    return false;
  }

  if (auto why = provider.credentials_error(d)) {
    // Nothing can be signed: nothing is sent (settles at 0); the deployment is cooled down.
    r.failure = FailureClass::deployment_misconfigured;
    r.error = core::Error::gateway(401, "authentication_error",
                                   "deployment " + d.model_name + " (" + d.id + ") has no credentials: " + *why,
                                   "deployment_misconfigured");
    record(group, dep, 0, r.failure, started, 0, r.evidence);
    return false;
  }
  std::expected<http::OutgoingRequest, std::string> req;
  if (native) {
    req = build_native(d, provider);
  } else {
    if (providers::api_has_output(st_.call.api)) write_default_params(d);  // sampling parameters: not for embeddings
    write_output_bound(d, provider);
    if (st_.client && st_.client->continuing()) {
      // A continuation: the body ends with the delivered text (attempt_loop), marked as a prefix
      // the way this deployment reads one (providers/prefill.hpp), for this request only.
      json::object body = st_.call.body;
      providers::mark_prefill(d, body);
      req = provider.build_request(d, body, st_.call.stream);
    } else {
      req = provider.build_request(d, st_.call.body, st_.call.stream);
    }
    // The defaults were for this request only: the body stays the caller's (cache keys, retries).
    for (const auto& k : defaulted_) st_.call.body.erase(k);
    defaulted_.clear();
  }
  if (!req) {
    r.failure = FailureClass::deployment_misconfigured;
    if (config::is_wildcard(st_.cfg.model_list[dep].model_name) && d.provider != config::ProviderKind::unsupported) {
      // The request could not be built for the caller's model name: the caller's to fix.
      r.failure = FailureClass::caller_fix_required;
      r.error = core::Error::caller(400, "invalid_request_error", "model '" + group + "' cannot be sent to its provider",
                                    "model", "model_not_found");
      record(group, dep, 0, r.failure, started, 0, r.evidence);
      return false;
    }
    r.error = d.provider != config::ProviderKind::unsupported ? malformed_error(d, "is misconfigured: " + req.error())
              : d.unusable.empty() ? core::Error::caller(400, "invalid_request_error", req.error(), "model", "unsupported_provider")
                                   : core::Error::gateway(500, "api_error", req.error(), "deployment_misconfigured");
    record(group, dep, 0, r.failure, started, 0, r.evidence);
    return false;
  }
  s.req = std::move(*req);
  // W3C Trace Context: when spans are exported, the upstream call is a child of this attempt's
  // span; otherwise the caller's context (if any) is passed on unchanged, as the spec asks of a
  // hop that does not trace.
  auto& headers = s.req.headers;
  std::erase_if(headers, [](const auto& h) { return h.first == "traceparent" || h.first == "tracestate"; });
  const auto& parent = st_.call.parent_trace;
  if (st_.svc->spans)
    headers.emplace_back("traceparent", telemetry::format_traceparent(st_.trace_id, st_.attempt_span_id,
                                                                      !parent || parent->sampled));
  else if (parent)
    headers.emplace_back("traceparent", telemetry::format_traceparent(parent->trace_id, parent->span_id, parent->sampled));
  if ((st_.svc->spans || parent) && parent && !parent->tracestate.empty())
    headers.emplace_back("tracestate", parent->tracestate);
  s.deadline = attempt_deadline(d);
  return true;
}

void Attempter::refused_credentials(const std::string& group, std::size_t dep, const Sending& s, const policy::Outcome& oc,
                                    AttemptResult& r) {
  const auto& d = st_.deployment(dep);
  r.failure = st_.table->classify(oc);
  r.status = oc.status;
  r.error = core::Error::gateway(oc.status > 0 ? oc.status : 502,
                                 oc.status == 401 || oc.status == 403 ? "authentication_error" : "api_error",
                                 "deployment " + d.id + ": " + oc.message, std::string(policy::to_string(r.failure)));
  r.evidence = budget::Evidence::not_sent;
  record(group, dep, 0, r.failure, s.started, 0, r.evidence);
}

void Attempter::not_started(const std::string& group, std::size_t dep, const Sending& s, const http::TransportError& e,
                            AttemptResult& r) {
  policy::Outcome oc;
  oc.transport = transport_event(e);
  r.failure = st_.table->classify(oc);
  r.error = transport_error(e, st_.deployment(dep));
  r.evidence = e.sent ? budget::Evidence::no_answer : budget::Evidence::not_sent;
  // Sent, and no answer within the call's limit (not the request's deadline): a silent upstream.
  r.silent = e.kind == http::TransportError::Kind::timeout && e.sent && !st_.attempt_cut_by_deadline;
  record(group, dep, 0, r.failure, s.started, 0, r.evidence);
}

void Attempter::upstream_refused(const std::string& group, std::size_t dep, const Sending& s, http::UpstreamExchange& ex,
                                 std::expected<std::string, http::TransportError>& body, AttemptResult& r) {
  const auto& d = st_.deployment(dep);
  const int status = ex.status();
  r = upstream_failure(d, *s.provider, ex, body ? std::move(*body) : std::string());
  // Vertex refused the bearer token (revoked, or a key rotated): the next attempt mints anew.
  if (status == 401 && d.provider == config::ProviderKind::vertex_ai) providers::gemini::forget_vertex_token(d);
  // A documented error answer (the API's JSON error body) is unbilled; anything else after
  // the send (an HTML page from a proxy, a body cut off) may have been processed.
  // A timeout status (408, 504) says the answer was not waited for, not that nothing was
  // generated: its outcome is unknown whatever its body.
  const bool timed_out = status == 408 || status == 504;
  r.evidence = body && r.error_body && !timed_out ? budget::Evidence::error_response : budget::Evidence::unreadable;
  ex.finish();
  st_.exchange = nullptr;
  record(group, dep, status, r.failure, s.started, 0, r.evidence);
}

bool Attempter::take_answer(const std::string& group, std::size_t dep, const Sending& s, http::UpstreamExchange& ex,
                            std::expected<std::string, http::TransportError>& body, Reply& reply, AttemptResult& r) {
  const auto& d = st_.deployment(dep);
  const auto& provider = *s.provider;
  const int status = ex.status();
  const auto limit = static_cast<std::size_t>(st_.cfg.tollgate_settings.max_upstream_body_bytes);
  if (!body) {
    policy::Outcome oc;
    oc.transport = transport_event(body.error());
    r.failure = st_.table->classify(oc);
    r.error = body.error().kind == http::TransportError::Kind::body_too_large
                  ? malformed_error(d, "answered a body larger than " + std::to_string(limit) + " bytes")
                  : transport_error(body.error(), d);
    r.evidence = budget::Evidence::unreadable;  // answered 2xx: billed, but its usage cannot be read
    st_.exchange = nullptr;
    record(group, dep, status, r.failure, s.started, 0, r.evidence);
    return false;
  }
  ex.finish();
  st_.exchange = nullptr;
  auto parsed = provider.parse_response(d, *body);
  if (!parsed) {
    r.failure = classify_event(policy::TransportEvent::malformed_body, status);
    r.error = malformed_error(d, "answered an invalid response: " + parsed.error());
    r.evidence = budget::Evidence::unreadable;
    record(group, dep, status, r.failure, s.started, 0, r.evidence);
    return false;
  }
  if (parsed->failure) {
    r = blocked_answer(group, dep, s.started, std::move(*parsed));
    return false;
  }
  core::adopt(reply.completion, std::move(parsed->completion));
  auto& completion = reply.completion;
  // Embeddings answered in another API's shape are built with float vectors; the caller's
  // encoding_format is applied here, once for every such adapter.
  if (st_.call.api == providers::CallApi::embeddings && !provider.relays_openai_body())
    providers::apply_encoding_format(st_.call.body, completion);
  note_completion(st_, completion);
  Usage u = parsed->usage;
  count_search_calls(dep, u);
  // Served: the answer is the client's. Its usage is the bill when it can be read; when it
  // cannot (absent, malformed), the reservation is.
  r.evidence = u.reported ? budget::Evidence::answered : budget::Evidence::unreadable;
  record(group, dep, status, std::nullopt, s.started, u.prompt_tokens + u.billed_output_tokens(), r.evidence);
  r.usage = u;
  st_.usage = u;
  st_.cost_preview = u.reported ? attempt_charge(st_.price_of(dep), u).total : st_.reserved_now;
  reply.headers = response_headers(st_, dep);
  if (provider.relays_openai_body()) reply.raw = std::move(*body);
  remember_answer(completion, reply.raw);
  if (st_.cache_store && !s.native) {
    // Stored before the answer leaves: a client that asks again at once finds it.
    keep_for_cache(st_, reply.raw.empty() ? json::serialize(completion) : reply.raw);
    store_in_cache(st_, true, st_.cost_preview);
  }
  st_.first_byte_ms = wall_ms();
  return true;
}

AttemptResult Attempter::blocked_answer(const std::string& group, std::size_t dep, core::SteadyTime started,
                                       providers::Provider::Parsed parsed) {
  AttemptResult r;
  const policy::Outcome& oc = *parsed.failure;
  r.status = 200;
  r.failure = st_.table->classify(oc);
  core::Error& e = r.error;
  e.status = 400;
  e.origin = core::ErrorOrigin::upstream;
  e.type = "invalid_request_error";
  e.code = oc.error_code;
  e.message = oc.message;
  e.upstream_api = "google";  // a 2xx body, not an error to relay: written in the caller's format
  // Answered: the provider billed what its usage says (a blocked prompt's tokens); unreadable
  // usage charges the reservation.
  r.usage = parsed.usage;
  r.evidence = parsed.usage.reported ? budget::Evidence::answered : budget::Evidence::unreadable;
  record(group, dep, 200, r.failure, started, parsed.usage.prompt_tokens + parsed.usage.billed_output_tokens(), r.evidence);
  return r;
}

core::SteadyTime Attempter::attempt_deadline(const config::Deployment& d) {
  auto dl = st_.deadline;
  const auto now = st_.svc->clock->now();
  // The deployment's own timeouts, else LiteLLM's per-call timeout (router_settings.timeout).
  const auto t = st_.cfg.call_timeout_for(d, st_.call.stream);
  if (t) dl = std::min(dl, now + *t);
  st_.attempt_cut_by_caller_limit = false;
  if (st_.call.stream) {
    // No response head is no first token either: a stream's first-token limit bounds the wait.
    const auto& b = st_.trace.budget;
    if (const auto ft = policy::tighter_limit(b.first_token_timeout, d.first_token_timeout); ft && now + *ft < dl) {
      dl = now + *ft;
      st_.attempt_cut_by_caller_limit =
          st_.caller_tightened_first_token && (!d.first_token_timeout || *b.first_token_timeout <= *d.first_token_timeout);
    }
  }
  st_.attempt_cut_by_deadline = dl == st_.deadline;
  return dl;
}

AttemptResult Attempter::upstream_failure(const config::Deployment& d, const providers::Provider& p, http::UpstreamExchange& ex,
                               std::string body) {
  AttemptResult r;
  const int status = ex.status();
  r.status = status;
  const auto type_header = p.error_type_header();
  policy::Outcome oc = type_header.empty() ? p.parse_error(status, body)
                                           : p.parse_typed_error(status, body, ex.header(type_header));
  r.failure = st_.table->classify(oc);
  r.error_body = oc.error_body;
  core::Error& e = r.error;
  e.status = status;
  e.origin = core::ErrorOrigin::upstream;
  e.type = oc.error_type.empty() ? "api_error" : oc.error_type;
  e.code = oc.error_code;
  e.message = oc.message.empty() ? "upstream answered " + std::to_string(status) : oc.message;
  e.upstream_body = std::move(body);
  e.upstream_content_type = std::string(ex.header("content-type"));
  // Google errors are rewritten in the caller's format (never relayed as if they were OpenAI's).
  e.upstream_api = d.provider == config::ProviderKind::anthropic ? "anthropic"
                   : d.provider == config::ProviderKind::gemini || d.provider == config::ProviderKind::vertex_ai ? "google"
                                                                                                                 : "openai";
  const long long now_unix = static_cast<long long>(std::time(nullptr));
  if (auto v = ex.header("retry-after-ms"); !v.empty()) r.retry_after = routing::parse_retry_after_ms(v);
  if (!r.retry_after)
    if (auto v = ex.header("retry-after"); !v.empty()) r.retry_after = routing::parse_retry_after(v, now_unix);
  for (std::string_view name : {"retry-after", "retry-after-ms"})
    if (auto v = ex.header(name); !v.empty()) e.headers.emplace_back(std::string(name), std::string(v));
  return r;
}

void Attempter::remember_answer(const json::object& completion, const std::string& raw) {
  if (!st_.degradation.empty()) return;
  if (st_.svc->policies->for_group(st_.call.model).degradation.mode != config::DegradationMode::stale_cache) return;
  st_.svc->stale_cache->put(cache_key(st_), raw.empty() ? json::serialize(completion) : raw, st_.svc->clock->now());
}

FailureClass Attempter::classify_event(policy::TransportEvent ev, int status) const {
  policy::Outcome oc;
  oc.transport = ev;
  oc.status = status;
  return st_.table->classify(oc);
}

void Attempter::record(const std::string& group, std::size_t dep, int status, std::optional<FailureClass> failure,
            core::SteadyTime started, long long tokens, budget::Evidence evidence) {
  const auto now = st_.svc->clock->now();
  const auto dur = ms_between(started, now);
  st_.upstream_ms += dur;
  st_.attempts.push_back(
      AttemptRecord{group, dep, status, failure, dur, st_.attempt_span_id, st_.attempt_start_unix_nano, wall_ns()});
  const auto& d = st_.deployment(dep);
  TraceStep st;
  st.kind = TraceStep::Kind::attempt;
  st.group = group;
  st.deployment = d.id;
  st.provider = d.provider_prefix;
  st.circuit = st_.permit == policy::Permit::probe ? "half_open" : "closed";
  st.status = status;
  if (failure) {
    st.failure_class = std::string(policy::to_string(*failure));
    st.action = std::string(policy::to_string(st_.table->action(*failure)));
  }
  st.duration_ms = dur;
  st.reserved = st_.reserved_now;
  st.evidence = std::string(budget::to_string(evidence));
  st.output_bound = st_.bound.tokens.value_or(0);
  if (st_.bound.reduced) st.output_capped_by = st_.bound.by;
  st_.trace.steps.push_back(std::move(st));
  st_.svc->router->on_attempt_end(dep, failure.has_value(), milliseconds(dur), tokens);
  // Only the deployment's own failures count against its circuit: not the caller's errors,
  // and not an attempt the client abandoned by hanging up.
  // Nor a timeout the caller's own tightened deadline caused: one caller's short deadline
  // must not open a circuit every caller shares.
  const bool cut_by_caller = failure && *failure == FailureClass::unknown_outcome &&
                             ((st_.attempt_cut_by_deadline && st_.caller_tightened_deadline) || st_.attempt_cut_by_caller_limit);
  if (!failure) {
    st_.svc->circuits->on_success(dep);
  } else if (!st_.gone && !st_.cut && !cut_by_caller && policy::counts_against_deployment(*failure) &&
             d.provider != config::ProviderKind::unsupported &&  // it never will serve: no circuit to open
             // A wildcard deployment sends the caller's model name: a 401/403/404 for that name
             // says nothing about the deployment, and must not shut it for every other caller.
             !(*failure == FailureClass::deployment_misconfigured && config::is_wildcard(st_.cfg.model_list[dep].model_name))) {
    st_.svc->circuits->on_failure(dep, *failure);
  } else {
    st_.svc->circuits->release(dep, st_.permit);
  }
  st_.permit = policy::Permit::closed;
  st_.permit_dep.reset();
  if (st_.svc->metrics) {
    // Labelled by the configured deployment (a wildcard's pattern), not the resolved copy.
    count_attempt(st_, group, st_.cfg.model_list[dep], failure);
    count_compat_attempt(st_, st_.cfg.model_list[dep], failure, status, dur);
  }
}

void Attempter::count_search_calls(std::size_t dep, providers::Usage& u) const {
  if (!u.reported) return;
  if (u.web_search_calls == 0 && searches_every_request(dep)) u.web_search_calls = 1;
  // A response that names no tier was served in the one the request asked for (if any).
  const auto& asked = st_.call.output.service_tier;
  if (u.service_tier.empty() && (asked == "priority" || asked == "flex")) u.service_tier = asked;
}

bool Attempter::searches_every_request(std::size_t dep) const {
  const auto& d = st_.deployment(dep);
  const auto& price = st_.price_of(dep).price;
  if (d.provider == config::ProviderKind::anthropic || !price.web_search_call) return false;
  return price.matched_key.find("search") != std::string::npos ||
         d.upstream_model.find("search") != std::string::npos;
}

void Attempter::write_output_bound(const config::Deployment& d, const providers::Provider& provider) {
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    st_.call.body.erase(k);
    if (const auto* v = st_.call.caller_output_fields.if_contains(k)) st_.call.body[k] = *v;
  }
  if (!st_.bound.tokens) {
    if (d.default_max_tokens && st_.call.caller_output_fields.empty())  // in the field this deployment takes
      provider.set_output_limit(d, st_.call.body, *d.default_max_tokens, providers::OutputField::none);
    return;
  }
  providers::OutputField caller = st_.call.caller_output_fields.contains("max_completion_tokens")
                                      ? providers::OutputField::max_completion_tokens
                                  : st_.call.caller_output_fields.contains("max_tokens") ? providers::OutputField::max_tokens
                                                                                       : providers::OutputField::none;
  provider.set_output_limit(d, st_.call.body, *st_.bound.tokens, caller);
}

std::expected<http::OutgoingRequest, std::string> Attempter::build_native(const config::Deployment& d,
                                                                          const providers::Provider& provider) const {
  // A copy per attempt: the caller's body stays as sent for the next attempt (whose bound may
  // differ, or which may go to a deployment that gets the chat translation instead).
  json::object body = *st_.call.native_body;
  if (st_.bound.tokens)
    provider.set_output_limit(d, body, *st_.bound.tokens, providers::OutputField::none);
  else if (d.default_max_tokens && st_.call.caller_output_fields.empty())
    provider.set_output_limit(d, body, *d.default_max_tokens, providers::OutputField::none);
  return provider.build_request(d, body, st_.call.stream);
}

void Attempter::write_default_params(const config::Deployment& d) {
  for (const auto& [k, json_text] : d.default_params) {
    if (st_.call.body.contains(k)) continue;  // the caller's own value wins
    boost::system::error_code ec;
    auto v = core::parse_json(json_text, ec);
    if (ec) continue;  // written by the loader: always valid
    st_.call.body[k] = std::move(v);
    defaulted_.push_back(k);
  }
}

}  // namespace tollgate::pipeline
