#include "pipeline/attempt_loop.hpp"

#include <algorithm>
#include <ctime>
#include <optional>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "auth/access.hpp"
#include "budget/money.hpp"
#include "core/ids.hpp"
#include "pipeline/admission.hpp"
#include "http/client.hpp"
#include "http/sse.hpp"
#include "policy/failure.hpp"
#include "providers/provider.hpp"
#include "routing/backoff.hpp"

namespace tollgate::pipeline {

namespace net = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;
using policy::FailureClass;

std::shared_ptr<Services> Services::make(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
                                         std::shared_ptr<store::Store> store) {
  auto s = std::make_shared<Services>();
  s->config = cfg;
  s->clock = &clock;
  s->groups = std::make_unique<routing::ModelGroups>(*cfg);
  s->router = std::make_unique<routing::RouterState>(cfg, clock);
  s->limiter = std::make_unique<policy::RateLimiter>(clock);
  for (const auto& d : cfg->model_list) s->prices.push_back(budget::resolve_deployment_price(d, budget::PriceTable::bundled()));
  budget::LedgerOptions lo;
  std::string tz_warning;
  lo.reset_timezone = budget::reset_timezone_or_utc(cfg->general_settings.budget_reset_timezone, &tz_warning);
  if (!tz_warning.empty()) spdlog::warn("general_settings.budget_reset_timezone: {}", tz_warning);
  std::optional<store::RecoveryResult> recovered;
  if (store) {
    const auto now_ms = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto r = store->recover_ledger(now_ms);
    if (!r) throw std::runtime_error("cannot recover the spend ledger: " + r.error().message);
    lo.first_reservation_id = r->max_reservation_id + 1;
    if (!r->recovered.empty())
      spdlog::warn("ledger recovery: {} reservation(s) left open by an earlier run settled at their reserved amount",
                   r->recovered.size());
    recovered = std::move(*r);
  }
  s->ledger = std::make_unique<budget::Ledger>(lo);
  if (recovered) {
    for (const auto& sp : recovered->spent) {
      auto kind = budget::parse_scope_kind(sp.scope.kind);
      if (!kind) continue;
      const auto start = std::chrono::system_clock::time_point(milliseconds(sp.scope.window_start_ms));
      s->ledger->load(budget::ScopeId{*kind, sp.scope.id}, sp.spent_nanos,
                      sp.scope.window_start_ms == 0 ? budget::SystemTime{} : start);
    }
  }
  s->store = std::move(store);
  return s;
}

namespace {

constexpr auto use_nothrow = net::as_tuple(net::use_awaitable);

long long ms_between(core::SteadyTime a, core::SteadyTime b) {
  return std::chrono::duration_cast<milliseconds>(b - a).count();
}

/// One upstream attempt as recorded for headers and logs.
struct AttemptRecord {
  std::string group;
  std::size_t deployment = 0;
  int status = 0;                      ///< upstream status, 0 for transport failures
  std::optional<FailureClass> failure; ///< nullopt = success
  long long duration_ms = 0;
};

/// Why a target was not attempted: the client-facing error and a short reason for skip lists.
struct Refusal {
  core::Error error;
  std::string reason;
};

/// How one attempt ended.
struct AttemptResult {
  bool ok = false;                           ///< served (response sent or stream committed)
  providers::Usage usage;                    ///< what the upstream reported (success)
  bool usage_complete = false;               ///< the usage covers the whole answer (stream ran to its end)
  FailureClass failure = FailureClass::transient_provider_error;
  core::Error error;                         ///< the error as the client would see it
  std::optional<milliseconds> retry_after;   ///< upstream hint
};

/// How a whole group (its deployments and retries) ended.
struct GroupResult {
  bool ok = false;
  bool attempted = false;  ///< at least one upstream attempt was made
  FailureClass failure = FailureClass::transient_provider_error;
  std::optional<core::Error> error;
  std::optional<Refusal> refusal;  ///< the last admission refusal (set when a target was refused)
};

/// Appends `rec` to the durable ledger and waits (without blocking the thread) until the
/// store's writer reports it committed. Returns false when it could not be written.
net::awaitable<bool> append_durably(store::Store& st, store::LedgerRecord rec, core::SteadyTime deadline) {
  auto exec = co_await net::this_coro::executor;
  auto timer = std::make_shared<net::steady_timer>(exec, deadline);
  auto result = std::make_shared<std::optional<bool>>();
  st.append_ledger(std::move(rec), [exec, timer, result](bool ok) {
    net::post(exec, [timer, result, ok] {
      *result = ok;
      timer->cancel();
    });
  });
  while (!result->has_value() && std::chrono::steady_clock::now() < deadline) co_await timer->async_wait(use_nothrow);
  co_return result->value_or(false);
}

policy::TransportEvent transport_event(const http::TransportError& e) {
  using K = http::TransportError::Kind;
  switch (e.kind) {
    case K::connect_failed: return policy::TransportEvent::connect_failed;
    case K::write_failed: return policy::TransportEvent::failed_before_send;
    case K::reset: return e.sent ? policy::TransportEvent::reset_after_send : policy::TransportEvent::connect_failed;
    case K::timeout: return e.sent ? policy::TransportEvent::timeout_after_send : policy::TransportEvent::connect_failed;
    case K::protocol_error: return policy::TransportEvent::malformed_body;
    case K::body_too_large: return policy::TransportEvent::oversized_body;
    case K::cancelled: return e.sent ? policy::TransportEvent::reset_after_send : policy::TransportEvent::failed_before_send;
  }
  return policy::TransportEvent::connect_failed;
}

/// The client-facing error for a transport-level failure (no upstream body to relay).
core::Error transport_error(const http::TransportError& e, const config::Deployment& d) {
  using K = http::TransportError::Kind;
  const int status = e.kind == K::timeout ? 504 : 502;
  const std::string what = e.kind == K::timeout ? "timed out" : "failed";
  auto err = core::Error::gateway(status, status == 504 ? "timeout" : "api_error",
                                  "upstream " + d.model_name + " (" + d.id + ") " + what + ": " + e.message,
                                  status == 504 ? "upstream_timeout" : "upstream_unavailable");
  err.origin = core::ErrorOrigin::upstream;
  return err;
}

core::Error malformed_error(const config::Deployment& d, const std::string& why) {
  auto err = core::Error::gateway(502, "api_error", "upstream " + d.model_name + " (" + d.id + ") " + why,
                                  "bad_upstream_response");
  err.origin = core::ErrorOrigin::upstream;
  return err;
}

class Run {
 public:
  Run(std::shared_ptr<Services> s, ChatCall call, ResponseSink& sink)
      : s_(std::move(s)), cfg_(*s_->config), call_(std::move(call)), sink_(sink) {
    deadline_ = call_.start + cfg_.effective_timeout;
    principal_ = call_.principal ? call_.principal : std::make_shared<const auth::Principal>();
    sink_.on_client_gone([this] { on_client_gone(); });
  }
  ~Run() {
    sink_.on_client_gone(nullptr);
    if (rate_admitted_) s_->limiter->release(rate_subjects_, usage_.prompt_tokens + usage_.completion_tokens);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  /// The caller's rate-limited subjects: its key, user and team.
  std::vector<policy::RateSubject> rate_subjects() const {
    std::vector<policy::RateSubject> out;
    const auto& p = principal();
    if (p.key && (p.key->rpm_limit || p.key->tpm_limit || p.key->max_parallel_requests))
      out.push_back({"key:" + p.key->token_hash, p.key->rpm_limit, p.key->tpm_limit, p.key->max_parallel_requests});
    if (p.user && (p.user->rpm_limit || p.user->tpm_limit))
      out.push_back({"user:" + p.user->user_id, p.user->rpm_limit, p.user->tpm_limit, std::nullopt});
    if (p.team && (p.team->rpm_limit || p.team->tpm_limit))
      out.push_back({"team:" + p.team->team_id, p.team->rpm_limit, p.team->tpm_limit, std::nullopt});
    return out;
  }

  net::awaitable<void> go() {
    rate_subjects_ = rate_subjects();
    if (!rate_subjects_.empty()) {
      if (auto denied = s_->limiter->acquire(rate_subjects_)) {
        auto err = core::Error::gateway(429, "rate_limit_exceeded",
                                        "Rate limit exceeded: " + denied->limit + " of " + denied->subject.substr(0, denied->subject.find(':')) +
                                            " reached; retry after " + std::to_string((denied->retry_after.count() + 999) / 1000) + " s",
                                        "rate_limit_exceeded");
        auto headers = common_headers(std::nullopt);
        headers.emplace_back("retry-after", std::to_string((denied->retry_after.count() + 999) / 1000));
        co_await sink_.send_error(err, headers);
        finish(false, 429);
        co_return;
      }
      rate_admitted_ = true;
    }
    GroupResult primary = co_await try_group(call_.model, false);
    if (primary.ok || gone_) {
      finish(primary.ok, primary.ok ? std::nullopt : std::optional<int>(499));
      co_return;
    }
    if (!primary.attempted && primary.refusal) {
      // The caller cannot pay for (or we cannot meter) the model it asked for: refuse, no fallback.
      auto headers = common_headers(std::nullopt);
      co_await sink_.send_error(primary.refusal->error, headers);
      {
      finish(false, primary.refusal->error.status);
      co_return;
    }
    }
    const auto action = policy::default_action(primary.failure);
    const auto fallbacks = routing::fallback_groups(cfg_, call_.model, action);
    for (const auto& group : fallbacks) {
      if (gone_ || s_->clock->now() >= deadline_) break;
      if (!s_->groups->contains(group)) continue;
      // A target the key may not call is skipped like one it cannot pay for.
      if (cfg_.general_settings.enforce_fallback_model_access && !auth::may_call(principal(), group, cfg_)) {
        skipped_.emplace_back(group, "model_access_denied");
        continue;
      }
      GroupResult r = co_await try_group(group, true);
      if (r.ok || gone_) {
      finish(r.ok, r.ok ? std::nullopt : std::optional<int>(499));
      co_return;
    }
      if (!r.attempted && r.refusal) skipped_.emplace_back(group, r.refusal->reason);
    }
    if (gone_) {
      finish(false, 499);
      co_return;
    }
    core::Error err = primary.error ? *primary.error
                                    : core::Error::gateway(503, "api_error",
                                                           "no deployment of model group '" + call_.model + "' is available",
                                                           "no_deployments_available");
    auto headers = common_headers(std::nullopt);
    for (const auto& h : err.headers) headers.push_back(h);
    co_await sink_.send_error(err, headers);
    finish(false, err.status);
  }

 private:
  void on_client_gone() {
    gone_ = true;
    if (exchange_) exchange_->cancel();
    if (token_) token_->cancel();
    if (timer_) timer_->cancel();
  }

  net::awaitable<GroupResult> try_group(std::string group, bool is_fallback) {
    GroupResult out;
    std::vector<std::size_t> tried, refused;
    std::optional<milliseconds> hint;
    const int retries = std::max(0, cfg_.effective_num_retries);
    bool counted_fallback = false;
    for (int n = 0; n <= retries;) {
      if (gone_) break;
      auto dep = s_->router->select(group, tried, core::uniform01());
      if (!dep || std::find(refused.begin(), refused.end(), *dep) != refused.end()) break;
      const bool same_again = std::find(tried.begin(), tried.end(), *dep) != tried.end();
      if (n > 0) {
        // A fresh deployment needs no wait; the same one waits out its backoff / Retry-After.
        routing::BackoffPolicy bp;
        bp.minimum = cfg_.router_settings.retry_after;
        milliseconds delay = same_again ? routing::backoff_delay(bp, n, hint, core::uniform01()) : bp.minimum;
        if (s_->clock->now() + delay >= deadline_) break;  // no time left: go to the fallback now
        if (delay.count() > 0) {
          co_await sleep(delay);
          if (gone_) break;
        }
      }
      if (s_->clock->now() >= deadline_) break;
      // Admission right before the send: the reservation is never held across a wait.
      Held held(*s_->ledger);
      if (auto refusal = co_await admit_target(group, *dep, is_fallback, held)) {
        refused.push_back(*dep);
        tried.push_back(*dep);
        out.refusal = std::move(refusal);
        continue;
      }
      if (gone_ || s_->clock->now() >= deadline_) {
        settle_held(held, *dep, budget::SettleKind::no_usage, 0);  // admitted but never sent
        break;
      }
      if (n > 0) ++retries_attempted_;
      if (is_fallback && !counted_fallback) {
        ++fallbacks_attempted_;
        counted_fallback = true;
      }
      out.attempted = true;
      ++n;
      AttemptResult r = co_await attempt(group, *dep);
      settle(held, *dep, r);
      if (r.ok) {
        out.ok = true;
        co_return out;
      }
      out.failure = r.failure;
      out.error = std::move(r.error);
      hint = r.retry_after;
      tried.push_back(*dep);
      const auto action = policy::default_action(r.failure);
      if (action == policy::Action::next_deployment) s_->router->cool_down(*dep);
      if (action != policy::Action::retry_then_fallback && action != policy::Action::next_deployment) break;
    }
    if (!out.attempted && !out.error && !out.refusal) {
      out.failure = FailureClass::retryable_capacity;
      auto err = core::Error::gateway(429, "rate_limit_exceeded",
                                      "no deployment of model group '" + group +
                                          "' is available: every deployment is cooling down or at its rpm/tpm limit",
                                      "no_deployments_available");
      out.error = err;
    }
    co_return out;
  }

  /// A reservation held for one attempt; settled as `unknown` if the attempt is abandoned.
  struct Held {
    explicit Held(budget::Ledger& l) : ledger(l) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      if (!reservation.empty())
        ledger.settle(std::move(reservation), 0, budget::SettleKind::unknown, std::chrono::system_clock::now());
    }
    budget::Ledger& ledger;
    budget::Reservation reservation;
    std::vector<store::LedgerScope> scopes;
  };

  const auth::Principal& principal() const { return *principal_; }

  /// The caller's scopes for `group`, computed once per group per request (retries reuse them).
  std::vector<budget::ScopeLimit> scopes_for(const std::string& group) {
    for (const auto& [g, scopes] : scopes_by_group_)
      if (g == group) return scopes;
    scopes_by_group_.emplace_back(group, applicable_scopes(principal(), group, cfg_));
    return scopes_by_group_.back().second;
  }

  /// Admits `dep` for this caller: nullopt when admitted (the worst case is reserved in `held`,
  /// durably when a store is configured), else the refusal.
  net::awaitable<std::optional<Refusal>> admit_target(std::string group, std::size_t dep, bool is_fallback, Held& held) {
    const bool guarded = !is_fallback || cfg_.general_settings.enforce_fallback_budget;
    auto scopes = scopes_for(group);
    // enforce_fallback_budget: false restores the unguarded fallback: spend is still recorded
    // against every scope, but no limit refuses it.
    if (!guarded)
      for (auto& sc : scopes) sc.max_budget = budget::kMaxNanos;
    const auto now = std::chrono::system_clock::now();
    AdmissionDecision adm = admit(*s_->ledger, cfg_, s_->prices[dep], scopes, call_.body, now);
    if (adm.outcome != AdmissionDecision::Outcome::admitted) co_return Refusal{std::move(adm.error), std::move(adm.reason)};
    if (adm.price_status == budget::PriceStatus::unpriced) unpriced_ = true;
    held.reservation = std::move(adm.reservation);
    held.scopes = std::move(adm.ledger_scopes);
    if (held.reservation.empty() || !s_->store) co_return std::nullopt;
    store::LedgerRecord rec;
    rec.reservation_id = held.reservation.id();
    rec.kind = store::LedgerKind::reserve;
    rec.scopes = held.scopes;
    rec.amount_nanos = held.reservation.amount();
    rec.request_id = call_.call_id;
    rec.model = cfg_.model_list[dep].id;
    rec.at_ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
    if (co_await append_durably(*s_->store, std::move(rec), deadline_)) co_return std::nullopt;
    // Fail closed: a paid attempt that cannot be recorded is not sent. Its settle record follows
    // the reserve in the writer's queue, in case the reserve commits after all.
    settle_held(held, dep, budget::SettleKind::no_usage, 0);
    co_return Refusal{core::Error::gateway(503, "api_error",
                                           "the spend ledger cannot be written; paid requests are refused until it can",
                                           "ledger_unavailable"),
                      "ledger_unavailable"};
  }

  /// Settles the attempt's reservation to what it cost and records the cost on the request.
  void settle(Held& held, std::size_t dep, const AttemptResult& r) {
    const auto& price = s_->prices[dep];
    budget::SettleKind kind = budget::SettleKind::no_usage;
    budget::Nanos actual = 0;
    if (r.ok && r.usage.reported && r.usage_complete) {
      kind = budget::SettleKind::actual;
      actual = attempt_cost(price, r.usage);
    } else if (r.ok || r.failure == FailureClass::unknown_outcome) {
      // Served without complete usage (an interrupted stream), or the outcome is unknown: it
      // may have been billed in full, so the whole reservation is charged.
      kind = budget::SettleKind::unknown;
      unknown_ = true;
    }
    if (r.ok) usage_ = r.usage;
    if (held.reservation.empty()) {
      cost_ += attempt_cost(price, r.usage);
      return;
    }
    settle_held(held, dep, kind, actual);
  }

  /// Settles `held` in memory and appends the durable settle record (not awaited: the reserve
  /// record is already durable, and recovery settles conservatively if this one is lost).
  void settle_held(Held& held, std::size_t dep, budget::SettleKind kind, budget::Nanos actual) {
    if (held.reservation.empty()) return;
    const budget::Nanos reserved = held.reservation.amount();
    const budget::Nanos charged = kind == budget::SettleKind::unknown ? reserved : actual;
    cost_ += charged;
    const auto id = held.reservation.id();
    const auto now = std::chrono::system_clock::now();
    s_->ledger->settle(std::move(held.reservation), actual, kind, now);
    if (!s_->store) return;
    store::LedgerRecord rec;
    rec.reservation_id = id;
    rec.kind = store::LedgerKind::settle;
    rec.amount_nanos = reserved;
    rec.actual_nanos = charged;
    rec.settle_kind = std::string(budget::to_string(kind));
    rec.request_id = call_.call_id;
    rec.model = cfg_.model_list[dep].id;
    rec.at_ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
    s_->store->append_ledger(std::move(rec), [](bool) {});
  }

  net::awaitable<void> sleep(milliseconds d) {
    auto exec = co_await net::this_coro::executor;
    net::steady_timer t(exec, d);
    timer_ = &t;
    co_await t.async_wait(use_nothrow);
    timer_ = nullptr;
  }

  core::SteadyTime attempt_deadline(const config::Deployment& d) const {
    auto dl = deadline_;
    const auto& t = call_.stream && d.stream_timeout ? d.stream_timeout : d.timeout;
    if (t) dl = std::min(dl, s_->clock->now() + *t);
    return dl;
  }

  /// Fills in the failure of an attempt that got an HTTP error status.
  AttemptResult upstream_failure(const config::Deployment& d, const providers::Provider& p, http::Exchange& ex,
                                 std::string body) {
    AttemptResult r;
    const int status = ex.status();
    policy::Outcome oc = p.parse_error(status, body);
    r.failure = policy::classify(oc);
    core::Error& e = r.error;
    e.status = status;
    e.origin = core::ErrorOrigin::upstream;
    e.type = oc.error_type.empty() ? "api_error" : oc.error_type;
    e.code = oc.error_code;
    e.message = oc.message.empty() ? "upstream answered " + std::to_string(status) : oc.message;
    e.upstream_body = std::move(body);
    e.upstream_content_type = std::string(ex.header("content-type"));
    e.upstream_api = d.provider == config::ProviderKind::anthropic ? "anthropic" : "openai";
    const long long now_unix = static_cast<long long>(std::time(nullptr));
    if (auto v = ex.header("retry-after-ms"); !v.empty()) r.retry_after = routing::parse_retry_after_ms(v);
    if (!r.retry_after)
      if (auto v = ex.header("retry-after"); !v.empty()) r.retry_after = routing::parse_retry_after(v, now_unix);
    for (std::string_view name : {"retry-after", "retry-after-ms"})
      if (auto v = ex.header(name); !v.empty()) e.headers.emplace_back(std::string(name), std::string(v));
    return r;
  }

  void record(const std::string& group, std::size_t dep, int status, std::optional<FailureClass> failure,
              core::SteadyTime started, long long tokens) {
    const auto now = s_->clock->now();
    const auto dur = ms_between(started, now);
    upstream_ms_ += dur;
    attempts_.push_back(AttemptRecord{group, dep, status, failure, dur});
    // Only the deployment's own failures count toward its cooldown: not the caller's errors,
    // and not an attempt the client abandoned by hanging up.
    const bool deployment_failed = failure.has_value() && !gone_ && *failure != FailureClass::caller_fix_required &&
                                   *failure != FailureClass::context_overflow &&
                                   *failure != FailureClass::content_policy;
    s_->router->on_attempt_end(dep, deployment_failed, milliseconds(dur), tokens);
  }

  net::awaitable<AttemptResult> attempt(std::string group, std::size_t dep) {
    const auto& d = cfg_.model_list[dep];
    const auto& provider = providers::provider_for(d.provider);
    AttemptResult r;
    const auto started = s_->clock->now();
    s_->router->on_attempt_start(dep);
    last_dep_ = dep;

    auto req = provider.build_request(d, call_.body, call_.stream);
    if (!req) {
      r.failure = FailureClass::deployment_misconfigured;
      r.error = malformed_error(d, "is misconfigured: " + req.error());
      record(group, dep, 0, r.failure, started, 0);
      co_return r;
    }
    auto* pool = http::UpstreamPool::current();
    const auto dl = attempt_deadline(d);
    http::CancelToken token;
    token_ = &token;
    auto started_ex = co_await http::Exchange::start(*pool, *req, dl, &token);
    token_ = nullptr;
    if (!started_ex) {
      policy::Outcome oc;
      oc.transport = transport_event(started_ex.error());
      r.failure = policy::classify(oc);
      r.error = transport_error(started_ex.error(), d);
      record(group, dep, 0, r.failure, started, 0);
      co_return r;
    }
    std::unique_ptr<http::Exchange> ex = std::move(*started_ex);
    exchange_ = ex.get();
    if (gone_) ex->cancel();
    const auto limit = static_cast<std::size_t>(cfg_.tollgate_settings.max_upstream_body_bytes);
    const int status = ex->status();

    if (status < 200 || status >= 300) {
      auto body = co_await ex->read_all(limit, dl);
      r = upstream_failure(d, provider, *ex, body ? std::move(*body) : std::string());
      ex->finish();
      exchange_ = nullptr;
      record(group, dep, status, r.failure, started, 0);
      co_return r;
    }

    if (!call_.stream) {
      auto body = co_await ex->read_all(limit, dl);
      if (!body) {
        policy::Outcome oc;
        oc.transport = transport_event(body.error());
        r.failure = policy::classify(oc);
        r.error = body.error().kind == http::TransportError::Kind::body_too_large
                      ? malformed_error(d, "answered a body larger than " + std::to_string(limit) + " bytes")
                      : transport_error(body.error(), d);
        exchange_ = nullptr;
        record(group, dep, status, r.failure, started, 0);
        co_return r;
      }
      ex->finish();
      exchange_ = nullptr;
      auto completion = provider.parse_response(d, *body);
      if (!completion) {
        r.failure = FailureClass::transient_provider_error;
        r.error = malformed_error(d, "answered an invalid response: " + completion.error());
        record(group, dep, status, r.failure, started, 0);
        co_return r;
      }
      Usage u;
      if (auto* uv = completion->if_contains("usage")) u = providers::usage_from_openai(*uv);
      record(group, dep, status, std::nullopt, started, u.prompt_tokens + u.completion_tokens);
      r.usage = u;
      r.usage_complete = true;
      usage_ = u;
      cost_preview_ = attempt_cost(s_->prices[dep], u);
      auto headers = common_headers(dep);
      std::string raw = provider.relays_openai_body() ? std::move(*body) : std::string();
      if (!co_await sink_.send_completion(*completion, std::move(raw), headers)) gone_ = true;
      r.ok = true;
      co_return r;
    }

    co_return co_await relay_stream(group, dep, std::move(ex), started, dl);
  }

  using Usage = providers::Usage;

  /// Streams an upstream 2xx to the client. Until the first chunk is ready nothing is sent, so
  /// a stream that breaks before its first event still counts as a failed attempt.
  net::awaitable<AttemptResult> relay_stream(std::string group, std::size_t dep, std::unique_ptr<http::Exchange> ex,
                                             core::SteadyTime started, core::SteadyTime first_byte_deadline) {
    const auto& d = cfg_.model_list[dep];
    const auto& provider = providers::provider_for(d.provider);
    AttemptResult r;
    auto decoder = provider.stream_decoder(d, call_.include_usage);
    http::SseParser parser;
    std::string raw;
    std::vector<std::string> chunks;
    bool committed = false;
    std::optional<core::Error> stream_error;
    auto dl = first_byte_deadline;

    const auto ct = ex->header("content-type");
    if (ct.find("text/event-stream") == std::string_view::npos) {
      r.failure = FailureClass::transient_provider_error;
      r.error = malformed_error(d, "answered a stream request without an event stream (content-type '" +
                                       std::string(ct) + "')");
      exchange_ = nullptr;
      record(group, dep, ex->status(), r.failure, started, 0);
      co_return r;
    }

    for (;;) {
      raw.clear();
      auto got = co_await ex->read_some(raw, dl);
      if (!got) {
        if (gone_) break;
        if (!committed) {
          policy::Outcome oc;
          oc.transport = transport_event(got.error());
          r.failure = policy::classify(oc);
          r.error = transport_error(got.error(), d);
          exchange_ = nullptr;
          record(group, dep, ex->status(), r.failure, started, 0);
          co_return r;
        }
        stream_error = transport_error(got.error(), d);
        stream_error->message = "upstream stream broke: " + got.error().message;
        break;
      }
      const bool at_end = *got == 0;
      if (!parser.feed(raw, [&](const http::SseEvent& ev) { decoder->on_event(ev, chunks); })) {
        // An event line beyond the parser's limit: garbage, not an LLM stream.
        if (!committed) {
          r.failure = FailureClass::transient_provider_error;
          r.error = malformed_error(d, "sent a malformed event stream");
          ex->cancel();
          exchange_ = nullptr;
          record(group, dep, ex->status(), r.failure, started, 0);
          co_return r;
        }
        stream_error = malformed_error(d, "sent a malformed event stream");
        break;
      }
      if (auto err = decoder->error(); err && !committed) {
        r.failure = policy::classify(*err);
        r.error.status = err->status;
        r.error.type = err->error_type.empty() ? "api_error" : err->error_type;
        r.error.code = err->error_code;
        r.error.message = err->message;
        r.error.origin = core::ErrorOrigin::upstream;
        exchange_ = nullptr;
        record(group, dep, ex->status(), r.failure, started, 0);
        co_return r;
      }
      if (!chunks.empty() && !committed) {
        auto headers = common_headers(dep);
        if (!co_await sink_.begin_stream(headers)) {
          gone_ = true;  // the client cannot be written to: stop, do not retry elsewhere
          break;
        }
        committed = true;
        dl = deadline_;
      }
      if (committed && !chunks.empty()) {
        const auto usage_so_far = decoder->usage();
        if (!co_await sink_.stream_chunks(chunks, usage_so_far)) {
          gone_ = true;
          break;
        }
        chunks.clear();
      }
      if (auto err = decoder->error(); err && committed) {
        stream_error = core::Error::gateway(err->status ? err->status : 500, err->error_type.empty() ? "api_error" : err->error_type,
                                            err->message.empty() ? "upstream reported an error mid-stream" : err->message,
                                            err->error_code);
        break;
      }
      if (decoder->finished() || at_end) {
        if (!decoder->finished()) {
          if (!committed) {
            r.failure = FailureClass::transient_provider_error;
            r.error = malformed_error(d, "ended its stream before sending any event");
            exchange_ = nullptr;
            record(group, dep, ex->status(), r.failure, started, 0);
            co_return r;
          }
          stream_error = core::Error::gateway(502, "api_error", "upstream stream ended before completion", "stream_truncated");
        }
        break;
      }
    }
    if (gone_) {
      ex->cancel();
    } else {
      // Read to the end so the connection can be reused ([DONE] may precede the last chunk).
      if (!stream_error && !ex->done()) {
        std::string rest;
        auto more = co_await ex->read_some(rest, dl);
        (void)more;
      }
      ex->finish();
    }
    exchange_ = nullptr;
    const auto u = decoder->usage();
    r.usage = u;
    // The usage is the bill only when the stream ran to its end; an interrupted stream is
    // settled conservatively (its partial usage undercounts what the provider bills).
    r.usage_complete = decoder->finished() && !stream_error && !gone_;
    if (!committed) {
      // Nothing reached the client: the client left, or the stream failed before its first event.
      r.ok = false;
      r.failure = FailureClass::unknown_outcome;
      r.error = malformed_error(d, "stream failed before its first event");
      record(group, dep, ex->status(), r.failure, started, 0);
      co_return r;
    }
    r.ok = true;  // once committed, the attempt is the answer, complete or not
    record(group, dep, ex->status(), std::nullopt, started, u.prompt_tokens + u.completion_tokens);
    if (!gone_) co_await sink_.end_stream(stream_error);
    co_return r;
  }

  /// Writes the request's spend log row (off the request path: the store's writer batches it).
  void finish(bool ok, std::optional<int> status) {
    if (!s_->store || cfg_.general_settings.disable_spend_logs) return;
    const auto& p = principal();
    store::SpendLogRow row;
    row.request_id = call_.call_id;
    row.call_type = call_.call_type;
    if (p.key) {
      row.api_key = p.key->token_hash;
      row.key_alias = p.key->key_alias;
      row.user = p.key->user_id;
      row.team_id = p.key->team_id;
      row.organization_id = p.key->organization_id;
    }
    row.end_user = p.end_user;
    row.request_tags = p.tags;
    row.requested_model = call_.model;
    row.model_group = call_.model;
    const auto served = ok ? last_dep_ : std::nullopt;
    if (served) {
      const auto& d = cfg_.model_list[*served];
      row.model_group = d.model_name;
      row.model = d.upstream_model;
      row.model_id = d.id;
      row.custom_llm_provider = d.provider_prefix;
      row.api_base = d.api_base;
    }
    json::array attempts;
    for (const auto& a : attempts_) {
      json::object o;
      o["model_group"] = a.group;
      o["deployment"] = cfg_.model_list[a.deployment].id;
      o["status"] = a.status;
      o["outcome"] = a.failure ? std::string(policy::to_string(*a.failure)) : std::string("ok");
      o["duration_ms"] = a.duration_ms;
      attempts.push_back(std::move(o));
    }
    row.attempts = json::serialize(attempts);
    json::array skipped;
    for (const auto& [g, why] : skipped_) {
      json::object o;
      o["target"] = g;
      o["reason"] = why;
      skipped.push_back(std::move(o));
    }
    row.skipped_fallbacks = json::serialize(skipped);
    row.prompt_tokens = usage_.prompt_tokens;
    row.completion_tokens = usage_.completion_tokens;
    row.cached_tokens = usage_.cached_tokens;
    row.total_tokens = usage_.prompt_tokens + usage_.completion_tokens;
    row.spend_nanos = cost_;
    row.priced = !unpriced_;
    row.unknown_outcome = unknown_;
    const auto now_sys = std::chrono::system_clock::now();
    const auto elapsed = ms_between(call_.start, s_->clock->now());
    row.end_ms = std::chrono::duration_cast<milliseconds>(now_sys.time_since_epoch()).count();
    row.start_ms = row.end_ms - elapsed;
    row.request_duration_ms = elapsed;
    row.status = ok ? "success" : "failure";
    if (status) row.error_status = std::to_string(*status);
    s_->store->append_spend_log(std::move(row));
  }

  Headers common_headers(std::optional<std::size_t> dep) const {
    Headers h;
    const auto now = s_->clock->now();
    const long long total = ms_between(call_.start, now);
    h.emplace_back("x-litellm-call-id", call_.call_id);
    h.emplace_back("x-litellm-attempted-retries", std::to_string(retries_attempted_));
    h.emplace_back("x-litellm-max-retries", std::to_string(cfg_.effective_num_retries));
    h.emplace_back("x-litellm-attempted-fallbacks", std::to_string(fallbacks_attempted_));
    h.emplace_back("x-litellm-response-duration-ms", std::to_string(total));
    h.emplace_back("x-litellm-overhead-duration-ms", std::to_string(std::max(0LL, total - upstream_ms_)));
    const auto served = dep ? dep : last_dep_;
    if (served) {
      const auto& d = cfg_.model_list[*served];
      h.emplace_back("x-litellm-model-id", d.id);
      h.emplace_back("x-litellm-model-group", d.model_name);
      h.emplace_back("x-litellm-model-api-base", d.api_base);
    } else {
      h.emplace_back("x-litellm-model-group", call_.model);
    }
    std::string path;
    for (const auto& a : attempts_) {
      if (!path.empty()) path += ", ";
      path += a.group + "/" + cfg_.model_list[a.deployment].id + ":" +
              (a.failure ? std::string(policy::to_string(*a.failure)) : "ok");
      if (a.status) path += "(" + std::to_string(a.status) + ")";
    }
    // A stream's headers go out before its attempt is recorded: add the serving attempt.
    if (dep && (attempts_.empty() || attempts_.back().failure || attempts_.back().deployment != *dep)) {
      if (!path.empty()) path += ", ";
      path += cfg_.model_list[*dep].model_name + "/" + cfg_.model_list[*dep].id + ":ok(200)";
    }
    if (!path.empty()) h.emplace_back("x-tollgate-attempts", path);
    if (!skipped_.empty()) {
      std::string s;
      for (const auto& [g, why] : skipped_) s += (s.empty() ? "" : ", ") + g + " (" + why + ")";
      h.emplace_back("x-tollgate-skipped-fallbacks", s);
    }
    if (dep && !call_.stream) h.emplace_back("x-litellm-response-cost", budget::format_dollars(cost_preview_));
    if (const auto& k = principal().key) {
      if (auto st = s_->ledger->state(budget::ScopeId{budget::ScopeKind::key, k->token_hash}, std::chrono::system_clock::now())) {
        const budget::Nanos spent = st->spent + (dep ? cost_preview_ : 0);
        h.emplace_back("x-litellm-key-spend", budget::format_dollars(spent));
        // soft_budget only warns: a header for the caller and a log line for the operator.
        if (k->soft_budget_nanos && spent >= *k->soft_budget_nanos) {
          h.emplace_back("x-tollgate-soft-budget-exceeded", budget::format_dollars(*k->soft_budget_nanos));
          spdlog::warn("key {} ({}) is over its soft budget: spent ${} of soft budget ${}", k->key_name, k->key_alias,
                       budget::format_dollars(spent), budget::format_dollars(*k->soft_budget_nanos));
        }
      }
      if (k->max_budget_nanos) h.emplace_back("x-litellm-key-max-budget", budget::format_dollars(*k->max_budget_nanos));
    }
    return h;
  }

  std::shared_ptr<Services> s_;
  const config::Config& cfg_;
  ChatCall call_;
  ResponseSink& sink_;
  core::SteadyTime deadline_{};
  bool gone_ = false;
  http::Exchange* exchange_ = nullptr;
  http::CancelToken* token_ = nullptr;
  net::steady_timer* timer_ = nullptr;
  int retries_attempted_ = 0;
  int fallbacks_attempted_ = 0;
  long long upstream_ms_ = 0;
  std::optional<std::size_t> last_dep_;
  std::vector<AttemptRecord> attempts_;
  std::shared_ptr<const auth::Principal> principal_;
  std::vector<policy::RateSubject> rate_subjects_;
  std::vector<std::pair<std::string, std::vector<budget::ScopeLimit>>> scopes_by_group_;
  bool rate_admitted_ = false;
  std::vector<std::pair<std::string, std::string>> skipped_;  ///< fallback targets skipped: (group, reason)
  budget::Nanos cost_ = 0;          ///< what this request's attempts cost (settled)
  budget::Nanos cost_preview_ = 0;  ///< the served attempt's cost, known before it is settled
  bool unpriced_ = false;
  bool unknown_ = false;
  providers::Usage usage_;
};

}  // namespace

net::awaitable<void> run_chat(std::shared_ptr<Services> services, ChatCall call, ResponseSink& sink) {
  Run run(std::move(services), std::move(call), sink);
  co_await run.go();
}

}  // namespace tollgate::pipeline
