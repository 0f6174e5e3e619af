#include "pipeline/attempt_loop.hpp"

#include "core/await_answer.hpp"

#include <algorithm>
#include <ctime>
#include <mutex>
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
#include "budget/settlement.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/replay.hpp"
#include "pipeline/trace.hpp"
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

namespace {

/// Every circuit transition: a log line, a counter, and an alert when a provider opens.
std::function<void(const policy::CircuitTransition&)> circuit_logger(std::shared_ptr<telemetry::Registry> metrics,
                                                                     std::shared_ptr<telemetry::Alerts> alerts) {
  return [metrics, alerts](const policy::CircuitTransition& t) {
    spdlog::warn("circuit {} {}: {} -> {} ({})", t.scope, t.id, policy::to_string(t.from), policy::to_string(t.to),
                 t.reason);
    metrics->counter("tollgate_circuit_transitions_total", "Circuit state changes", {"scope", "id", "to"})
        .inc({t.scope, t.id, std::string(policy::to_string(t.to))});
    if (t.scope == "provider" && t.to == policy::CircuitState::open)
      alerts->raise("provider_circuit_open", t.id, "provider " + t.id + " circuit opened: " + t.reason);
  };
}

/// Circuit states as gauges, read at scrape time: 0 closed, 1 half-open, 2 open.
void watch_circuits(telemetry::Registry& metrics, const policy::Circuits& circuits) {
  metrics.on_collect([&circuits](telemetry::Exposition& out) {
    for (const auto& c : circuits.snapshot()) {
      const double v = c.state == policy::CircuitState::closed ? 0 : c.state == policy::CircuitState::half_open ? 1 : 2;
      out.gauge("tollgate_circuit_state", "Circuit state: 0 closed, 1 half-open, 2 open", {{"scope", c.scope}, {"id", c.id}}, v);
    }
  });
}

}  // namespace

std::shared_ptr<Services> Services::make(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
                                         std::shared_ptr<store::Store> store, SharedState shared) {
  auto s = std::make_shared<Services>();
  s->config = cfg;
  s->clock = &clock;
  s->groups = std::make_unique<routing::ModelGroups>(*cfg);
  s->policies = std::make_unique<policy::PolicySet>(*cfg);
  s->metrics = std::make_shared<telemetry::Registry>();
  s->alerts = std::make_shared<telemetry::Alerts>();
  s->circuits = std::make_unique<policy::Circuits>(policy::Circuits::setup_from(*cfg), clock,
                                                   [log = circuit_logger(s->metrics, s->alerts),
                                                    also = std::move(shared.on_circuit_transition)](
                                                       const policy::CircuitTransition& t) {
                                                     log(t);
                                                     if (also) also(t);
                                                   });
  s->router = std::make_unique<routing::RouterState>(cfg, clock, s->circuits.get());
  s->stale_cache = std::make_unique<policy::StaleCache>();
  s->transport = std::make_shared<http::PooledTransport>();
  watch_circuits(*s->metrics, *s->circuits);
  auto& m = *s->metrics;
  s->loop_metrics.requests = &m.counter("tollgate_requests_total", "Model requests by requested model group and result",
                                        {"model_group", "result", "degradation"});
  s->loop_metrics.duration = &m.histogram("tollgate_request_duration_ms",
                                          "Whole-request latency in milliseconds, all attempts included", {"model_group"},
                                          {50, 100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000});
  s->loop_metrics.overruns = &m.counter("tollgate_deadline_overruns_total",
                                        "Requests that ended later than their deadline plus deadline_slack_ms",
                                        {"model_group"});
  s->loop_metrics.retries = &m.counter("tollgate_retries_total", "Retries spent", {"model_group"});
  s->loop_metrics.fallbacks = &m.counter("tollgate_fallbacks_total", "Fallback targets attempted", {"model_group"});
  s->loop_metrics.attempts = &m.counter("tollgate_upstream_attempts_total",
                                        "Upstream attempts by deployment and outcome (ok or failure class)",
                                        {"model_group", "deployment", "provider", "outcome"});
  s->alerts->register_metrics(*s->metrics);
  if (shared.limits) s->limiter = std::move(shared.limits);
  else s->limiter = std::make_unique<policy::RateLimiter>(clock);
  s->prices = budget::resolve_deployment_prices(*cfg);
  if (shared.ledger) {
    s->ledger = std::move(shared.ledger);
    s->store = std::move(store);
    return s;
  }
  budget::LedgerOptions lo;
  std::string tz_warning;
  lo.reset_timezone = budget::reset_timezone_or_utc(cfg->general_settings.budget_reset_timezone, &tz_warning);
  if (!tz_warning.empty()) spdlog::warn("general_settings.budget_reset_timezone: {}", tz_warning);
  std::optional<store::RecoveryResult> recovered;
  if (store) {
    const auto now = std::chrono::system_clock::now();
    const auto now_ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
    // A reservation left open by a crash is charged to the window that contains now, as a late
    // settle is in memory: both ledgers agree on every window after the restart.
    const auto tz = lo.reset_timezone;
    store::ScopeRoller roll = [tz](const store::LedgerScope& sc, std::int64_t at_ms) { return ledger_scope_at(sc, tz, at_ms); };
    auto r = store->recover_ledger(now_ms, roll);
    if (!r) throw std::runtime_error("cannot recover the spend ledger: " + r.error().message);
    lo.first_reservation_id = r->max_reservation_id + 1;
    if (!r->recovered.empty())
      spdlog::warn("ledger recovery: {} reservation(s) left open by an earlier run settled at their reserved amount",
                   r->recovered.size());
    recovered = std::move(*r);
  }
  auto local = std::make_unique<budget::Ledger>(lo);
  s->local_ledger = local.get();
  s->ledger = std::move(local);
  if (recovered) {
    const auto now_ms =
        std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const auto& sp : recovered->spent) {
      auto kind = budget::parse_scope_kind(sp.scope.kind);
      if (!kind) continue;
      // A window that has ended holds nothing admission needs: it is not loaded (memory stays
      // bounded by the scopes of current windows and lifetime budgets).
      if (sp.scope.window_end_ms != 0 && sp.scope.window_end_ms <= now_ms) continue;
      std::optional<budget::BudgetPeriod> period;
      if (!sp.scope.period.empty())
        if (auto p = budget::parse_budget_duration(sp.scope.period)) period = *p;
      const auto start = std::chrono::system_clock::time_point(milliseconds(sp.scope.window_start_ms));
      s->local_ledger->load(budget::ScopeId{*kind, sp.scope.id}, sp.spent_nanos,
                      sp.scope.window_start_ms == 0 ? budget::SystemTime{} : start, period);
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

std::int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
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
  /// What was sent and what came back: the charge follows it (budget/settlement.hpp).
  budget::Evidence evidence = budget::Evidence::not_sent;
  bool error_body = false;                   ///< an error status came with the API's JSON error body
  FailureClass failure = FailureClass::transient_provider_error;
  core::Error error;                         ///< the error as the client would see it
  std::optional<milliseconds> retry_after;   ///< upstream hint
  int status = 0;                            ///< upstream HTTP status, 0 = transport failure
};

/// How a whole group (its deployments and retries) ended.
struct GroupResult {
  bool ok = false;
  bool attempted = false;  ///< at least one upstream attempt was made
  FailureClass failure = FailureClass::transient_provider_error;
  std::optional<core::Error> error;
  std::optional<Refusal> refusal;  ///< the last admission refusal (set when a target was refused)
  std::string stop_reason;         ///< why the group was left (budget, deadline, Retry-After, circuit)
  bool circuit_blocked = false;    ///< a deployment was not tried because its circuit was open
  bool deadline_hit = false;       ///< the group was left because too little time was left
  bool commercial_block = false;   ///< not tried: its provider's circuit is open for a commercial limit
};

/// A durable append under way: started by start_append, awaited by await_append.
struct PendingAppend {
  std::shared_ptr<net::steady_timer> timer;
  std::shared_ptr<std::optional<bool>> result;
};

/// Appends `rec` to the durable ledger; the store's writer answers on its own thread.
PendingAppend start_append(store::Store& st, store::LedgerRecord rec, const net::any_io_executor& exec,
                           core::SteadyTime deadline) {
  PendingAppend p{std::make_shared<net::steady_timer>(exec, deadline), std::make_shared<std::optional<bool>>()};
  st.append_ledger(std::move(rec), [exec, timer = p.timer, result = p.result](bool ok) {
    net::post(exec, [timer, result, ok] {
      *result = ok;
      timer->cancel();
    });
  });
  return p;
}

/// Waits (without blocking the thread) until the store's writer reports `p` committed. Returns
/// false when it could not be written by `deadline`.
net::awaitable<bool> await_append(PendingAppend p, core::SteadyTime deadline) {
  while (!p.result->has_value() && std::chrono::steady_clock::now() < deadline) co_await p.timer->async_wait(use_nothrow);
  co_return p.result->value_or(false);
}

/// Appends `rec` to the durable ledger and waits until it is committed (false: it was not).
net::awaitable<bool> append_durably(store::Store& st, store::LedgerRecord rec, core::SteadyTime deadline) {
  auto exec = co_await net::this_coro::executor;
  co_return co_await await_append(start_append(st, std::move(rec), exec, deadline), deadline);
}

/// Asks `ledger` for a reservation (await_answer). Past `deadline` the attempt is refused as
/// ledger_unavailable; a reservation granted after that is released (no_usage) when it arrives,
/// so nothing stays held for an attempt that was never sent.
/// `id`: the id from take_reservation_id, if one was taken.
net::awaitable<budget::ReserveResult> reserve_on(budget::BudgetLedger& ledger, std::vector<budget::ScopeLimit> scopes,
                                                 budget::AmountRange range, budget::SystemTime now,
                                                 core::SteadyTime deadline, std::optional<std::uint64_t> id) {
  std::function<void(std::function<void(budget::ReserveResult)>)> start =
      [&ledger, scopes = std::move(scopes), range, now, id](std::function<void(budget::ReserveResult)> done) mutable {
        if (id) ledger.reserve_as_async(*id, std::move(scopes), range, now, std::move(done));
        else ledger.reserve_async(std::move(scopes), range, now, std::move(done));
      };
  std::function<void(budget::ReserveResult)> late = [&ledger](budget::ReserveResult r) {
    if (r && !r->empty()) ledger.settle(std::move(*r), 0, budget::SettleKind::no_usage, std::chrono::system_clock::now());
  };
  auto answer = co_await core::await_answer<budget::ReserveResult>(std::move(start), deadline, std::move(late));
  if (answer) co_return std::move(*answer);
  budget::Refusal refusal;
  refusal.reason = budget::RefusalReason::observer_rejected;
  co_return std::unexpected(std::move(refusal));
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

/// What a request still running when the gateway's drain ran out ends with (docs/operations.md).
core::Error shutdown_error() {
  return core::Error::gateway(503, "api_error",
                              "the gateway is shutting down: this request was still running when its drain time "
                              "(tollgate_settings.drain_timeout_ms) ran out; retry it",
                              "gateway_shutting_down");
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
    table_ = &s_->policies->for_group(call_.model).classes;
    sink_.on_client_gone([this] { on_client_gone(); });
    sink_.on_shutdown([this] { on_shutdown(); });
  }
  ~Run() {
    sink_.on_client_gone(nullptr);
    sink_.on_shutdown(nullptr);
    if (rate_admitted_) s_->limiter->release(rate_subjects_, usage_.prompt_tokens + usage_.completion_tokens);
    // An exception (or an abandoned frame) between a permit and its verdict must not leave a
    // half-open circuit waiting for a probe that never reports.
    if (permit_dep_) s_->circuits->release(*permit_dep_, permit_);
    s_->circuits->release_feature(call_.model, feature_permit_);
    if (!finished_) {
      try {
        finish(false, 500);
      } catch (...) {
      }
    }
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

  net::awaitable<RunOutcome> go() {
    set_budget();
    rate_subjects_ = rate_subjects();
    if (!rate_subjects_.empty()) {
      auto& limiter = *s_->limiter;
      std::function<void(std::function<void(std::optional<policy::RateDenial>)>)> start =
          [&limiter, subjects = rate_subjects_](std::function<void(std::optional<policy::RateDenial>)> done) {
            limiter.acquire_async(subjects, std::move(done));
          };
      std::function<void(std::optional<policy::RateDenial>)> late = [&limiter, subjects = rate_subjects_](
                                                                        std::optional<policy::RateDenial> d) {
        if (!d) limiter.release(subjects, 0);  // admitted after the request gave up waiting
      };
      auto answer = co_await core::await_answer<std::optional<policy::RateDenial>>(std::move(start), deadline_, std::move(late));
      std::optional<policy::RateDenial> denied =
          answer ? std::move(*answer) : std::optional<policy::RateDenial>(policy::RateDenial{"gateway:rate_limits", "rate_limits_unavailable", std::chrono::milliseconds(1000)});
      if (denied) {
        auto err = core::Error::gateway(429, "rate_limit_exceeded",
                                        "Rate limit exceeded: " + denied->limit + " of " + denied->subject.substr(0, denied->subject.find(':')) +
                                            " reached; retry after " + std::to_string((denied->retry_after.count() + 999) / 1000) + " s",
                                        "rate_limit_exceeded");
        auto headers = common_headers(std::nullopt);
        headers.emplace_back("retry-after", std::to_string((denied->retry_after.count() + 999) / 1000));
        trace_.outcome = "refused";
        co_await sink_.send_error(err, headers);
        finish(false, 429);
        co_return outcome_;
      }
      rate_admitted_ = true;
    }
    const auto& gp = s_->policies->for_group(call_.model);
    // A group that is itself the degradation target (defaults.degradation naming it) does not
    // degrade to itself.
    const bool self_target = (gp.degradation.mode == config::DegradationMode::equivalent ||
                              gp.degradation.mode == config::DegradationMode::reduced) &&
                             gp.degradation.model == call_.model;
    const bool can_degrade =
        call_.allow_degradation && gp.degradation.mode != config::DegradationMode::none && !self_target;
    if (can_degrade) {
      feature_permit_ = s_->circuits->acquire_feature(call_.model);
      if (feature_permit_ == policy::Permit::denied) {
        // The group cannot keep its budgets right now: its degradation mode answers directly.
        feature_permit_ = policy::Permit::closed;
        trace_step_skip(call_.model, "feature circuit open");
        const std::string why = "feature circuit of '" + call_.model + "' is open";
        co_await degrade(gp.degradation, why, std::nullopt);
        co_return outcome_;
      }
    }
    auto walk = co_await walk_targets();
    // The feature circuit hears only what says something about the group: not the caller's own
    // errors, not a client that left, not a deadline the caller tightened below the group's.
    const bool neutral = walk.neutral || gone_ || cut_ || (!walk.met_budget && caller_tightened_deadline_);
    if (can_degrade) {
      if (neutral) s_->circuits->release_feature(call_.model, feature_permit_);
      else s_->circuits->on_feature_result(call_.model, walk.met_budget, feature_permit_);
      feature_permit_ = policy::Permit::closed;
    }
    if (walk.answered) co_return outcome_;
    if (cut_) {  // shutting down: no degraded answer, no deferred job; worth running again elsewhere
      trace_step_stop("gateway shutting down: drain time over");
      co_await fail(shutdown_error(), 503);
      outcome_.retryable = true;
      co_return outcome_;
    }
    if (can_degrade && walk.may_degrade) {
      co_await degrade(gp.degradation, walk.why, walk.error);
      co_return outcome_;
    }
    co_await fail(walk.error, walk.status_hint);
    co_return outcome_;
  }

 private:
  /// How the walk over the primary and its fallbacks ended.
  struct Walk {
    bool answered = false;     ///< a response (success or refusal) was sent, or the client is gone
    bool met_budget = true;    ///< feature circuit: false when time, money or targets ran out
    bool neutral = false;      ///< the caller's own error: says nothing about the group's health
    bool may_degrade = false;  ///< the failure's action allows the degradation mode
    std::string why;           ///< why nothing served it (degradation label / trace)
    std::optional<core::Error> error;  ///< the error the client gets if nothing else answers
    int status_hint = 0;
  };

  /// Effective budgets: the group's configured ones, tightened by the key, then by the request.
  void set_budget() {
    const auto& gp = s_->policies->for_group(call_.model);
    std::vector<std::string> ignored;
    auto b = policy::tighten(gp.budget, call_.key_budget, &ignored);
    std::vector<std::string> ignored_req;
    b = policy::tighten(b, call_.request_budget, &ignored_req);
    for (auto& i : ignored) {
      if (i.starts_with("x-tollgate-")) i = "key metadata tollgate_request_budget." + i.substr(11);
      trace_.ignored.push_back(i);
    }
    for (auto& i : ignored_req) trace_.ignored.push_back(i);
    for (const auto& i : trace_.ignored)
      spdlog::info("request {}: budget override ignored (only tightening is allowed): {}", call_.call_id, i);
    trace_.budget = b;
    deadline_ = call_.start + b.deadline;
    caller_tightened_deadline_ = b.deadline < gp.budget.deadline;
  }

  milliseconds time_left() const {
    return std::chrono::duration_cast<milliseconds>(deadline_ - s_->clock->now());
  }
  bool time_for_an_attempt() const {
    const auto left = time_left();
    return left.count() > 0 && left >= trace_.budget.min_time_left;
  }

  net::awaitable<Walk> walk_targets() {
    Walk w;
    GroupResult primary = co_await try_group(call_.model, false);
    if (primary.ok || gone_) {
      finish(primary.ok, primary.ok ? std::nullopt : std::optional<int>(499));
      w.answered = true;
      co_return w;
    }
    if (cut_) co_return w;  // go() answers the shutdown
    if (!primary.attempted && primary.refusal && !primary.circuit_blocked) {
      // The caller cannot pay for (or we cannot meter) the model it asked for: refuse, no fallback.
      trace_.outcome = "refused";
      trace_step_stop(primary.refusal->reason);
      auto headers = common_headers(std::nullopt);
      co_await sink_.send_error(primary.refusal->error, headers);
      finish(false, primary.refusal->error.status);
      w.answered = true;
      w.neutral = primary.refusal->reason.rfind("max_request_cost", 0) != 0;
      w.met_budget = w.neutral;
      co_return w;
    }
    w.error = primary.error;
    if (primary.commercial_block) {
      w.neutral = true;  // a billing problem, not the group's latency or cost
      trace_step_stop("stop_and_alert: commercial_limit, provider circuit open; no fallback to another provider");
      co_return w;
    }
    const auto cls = primary.failure;
    const auto action = primary.attempted ? table_->action(cls) : policy::Action::retry_then_fallback;
    w.neutral = primary.attempted && (cls == FailureClass::caller_fix_required ||
                                      cls == FailureClass::context_overflow || cls == FailureClass::content_policy);
    w.met_budget = w.neutral;
    if (action == policy::Action::fail_fast) {
      trace_step_stop("fail_fast: " + std::string(policy::to_string(cls)) + " is not retried or sent elsewhere");
      w.why = std::string(policy::to_string(cls));
      co_return w;
    }
    if (action == policy::Action::stop_and_alert) {
      stop_and_alert(primary);
      w.error = primary.error;
      co_return w;
    }
    // A prompt too long or blocked by a content filter is about the request, not the group's
    // health: another model answering it as a "degraded" answer would sidestep the filter or
    // overflow again. Those classes degrade only when their action says `degrade`.
    w.may_degrade = cls != FailureClass::context_overflow && cls != FailureClass::content_policy;
    w.why = primary.stop_reason.empty() ? std::string(policy::to_string(cls)) : primary.stop_reason;
    if (action == policy::Action::degrade) {
      w.may_degrade = true;
      w.why = std::string(policy::to_string(cls)) + " (action degrade)";
      co_return w;
    }
    const auto fallbacks = routing::fallback_groups(cfg_, call_.model, cls);
    std::string last_stop = primary.stop_reason;  // why the walk left the previous group
    for (const auto& group : fallbacks) {
      if (gone_ || cut_) break;
      if (!s_->groups->contains(group)) continue;
      if (trace_.fallbacks_used >= trace_.budget.max_fallbacks) {
        skipped_.emplace_back(group, "fallback_budget_exhausted");
        trace_step_skip(group, "fallback budget exhausted (" + std::to_string(trace_.budget.max_fallbacks) + ")");
        w.why = "fallback budget exhausted";
        break;
      }
      if (!time_for_an_attempt()) {
        skipped_.emplace_back(group, "deadline");
        trace_step_skip(group, "deadline: " + std::to_string(std::max<long long>(0, time_left().count())) + " ms left");
        w.why = "deadline";
        w.met_budget = false;
        break;
      }
      // A target the key may not call is skipped like one it cannot pay for.
      if (cfg_.general_settings.enforce_fallback_model_access && !auth::may_call(principal(), group, cfg_)) {
        skipped_.emplace_back(group, "model_access_denied");
        trace_step_skip(group, "model_access_denied");
        continue;
      }
      TraceStep step;
      step.kind = TraceStep::Kind::fallback;
      step.group = group;
      step.reason = std::string(policy::to_string(cls)) + (last_stop.empty() ? "" : "; " + last_stop);
      trace_.steps.push_back(std::move(step));
      GroupResult r = co_await try_group(group, true);
      if (r.ok || gone_) {
        finish(r.ok, r.ok ? std::nullopt : std::optional<int>(499));
        w.answered = true;
        w.met_budget = r.ok;  // served within the request's budgets: the group kept its promise
        co_return w;
      }
      if (!r.attempted && r.refusal) {
        skipped_.emplace_back(group, r.refusal->reason);
        trace_step_skip(group, r.refusal->reason);
        if (r.refusal->reason.rfind("max_request_cost", 0) == 0) w.met_budget = false;
      }
      if (r.attempted) {
        const auto fa = s_->policies->for_group(group).classes.action(r.failure);
        if (fa == policy::Action::stop_and_alert) {
          stop_and_alert(r);
          w.error = r.error;  // the client is told why the walk stopped here
          w.may_degrade = false;
          co_return w;
        }
        if (fa == policy::Action::fail_fast) {  // the fallback says the request itself is wrong
          w.may_degrade = false;
          break;
        }
      }
      if (!r.stop_reason.empty()) w.why = r.stop_reason;
      last_stop = r.stop_reason;
    }
    if (gone_) {
      finish(false, 499);
      w.answered = true;
      co_return w;
    }
    if (!time_for_an_attempt()) w.met_budget = false;
    co_return w;
  }

  /// A group whose deployments are blocked because their provider answered a commercial limit
  /// (the provider circuit is open for that reason): the request stops as the limit itself
  /// would have (stop_and_alert), so that while the limit lasts a second provider does not
  /// silently take over every request. nullopt when the group is blocked for another reason.
  std::optional<core::Error> commercial_block(const std::string& group) const {
    const auto* members = s_->groups->find(group);
    if (!members || table_->action(FailureClass::commercial_limit) != policy::Action::stop_and_alert) return std::nullopt;
    for (const auto& c : s_->circuits->snapshot()) {
      if (c.scope != "provider" || c.state != policy::CircuitState::open || c.reason != "commercial_limit") continue;
      for (auto i : *members) {
        if (cfg_.model_list[i].provider_prefix != c.id) continue;
        auto e = core::Error::gateway(
            429, "insufficient_quota",
            "Stopped by fallback policy: provider '" + c.id + "' of model group '" + group +
                "' answered a commercial limit (billing or quota) and its circuit is open for another " +
                std::to_string((c.retry_in_ms + 999) / 1000) +
                " s; the request is not sent to another provider (a second provider would hide a billing or "
                "quota problem). See GET /tollgate/alerts.",
            "commercial_limit");
        e.headers.emplace_back("x-tollgate-policy", "stop_and_alert; class=commercial_limit");
        return e;
      }
    }
    return std::nullopt;
  }

  /// Commercial limit (or any class configured stop_and_alert): no retry, no fallback that would
  /// hide a billing problem, an operator alert, and the client told why.
  void stop_and_alert(GroupResult& r) {
    const std::string cls(policy::to_string(r.failure));
    std::string where = call_.model;
    std::string provider;
    if (last_dep_) {
      const auto& d = cfg_.model_list[*last_dep_];
      provider = d.provider_prefix;
      where = d.model_name + " (" + d.id + ", provider " + d.provider_prefix + ")";
    }
    const std::string upstream = r.error ? r.error->message : std::string();
    alert(cls, provider.empty() ? where : provider,
          "request " + call_.call_id + ": " + where + " answered " + cls + (upstream.empty() ? "" : ": " + upstream));
    trace_step_stop("stop_and_alert: " + cls + " from " + where + "; no retry, no fallback to another provider");
    if (r.error) {
      core::Error& e = *r.error;
      e.message = "Stopped by fallback policy: " + where + " answered " + cls +
                  "; the request was not retried or sent to another provider (a second provider would hide a "
                  "billing or quota problem) and an alert was raised. Upstream said: " +
                  (upstream.empty() ? std::string("(no message)") : upstream);
      e.upstream_body.clear();  // our own message, in the client's format
      e.headers.emplace_back("x-tollgate-policy", "stop_and_alert; class=" + cls);
    }
  }

  void alert(const std::string& kind, const std::string& subject, const std::string& message) {
    if (s_->alerts) s_->alerts->raise(kind, subject, message);
    else spdlog::error("ALERT {} {}: {}", kind, subject, message);
  }

  /// Sends the final error of a request that nothing could serve.
  net::awaitable<void> fail(std::optional<core::Error> error, int) {
    core::Error err = error ? *error
                            : core::Error::gateway(503, "api_error",
                                                   "no deployment of model group '" + call_.model + "' is available",
                                                   "no_deployments_available");
    trace_.outcome = "failed";
    auto headers = common_headers(std::nullopt);
    for (const auto& h : err.headers) headers.push_back(h);
    co_await sink_.send_error(err, headers);
    finish(false, err.status);
  }

  void on_client_gone() {
    gone_ = true;
    if (exchange_) exchange_->cancel();
    if (token_) token_->cancel();
    if (timer_) timer_->cancel();
  }

  /// The gateway's drain ran out with this request running: no new attempt starts and the one
  /// in flight is cancelled. Its reservation settles by its evidence like any other (sent and
  /// not answered in full: unknown, the reservation); the client gets shutdown_error().
  void on_shutdown() {
    cut_ = true;
    if (exchange_) exchange_->cancel();
    if (token_) token_->cancel();
    if (timer_) timer_->cancel();
  }

  void trace_step_skip(const std::string& group, const std::string& reason) {
    TraceStep s;
    s.kind = TraceStep::Kind::skip;
    s.group = group;
    s.reason = reason;
    trace_.steps.push_back(std::move(s));
  }
  void trace_step_stop(const std::string& reason) {
    TraceStep s;
    s.kind = TraceStep::Kind::stop;
    s.reason = reason;
    trace_.steps.push_back(std::move(s));
  }

  /// Sets the decision on the last attempt step (what the loop does after it).
  void decide(const std::string& decision) {
    for (auto it = trace_.steps.rbegin(); it != trace_.steps.rend(); ++it)
      if (it->kind == TraceStep::Kind::attempt) {
        if (it->decision.empty()) it->decision = decision;
        return;
      }
  }

  /// Tries `group`'s deployments (retries within the request's retry budget). `is_fallback`:
  /// admitted as a fallback target (enforce_fallback_budget); `counts_as_fallback`: spends the
  /// fallback budget (a degradation target does not).
  net::awaitable<GroupResult> try_group(std::string group, bool is_fallback, bool counts_as_fallback = true) {
    GroupResult out;
    std::vector<std::size_t> tried, refused, denied;
    std::optional<milliseconds> hint;
    const auto& gpol = s_->policies->for_group(group);
    table_ = &gpol.classes;
    bool counted_fallback = false;
    for (int n = 0;; ) {
      if (gone_ || cut_) break;
      if (n > 0 && trace_.retries_used >= trace_.budget.max_retries) {
        out.stop_reason = "retry budget exhausted (" + std::to_string(trace_.budget.max_retries) + ")";
        decide("fallback");
        break;
      }
      auto dep = s_->router->select(group, tried, core::uniform01());
      if (!dep || std::find(refused.begin(), refused.end(), *dep) != refused.end() ||
          std::find(denied.begin(), denied.end(), *dep) != denied.end())
        break;
      const bool same_again = std::find(tried.begin(), tried.end(), *dep) != tried.end();
      if (n > 0) {
        // A Retry-After longer than the time left: no point waiting, go to the fallback now.
        // (The next attempt needs min_time_left_ms after the wait.) This holds for the group's
        // other deployments too: a provider's rate limit is usually its account's, shared by
        // the group's deployments, so the request goes to its fallback at once.
        if (hint && *hint + trace_.budget.min_time_left >= time_left()) {
          out.stop_reason = "retry-after " + std::to_string(hint->count()) + " ms exceeds the " +
                            std::to_string(std::max<long long>(0, time_left().count())) + " ms left";
          decide("fallback");
          break;
        }
        // A fresh deployment needs no wait; the same one waits out its backoff / Retry-After.
        routing::BackoffPolicy bp;
        bp.minimum = cfg_.router_settings.retry_after;
        milliseconds delay = same_again ? routing::backoff_delay(bp, n, hint, core::uniform01()) : bp.minimum;
        if (s_->clock->now() + delay + trace_.budget.min_time_left >= deadline_) {
          out.stop_reason = "deadline: no time for the backoff of " + std::to_string(delay.count()) + " ms";
          decide("fallback");
          break;
        }
        if (delay.count() > 0) {
          co_await sleep(delay);
          if (gone_ || cut_) break;
        }
      }
      if (!time_for_an_attempt()) {
        out.stop_reason = "deadline: " + std::to_string(std::max<long long>(0, time_left().count())) + " ms left";
        out.deadline_hit = true;
        decide("fallback");
        break;
      }
      // Circuit: an open deployment (or provider) is not tried; half-open lets one probe through.
      const auto permit = s_->circuits->acquire(*dep);
      if (permit == policy::Permit::denied) {
        denied.push_back(*dep);
        tried.push_back(*dep);
        out.circuit_blocked = true;
        continue;
      }
      // The attempt's worst case as a function of its output bound, capped by what is left of
      // the request's cost ceiling over all its attempts.
      const auto& price = s_->prices[*dep];
      AttemptPlan plan;
      const bool priced = price.status == budget::PriceStatus::priced;
      if (priced)
        plan = plan_attempt(price, input_bound(*dep), call_.body, call_.output,
                            OutputBoundSettings::from(cfg_.tollgate_settings), searches_every_request(*dep) ? 1 : 0);
      if (trace_.budget.max_request_cost < budget::kMaxNanos) {
        const budget::Nanos left = trace_.budget.max_request_cost > trace_.reserved_total
                                       ? trace_.budget.max_request_cost - trace_.reserved_total
                                       : 0;
        const bool unbounded = price.status == budget::PriceStatus::unpriced;
        if (unbounded || (priced && !plan.cap_at(left))) {
          s_->circuits->release(*dep, permit);
          refused.push_back(*dep);
          tried.push_back(*dep);
          out.refusal = Refusal{core::Error::gateway(429, "budget_exceeded",
                                                     "max_request_cost: this request's attempts may reserve at most $" +
                                                         budget::format_dollars(trace_.budget.max_request_cost) +
                                                         "; $" + budget::format_dollars(trace_.reserved_total) +
                                                         " is reserved and the next attempt needs " +
                                                         (unbounded ? std::string("an unknown amount (unpriced model)")
                                                                    : "at least $" + budget::format_dollars(plan.range.min)),
                                                     "max_request_cost"),
                                "max_request_cost"};
          continue;
        }
      }
      // Admission right before the send: the reservation is never held across a wait.
      Held held(*s_->ledger);
      if (auto refusal = co_await admit_target(group, *dep, is_fallback, held, plan)) {
        s_->circuits->release(*dep, permit);
        refused.push_back(*dep);
        tried.push_back(*dep);
        out.refusal = std::move(refusal);
        continue;
      }
      if (gone_ || cut_ || !time_for_an_attempt()) {
        s_->circuits->release(*dep, permit);
        settle_held(held, *dep, budget::SettleKind::no_usage, 0);  // admitted but never sent
        break;
      }
      if (n > 0) ++trace_.retries_used;
      if (is_fallback && counts_as_fallback && !counted_fallback) {
        ++trace_.fallbacks_used;
        counted_fallback = true;
      }
      reserved_now_ = held.reservation.empty() ? held.worst : held.reservation.amount();
      trace_.reserved_total = budget::saturating_add(trace_.reserved_total, reserved_now_);
      out.attempted = true;
      ++n;
      permit_ = permit;
      permit_dep_ = *dep;
      bound_ = AttemptBound{held.output_tokens, held.output_reduced, held.reduced_by};
      AttemptResult r = co_await attempt(group, *dep);
      const budget::Nanos before = cost_;
      settle(held, *dep, r);
      if (!trace_.steps.empty() && trace_.steps.back().kind == TraceStep::Kind::attempt)
        trace_.steps.back().charged = cost_ - before;
      if (r.ok) {
        out.ok = true;
        served_dep_ = *dep;
        decide("served");
        co_return out;
      }
      out.failure = r.failure;
      out.error = std::move(r.error);
      hint = r.retry_after;
      tried.push_back(*dep);
      const auto action = gpol.classes.action(r.failure);
      if (action == policy::Action::next_deployment) {
        const auto& d = cfg_.model_list[*dep];
        s_->circuits->open_deployment(*dep, std::string(policy::to_string(r.failure)));
        alert(std::string(policy::to_string(r.failure)), d.id,
              "deployment " + d.id + " of " + d.model_name + " answered " + std::to_string(r.status) +
                  ": its own credentials or configuration are wrong; its circuit is open");
      }
      const bool walks_on = action == policy::Action::retry_then_fallback || action == policy::Action::retry_with_circuit ||
                            action == policy::Action::next_deployment;
      if (!walks_on) {
        decide(action == policy::Action::fallback ? "fallback"
               : action == policy::Action::degrade ? "degrade"
                                                   : "stop");
        break;
      }
      decide(action == policy::Action::next_deployment ? "next_deployment" : "retry");
    }
    if (!out.attempted && !out.error && !out.refusal && out.deadline_hit) {
      // Nothing was tried because the request's deadline left no time for an attempt.
      out.failure = FailureClass::retryable_capacity;
      out.error = core::Error::gateway(
          504, "timeout",
          "request deadline reached before an attempt could start: " +
              std::to_string(std::max<long long>(0, time_left().count())) + " ms left, an attempt needs " +
              std::to_string(trace_.budget.min_time_left.count()) + " ms (x-tollgate-deadline-ms / deadline_ms)",
          "deadline_exceeded");
    }
    if (!out.attempted && !out.error && !out.refusal) {
      // The router does not offer deployments whose circuit is open: say so when that is why.
      if (const auto* members = s_->groups->find(group))
        for (auto i : *members)
          if (!s_->circuits->available(i)) out.circuit_blocked = true;
      if (out.circuit_blocked) {
        if (auto stop = commercial_block(group)) {
          out.failure = FailureClass::commercial_limit;
          out.error = std::move(*stop);
          out.commercial_block = true;
          trace_step_skip(group, "provider circuit open: commercial_limit");
          co_return out;
        }
      }
      out.failure = FailureClass::retryable_capacity;
      const std::string why = out.circuit_blocked ? "every deployment's circuit is open"
                                                  : "every deployment is cooling down or at its rpm/tpm limit";
      auto err = core::Error::gateway(429, "rate_limit_exceeded",
                                      "no deployment of model group '" + group + "' is available: " + why,
                                      "no_deployments_available");
      out.error = err;
      if (out.circuit_blocked) {
        std::string which = "deployment circuit open";
        if (const auto* members = s_->groups->find(group))
          for (auto i : *members)
            if (s_->circuits->provider_state(cfg_.model_list[i].provider_prefix) == policy::CircuitState::open) {
              which = "provider circuit open (" + cfg_.model_list[i].provider_prefix + ")";
              break;
            }
        trace_step_skip(group, which);
        if (out.stop_reason.empty()) out.stop_reason = which;
      }
      if (out.stop_reason.empty()) out.stop_reason = "no deployment available";
    }
    // A retry that was decided but could not start (deadline, budget, nothing left to select)
    // means the walk moves on.
    for (auto it = trace_.steps.rbegin(); it != trace_.steps.rend(); ++it)
      if (it->kind == TraceStep::Kind::attempt) {
        if ((it->decision == "retry" || it->decision == "next_deployment") && !out.ok && it->group == group &&
            &*it == &trace_.steps.back())
          it->decision = "fallback";
        break;
      }
    co_return out;
  }

  /// The request's body with the caller's own output limits (attempts write their bounds into
  /// `call_.body`): what a deferred job replays and what the stale cache is keyed by.
  json::object caller_body() const {
    json::object b = call_.body;
    b["model"] = call_.model;  // the adapters write the upstream model in place
    for (const char* k : {"max_tokens", "max_completion_tokens"}) {
      b.erase(k);
      if (const auto* v = call_.caller_output_fields.if_contains(k)) b[k] = *v;
    }
    return b;
  }

  /// The cache key of this request for the stale_cache mode.
  std::string cache_key() const {
    json::object b = caller_body();
    b.erase("stream");
    b.erase("stream_options");
    const auto& p = principal();
    const std::string caller = p.key ? "key:" + p.key->token_hash : p.is_master ? "master" : "anonymous";
    return policy::StaleCache::key_for(caller, call_.model, json::serialize(b));
  }

  /// Runs the group's degradation mode (issue 4 §5). `why` says what led here; `error` is the
  /// error the client gets when the mode cannot answer either.
  net::awaitable<void> degrade(const config::DegradationConfig& dc, std::string why, std::optional<core::Error> error) {
    const std::string mode(config::to_string(dc.mode));
    const bool needs_upstream =
        dc.mode == config::DegradationMode::equivalent || dc.mode == config::DegradationMode::reduced;
    if (needs_upstream) {
      std::string impossible;
      if (!s_->groups->contains(dc.model)) impossible = "model group '" + dc.model + "' unknown";
      else if (!time_for_an_attempt()) impossible = "no time left";
      else if (cfg_.general_settings.enforce_fallback_model_access && !auth::may_call(principal(), dc.model, cfg_))
        impossible = "the key may not call '" + dc.model + "'";
      if (!impossible.empty()) {
        if (impossible.starts_with("the key")) skipped_.emplace_back(dc.model, "model_access_denied");
        trace_step_stop("degradation " + mode + " not possible: " + impossible);
        co_await fail(std::move(error), 0);
        co_return;
      }
    }
    TraceStep st;
    st.kind = TraceStep::Kind::degrade;
    st.group = dc.model;
    st.reason = mode + " (" + why + ")";
    trace_.steps.push_back(std::move(st));
    // The last attempt's "leave the group" is, in fact, this degradation.
    for (auto it = trace_.steps.rbegin(); it != trace_.steps.rend(); ++it)
      if (it->kind == TraceStep::Kind::attempt) {
        if (it->decision == "fallback") it->decision = "degrade";
        break;
      }
    switch (dc.mode) {
      case config::DegradationMode::none: break;
      case config::DegradationMode::equivalent:
      case config::DegradationMode::reduced: {
        if (dc.mode == config::DegradationMode::reduced && dc.max_tokens) cap_output_tokens(*dc.max_tokens);
        degradation_ = mode;
        caveat_ = dc.caveat;
        GroupResult r = co_await try_group(dc.model, true, false);
        if (r.ok || gone_) {
          trace_.degradation = r.ok ? mode : std::string();
          finish(r.ok, r.ok ? std::nullopt : std::optional<int>(499));
          co_return;
        }
        degradation_.clear();
        if (!r.attempted && r.refusal) trace_step_skip(dc.model, r.refusal->reason);
        break;
      }
      case config::DegradationMode::stale_cache: {
        const auto max_age = dc.max_age.value_or(milliseconds(3'600'000));
        auto hit = s_->stale_cache->get(cache_key(), max_age, s_->clock->now());
        if (!hit) {
          trace_step_stop("stale_cache: no answer to an identical request in the last " +
                          std::to_string(max_age.count()) + " ms");
          break;
        }
        auto parsed = parse_completion(hit->body);
        if (!parsed) break;
        degradation_ = mode;
        cache_age_ = hit->age;
        trace_.degradation = mode;
        co_await send_cached(*parsed, std::move(hit->body));
        finish(true, std::nullopt);
        co_return;
      }
      case config::DegradationMode::deferred: {
        if (!s_->jobs) {
          trace_step_stop("deferred: no job store is configured");
          break;
        }
        store::JobRecord job;
        job.model_group = call_.model;
        job.call_type = call_.call_type;
        if (principal().key) job.api_key = principal().key->token_hash;
        job.request_body = json::serialize(deferred_body());
        job.status = "queued";
        auto stored = co_await s_->jobs->defer(std::move(job), deadline_);
        if (!stored && stored.error().why == DeferRefused::Why::queue_full) {
          // The key's queue is full: answered as fail_fast, naming why it was not deferred.
          trace_step_stop("deferred: not queued: " + stored.error().message);
          trace_.degradation = "fail_fast";
          degradation_ = "fail_fast";
          auto err = core::Error::gateway(
              503, "api_error",
              "model group '" + call_.model + "' is degraded by policy (fallback_policy degradation mode deferred): " +
                  why + "; the request was not deferred: " + stored.error().message,
              "deferred_queue_full");
          co_await fail(err, 0);
          co_return;
        }
        if (!stored) {
          trace_step_stop("deferred: the job could not be stored: " + stored.error().message);
          break;
        }
        degradation_ = mode;
        trace_.degradation = mode;
        trace_.outcome = "deferred";
        auto headers = common_headers(std::nullopt);
        headers.emplace_back("location", "/v1/tollgate/jobs/" + stored->id);
        auto body = job_json(*stored, why);
        co_await sink_.send_json(202, body, headers);
        finish(true, std::nullopt);
        co_return;
      }
      case config::DegradationMode::fail_fast: {
        trace_.degradation = mode;
        degradation_ = mode;
        auto err = core::Error::gateway(
            503, "api_error",
            "model group '" + call_.model + "' is degraded by policy (fallback_policy degradation mode fail_fast): " +
                why + (error ? "; last upstream error: " + error->message : std::string()),
            "degraded_fail_fast");
        co_await fail(err, 0);
        co_return;
      }
    }
    co_await fail(std::move(error), 0);
  }

  /// The body a deferred job replays: the request without its stream flags, the request's tags
  /// kept as `metadata.tags` (binding erased the top-level `tags`), and the effective budgets as
  /// `tollgate_request_budget` (tightening only, so replaying them cannot loosen anything; the
  /// runner removes the field before the call).
  json::object deferred_body() const {
    json::object b = caller_body();
    b.erase("stream");
    b.erase("stream_options");
    const auto& p = principal();
    if (!p.tags.empty()) {
      json::array tags;
      for (const auto& t : p.tags) tags.emplace_back(t);
      auto& md = b["metadata"];
      if (!md.is_object()) md = json::object();
      md.as_object()["tags"] = std::move(tags);
    }
    const auto& bud = trace_.budget;
    json::object rb;
    rb["max_retries"] = bud.max_retries;
    rb["max_fallbacks"] = bud.max_fallbacks;
    rb["deadline_ms"] = bud.deadline.count();
    if (bud.max_request_cost < budget::kMaxNanos) rb["max_request_cost"] = budget::format_dollars(bud.max_request_cost);
    b["tollgate_request_budget"] = std::move(rb);
    return b;
  }

  /// The reduced mode's output cap: the caller's limit for every later attempt (admission then
  /// plans and writes the bound from it; one field, as OpenAI refuses a request that sets both).
  void cap_output_tokens(std::int64_t cap) {
    if (call_.output.max_tokens && *call_.output.max_tokens <= cap) return;
    call_.output.max_tokens = cap;
    const char* k = call_.caller_output_fields.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    call_.caller_output_fields.erase("max_tokens");
    call_.caller_output_fields.erase("max_completion_tokens");
    call_.caller_output_fields[k] = cap;
  }

  static std::optional<json::object> parse_completion(const std::string& text) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (ec || !v.is_object()) return std::nullopt;
    return std::move(v.as_object());
  }

  /// Answers from the stale cache, as JSON or as an event stream.
  net::awaitable<void> send_cached(const json::object& completion, std::string raw) {
    auto headers = common_headers(std::nullopt);
    if (!call_.stream) {
      if (!co_await sink_.send_completion(completion, std::move(raw), headers)) gone_ = true;
      co_return;
    }
    if (!co_await sink_.begin_stream(headers)) {
      gone_ = true;
      co_return;
    }
    const auto chunks = completion_to_chunks(completion, call_.include_usage);
    Usage u;
    if (auto* uv = completion.if_contains("usage")) u = providers::usage_from_openai(*uv);
    if (!co_await sink_.stream_chunks(chunks, u)) {
      gone_ = true;
      co_return;
    }
    const std::optional<core::Error> no_error;
    co_await sink_.end_stream(no_error);
  }

  /// A reservation held for one attempt; settled as `unknown` if the attempt is abandoned.
  struct Held {
    explicit Held(budget::BudgetLedger& l) : ledger(l) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      // Abandoned (an exception, a destroyed frame): unknown, durably and on the request's cost,
      // like any other settlement.
      if (reservation.empty()) return;
      if (run != nullptr) {
        try {
          run->settle_held(*this, dep, budget::SettleKind::unknown, 0);
        } catch (...) {  // the durable record could not be queued: recovery settles it at restart
        }
      }
      if (!reservation.empty())
        ledger.settle(std::move(reservation), 0, budget::SettleKind::unknown, std::chrono::system_clock::now());
    }
    budget::BudgetLedger& ledger;
    Run* run = nullptr;       ///< set once admitted: its settle_held records the settlement
    std::size_t dep = 0;      ///< the deployment admitted
    budget::Reservation reservation;
    std::vector<budget::ScopeLimit> limits;  ///< the scopes reserved against (their windows at settle time are recorded)
    /// The output bound per choice the attempt is sent with (priced models), and whether a
    /// budget lowered it (and which).
    std::optional<std::int64_t> output_tokens;
    bool output_reduced = false;
    std::string reduced_by;
    budget::Nanos worst = 0;  ///< the attempt's worst case at that bound (priced models)
  };

  /// The release of a reserve record written before its grant: appended (behind the record in the
  /// writer's queue) when nothing was granted under its id, also when the frame ends before the
  /// answer (a request cut at shutdown). `store` null: a grant took the record over.
  struct EarlyRelease {
    EarlyRelease(store::Store* s, store::LedgerRecord r) : store(s), release(std::move(r)) {}
    EarlyRelease(const EarlyRelease&) = delete;
    EarlyRelease& operator=(const EarlyRelease&) = delete;
    ~EarlyRelease() {
      if (store == nullptr) return;
      try {
        store->append_ledger(std::move(release), [](bool) {});
      } catch (...) {  // not queued: the record stays open; a rebuild would charge it as recovered
      }
    }
    store::Store* store;
    store::LedgerRecord release;
  };

  const auth::Principal& principal() const { return *principal_; }

  /// The request's input bound for deployment `dep`, computed once per (model, context limit) per
  /// request: a retry or a fallback to a model of the same family reuses it.
  std::int64_t input_bound(std::size_t dep) {
    const auto& d = cfg_.model_list[dep];
    const auto& price = s_->prices[dep];
    const std::string& model = d.base_model.empty() ? d.upstream_model : d.base_model;
    const auto limit = price.price.max_input_tokens.value_or(0);
    for (const auto& b : input_bounds_)
      if (b.model == model && b.limit == limit) return b.tokens;
    input_bounds_.push_back({model, limit, input_bound_for(price, call_.body, model)});
    return input_bounds_.back().tokens;
  }

  /// The caller's scopes for `group`, computed once per group per request (retries reuse them).
  std::vector<budget::ScopeLimit> scopes_for(const std::string& group) {
    for (const auto& [g, scopes] : scopes_by_group_)
      if (g == group) return scopes;
    scopes_by_group_.emplace_back(group, applicable_scopes(principal(), group, cfg_));
    return scopes_by_group_.back().second;
  }

  /// Admits `dep` for this caller within `plan`: nullopt when admitted (the worst case is
  /// reserved in `held`, durably when a store is configured, with the output bound it pays
  /// for), else the refusal.
  net::awaitable<std::optional<Refusal>> admit_target(std::string group, std::size_t dep, bool is_fallback, Held& held,
                                                      AttemptPlan plan) {
    const bool guarded = !is_fallback || cfg_.general_settings.enforce_fallback_budget;
    auto scopes = scopes_for(group);
    // enforce_fallback_budget: false restores the unguarded fallback: spend is still recorded
    // against every scope, but no limit refuses it.
    if (!guarded)
      for (auto& sc : scopes) sc.max_budget = budget::kMaxNanos;
    const auto now = std::chrono::system_clock::now();
    AdmissionDecision adm;
    // A shared ledger that names the id first: the reserve record (at the worst case asked for)
    // is written while the ledger decides, one wait instead of two. Nothing is sent before both
    // answered; a record nothing was granted under is closed by a release after it.
    std::optional<std::uint64_t> early_id;
    std::optional<PendingAppend> early;
    std::optional<EarlyRelease> early_release;
    if (auto unreserved = admit_unreserved(cfg_, s_->prices[dep], scopes)) {
      adm = std::move(*unreserved);
    } else {
      if (s_->store) early_id = s_->ledger->take_reservation_id(scopes, plan.range, now);
      if (early_id) {
        early = start_append(*s_->store, ledger_record(store::LedgerKind::reserve, *early_id, scopes, plan.range.max, 0, {}, dep, now),
                             co_await net::this_coro::executor, deadline_);
        early_release.emplace(s_->store.get(), ledger_record(store::LedgerKind::settle, *early_id, scopes, plan.range.max,
                                                             0, budget::SettleKind::no_usage, dep, now));
      }
      auto reserved = co_await reserve_on(*s_->ledger, scopes, plan.range, now, deadline_, early_id);
      adm = admission_decision(std::move(reserved), s_->prices[dep], scopes, plan);
    }
    const bool granted_early = early_id && adm.outcome == AdmissionDecision::Outcome::admitted &&
                               !adm.reservation.empty() && adm.reservation.id() == *early_id;
    if (granted_early) early_release->store = nullptr;  // the grant's own settle closes it
    early_release.reset();
    if (adm.outcome != AdmissionDecision::Outcome::admitted) co_return Refusal{std::move(adm.error), std::move(adm.reason)};
    if (adm.price_status == budget::PriceStatus::unpriced) unpriced_ = true;
    held.reservation = std::move(adm.reservation);
    held.run = this;
    held.dep = dep;
    held.output_tokens = adm.output_tokens;
    held.output_reduced = adm.output_reduced;
    held.reduced_by = std::move(adm.reduced_by);
    held.worst = adm.worst;
    if (held.reservation.empty() || !s_->store) co_return std::nullopt;
    held.limits = std::move(scopes);
    const bool durable =
        granted_early ? co_await await_append(std::move(*early), deadline_)
                      : co_await append_durably(*s_->store,
                                                ledger_record(store::LedgerKind::reserve, held.reservation.id(), held.limits,
                                                              held.reservation.amount(), 0, {}, dep, now),
                                                deadline_);
    if (durable) co_return std::nullopt;
    // Fail closed: a paid attempt that cannot be recorded is not sent. Its settle record follows
    // the reserve in the writer's queue, in case the reserve commits after all.
    settle_held(held, dep, budget::SettleKind::no_usage, 0);
    co_return Refusal{core::Error::gateway(503, "api_error",
                                           "the spend ledger cannot be written; paid requests are refused until it can",
                                           "ledger_unavailable"),
                      "ledger_unavailable"};
  }

  /// Settles the attempt's reservation by its evidence (budget/settlement.hpp) and records the
  /// cost on the request: the failure class decides what happens next, never what is charged.
  void settle(Held& held, std::size_t dep, const AttemptResult& r) {
    const auto& price = s_->prices[dep];
    const budget::SettleKind kind = budget::settle_kind_for(r.evidence);
    budget::Nanos actual = 0;
    if (kind == budget::SettleKind::actual) {
      auto charge = attempt_charge(price, r.usage);
      actual = charge.total;
      if (r.ok) charge_ = std::move(charge);
    }
    if (kind == budget::SettleKind::unknown) unknown_ = true;
    if (r.ok) usage_ = r.usage;
    if (held.reservation.empty()) {
      // No scope to reserve against (master key, open gateway): the spend is still recorded, at
      // the worst case when the outcome is unknown, as a reservation would have been.
      cost_ += kind == budget::SettleKind::unknown ? held.worst : actual;
      return;
    }
    settle_held(held, dep, kind, actual);
  }

  /// Settles `held` in memory and appends the durable settle record (not awaited: the reserve
  /// record is already durable, and recovery settles conservatively if this one is lost). The
  /// settle record names the windows that contain `now`: the ones the in-memory ledger charges.
  void settle_held(Held& held, std::size_t dep, budget::SettleKind kind, budget::Nanos actual) {
    if (held.reservation.empty()) return;
    const budget::Nanos reserved = held.reservation.amount();
    const budget::Nanos charged = kind == budget::SettleKind::unknown ? reserved : kind == budget::SettleKind::actual ? actual : 0;
    cost_ += charged;
    const auto id = held.reservation.id();
    const auto now = std::chrono::system_clock::now();
    s_->ledger->settle(std::move(held.reservation), actual, kind, now);
    if (!s_->store) return;
    s_->store->append_ledger(ledger_record(store::LedgerKind::settle, id, held.limits, reserved, charged, kind, dep, now),
                             [](bool) {});
  }

  /// A durable ledger record of this request's attempt on `dep`: a reserve of `amount`, or a
  /// settle (`settle_kind`) releasing `amount` and charging `charged`, against `limits` in the
  /// windows that contain `now`.
  store::LedgerRecord ledger_record(store::LedgerKind kind, std::uint64_t id, const std::vector<budget::ScopeLimit>& limits,
                                    budget::Nanos amount, budget::Nanos charged,
                                    std::optional<budget::SettleKind> settle_kind, std::size_t dep,
                                    budget::SystemTime now) const {
    store::LedgerRecord rec;
    rec.reservation_id = id;
    rec.kind = kind;
    rec.scopes = ledger_scopes(limits, s_->ledger->reset_timezone(), now);
    rec.amount_nanos = amount;
    rec.actual_nanos = charged;
    if (settle_kind) rec.settle_kind = std::string(budget::to_string(*settle_kind));
    rec.request_id = call_.call_id;
    rec.model = cfg_.model_list[dep].id;
    rec.at_ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
    return rec;
  }

  net::awaitable<void> sleep(milliseconds d) {
    if (s_->virtual_time) {  // simulation: time is virtual
      s_->virtual_time->advance(d);
      co_return;
    }
    auto exec = co_await net::this_coro::executor;
    net::steady_timer t(exec, d);
    timer_ = &t;
    co_await t.async_wait(use_nothrow);
    timer_ = nullptr;
  }

  core::SteadyTime attempt_deadline(const config::Deployment& d) {
    auto dl = deadline_;
    const auto& t = call_.stream && d.stream_timeout ? d.stream_timeout : d.timeout;
    if (t) dl = std::min(dl, s_->clock->now() + *t);
    attempt_cut_by_deadline_ = dl == deadline_;
    return dl;
  }

  /// Fills in the failure of an attempt that got an HTTP error status.
  AttemptResult upstream_failure(const config::Deployment& d, const providers::Provider& p, http::UpstreamExchange& ex,
                                 std::string body) {
    AttemptResult r;
    const int status = ex.status();
    r.status = status;
    policy::Outcome oc = p.parse_error(status, body);
    r.failure = table_->classify(oc);
    r.error_body = oc.error_body;
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

  /// Keeps a full (not degraded) answer for the stale_cache mode of the requested group.
  void remember_answer(const json::object& completion, const std::string& raw) {
    if (!degradation_.empty()) return;
    if (s_->policies->for_group(call_.model).degradation.mode != config::DegradationMode::stale_cache) return;
    s_->stale_cache->put(cache_key(), raw.empty() ? json::serialize(completion) : raw, s_->clock->now());
  }

  /// The class of a transport-level event through the group's table.
  FailureClass classify_event(policy::TransportEvent ev, int status) const {
    policy::Outcome oc;
    oc.transport = ev;
    oc.status = status;
    return table_->classify(oc);
  }

  /// Records a finished attempt: headers, trace, routing statistics and the circuits.
  void record(const std::string& group, std::size_t dep, int status, std::optional<FailureClass> failure,
              core::SteadyTime started, long long tokens, budget::Evidence evidence) {
    const auto now = s_->clock->now();
    const auto dur = ms_between(started, now);
    upstream_ms_ += dur;
    attempts_.push_back(AttemptRecord{group, dep, status, failure, dur});
    const auto& d = cfg_.model_list[dep];
    TraceStep st;
    st.kind = TraceStep::Kind::attempt;
    st.group = group;
    st.deployment = d.id;
    st.provider = d.provider_prefix;
    st.circuit = permit_ == policy::Permit::probe ? "half_open" : "closed";
    st.status = status;
    if (failure) {
      st.failure_class = std::string(policy::to_string(*failure));
      st.action = std::string(policy::to_string(table_->action(*failure)));
    }
    st.duration_ms = dur;
    st.reserved = reserved_now_;
    st.evidence = std::string(budget::to_string(evidence));
    st.output_bound = bound_.tokens.value_or(0);
    if (bound_.reduced) st.output_capped_by = bound_.by;
    trace_.steps.push_back(std::move(st));
    s_->router->on_attempt_end(dep, failure.has_value(), milliseconds(dur), tokens);
    // Only the deployment's own failures count against its circuit: not the caller's errors,
    // and not an attempt the client abandoned by hanging up.
    // Nor a timeout the caller's own tightened deadline caused: one caller's short deadline
    // must not open a circuit every caller shares.
    const bool cut_by_caller = failure && *failure == FailureClass::unknown_outcome && attempt_cut_by_deadline_ &&
                               caller_tightened_deadline_;
    if (!failure) {
      s_->circuits->on_success(dep);
    } else if (!gone_ && !cut_ && !cut_by_caller && policy::counts_against_deployment(*failure)) {
      s_->circuits->on_failure(dep, *failure);
    } else {
      s_->circuits->release(dep, permit_);
    }
    permit_ = policy::Permit::closed;
    permit_dep_.reset();
    if (s_->metrics) count_attempt(group, d, failure);
  }

  /// OpenAI's search models (gpt-4o-search-preview, …) search the web on every Chat Completions
  /// request and bill the call, but their usage does not count it: a model of an OpenAI-style
  /// deployment with a per-call web-search price is charged one call when none is reported.
  void count_search_calls(std::size_t dep, providers::Usage& u) const {
    if (!u.reported) return;
    if (u.web_search_calls == 0 && searches_every_request(dep)) u.web_search_calls = 1;
    // A response that names no tier was served in the one the request asked for (if any).
    const auto& asked = call_.output.service_tier;
    if (u.service_tier.empty() && (asked == "priority" || asked == "flex")) u.service_tier = asked;
  }

  /// OpenAI's search models (a name with "search", e.g. gpt-4o-search-preview) on an OpenAI-style
  /// deployment with a per-call search price: every request is one billed search.
  bool searches_every_request(std::size_t dep) const {
    const auto& d = cfg_.model_list[dep];
    const auto& price = s_->prices[dep].price;
    if (d.provider == config::ProviderKind::anthropic || !price.web_search_call) return false;
    return price.matched_key.find("search") != std::string::npos ||
           d.upstream_model.find("search") != std::string::npos;
  }

  /// The output bound of the attempt about to be sent: written into the request in the
  /// deployment's field (the reservation is the contract with the upstream), or the caller's own
  /// fields restored when nothing was reserved against it (free or unpriced models).
  void write_output_bound(const config::Deployment& d, const providers::Provider& provider) {
    for (const char* k : {"max_tokens", "max_completion_tokens"}) {
      call_.body.erase(k);
      if (const auto* v = call_.caller_output_fields.if_contains(k)) call_.body[k] = *v;
    }
    if (!bound_.tokens) return;
    providers::OutputField caller = call_.caller_output_fields.contains("max_completion_tokens")
                                        ? providers::OutputField::max_completion_tokens
                                    : call_.caller_output_fields.contains("max_tokens") ? providers::OutputField::max_tokens
                                                                                         : providers::OutputField::none;
    provider.set_output_limit(d, call_.body, *bound_.tokens, caller);
  }

  net::awaitable<AttemptResult> attempt(std::string group, std::size_t dep) {
    const auto& d = cfg_.model_list[dep];
    const auto& provider = providers::provider_for(d.provider);
    AttemptResult r;
    const auto started = s_->clock->now();
    s_->router->on_attempt_start(dep);
    last_dep_ = dep;

    write_output_bound(d, provider);
    auto req = provider.build_request(d, call_.body, call_.stream);
    if (!req) {
      r.failure = FailureClass::deployment_misconfigured;
      r.error = malformed_error(d, "is misconfigured: " + req.error());
      record(group, dep, 0, r.failure, started, 0, r.evidence);
      co_return r;
    }
    const auto dl = attempt_deadline(d);
    http::CancelToken token;
    token_ = &token;
    auto started_ex = co_await s_->transport->start(*req, dl, &token);
    token_ = nullptr;
    if (!started_ex) {
      policy::Outcome oc;
      oc.transport = transport_event(started_ex.error());
      r.failure = table_->classify(oc);
      r.error = transport_error(started_ex.error(), d);
      r.evidence = started_ex.error().sent ? budget::Evidence::no_answer : budget::Evidence::not_sent;
      record(group, dep, 0, r.failure, started, 0, r.evidence);
      co_return r;
    }
    std::unique_ptr<http::UpstreamExchange> ex = std::move(*started_ex);
    exchange_ = ex.get();
    if (gone_) ex->cancel();
    const auto limit = static_cast<std::size_t>(cfg_.tollgate_settings.max_upstream_body_bytes);
    const int status = ex->status();

    if (status < 200 || status >= 300) {
      auto body = co_await ex->read_all(limit, dl);
      r = upstream_failure(d, provider, *ex, body ? std::move(*body) : std::string());
      // A documented error answer (the API's JSON error body) is unbilled; anything else after
      // the send (an HTML page from a proxy, a body cut off) may have been processed.
      // A timeout status (408, 504) says the answer was not waited for, not that nothing was
      // generated: its outcome is unknown whatever its body.
      const bool timed_out = status == 408 || status == 504;
      r.evidence = body && r.error_body && !timed_out ? budget::Evidence::error_response : budget::Evidence::unreadable;
      ex->finish();
      exchange_ = nullptr;
      record(group, dep, status, r.failure, started, 0, r.evidence);
      co_return r;
    }

    if (!call_.stream) {
      auto body = co_await ex->read_all(limit, dl);
      if (!body) {
        policy::Outcome oc;
        oc.transport = transport_event(body.error());
        r.failure = table_->classify(oc);
        r.error = body.error().kind == http::TransportError::Kind::body_too_large
                      ? malformed_error(d, "answered a body larger than " + std::to_string(limit) + " bytes")
                      : transport_error(body.error(), d);
        r.evidence = budget::Evidence::unreadable;  // answered 2xx: billed, but its usage cannot be read
        exchange_ = nullptr;
        record(group, dep, status, r.failure, started, 0, r.evidence);
        co_return r;
      }
      ex->finish();
      exchange_ = nullptr;
      auto parsed = provider.parse_response(d, *body);
      if (!parsed) {
        r.failure = classify_event(policy::TransportEvent::malformed_body, status);
        r.error = malformed_error(d, "answered an invalid response: " + parsed.error());
        r.evidence = budget::Evidence::unreadable;
        record(group, dep, status, r.failure, started, 0, r.evidence);
        co_return r;
      }
      auto* completion = &parsed->completion;
      Usage u = parsed->usage;
      count_search_calls(dep, u);
      // Served: the answer is the client's. Its usage is the bill when it can be read; when it
      // cannot (absent, malformed), the reservation is.
      r.evidence = u.reported ? budget::Evidence::answered : budget::Evidence::unreadable;
      record(group, dep, status, std::nullopt, started, u.prompt_tokens + u.billed_output_tokens(), r.evidence);
      r.usage = u;
      usage_ = u;
      cost_preview_ = u.reported ? attempt_charge(s_->prices[dep], u).total : reserved_now_;
      auto headers = common_headers(dep);
      std::string raw = provider.relays_openai_body() ? std::move(*body) : std::string();
      remember_answer(*completion, raw);
      first_byte_ms_ = wall_ms();
      if (!co_await sink_.send_completion(*completion, std::move(raw), headers)) gone_ = true;
      r.ok = true;
      co_return r;
    }

    co_return co_await relay_stream(group, dep, std::move(ex), started, dl);
  }

  using Usage = providers::Usage;

  /// Streams an upstream 2xx to the client. Until the first chunk is ready nothing is sent, so
  /// a stream that breaks before its first event still counts as a failed attempt.
  net::awaitable<AttemptResult> relay_stream(std::string group, std::size_t dep, std::unique_ptr<http::UpstreamExchange> ex,
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
      r.failure = classify_event(policy::TransportEvent::malformed_body, ex->status());
      r.error = malformed_error(d, "answered a stream request without an event stream (content-type '" +
                                       std::string(ct) + "')");
      exchange_ = nullptr;
      r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
          record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
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
          r.failure = table_->classify(oc);
          r.error = transport_error(got.error(), d);
          exchange_ = nullptr;
          r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
          record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
          co_return r;
        }
        if (cut_) {
          stream_error = shutdown_error();
        } else {
          stream_error = transport_error(got.error(), d);
          stream_error->message = "upstream stream broke: " + got.error().message;
        }
        break;
      }
      const bool at_end = *got == 0;
      if (!parser.feed(raw, [&](const http::SseEvent& ev) { decoder->on_event(ev, chunks); })) {
        // An event line beyond the parser's limit: garbage, not an LLM stream.
        if (!committed) {
          r.failure = classify_event(policy::TransportEvent::malformed_body, ex->status());
          r.error = malformed_error(d, "sent a malformed event stream");
          ex->cancel();
          exchange_ = nullptr;
          r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
          record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
          co_return r;
        }
        stream_error = malformed_error(d, "sent a malformed event stream");
        break;
      }
      if (auto err = decoder->error(); err && !committed) {
        r.failure = table_->classify(*err);
        r.error.status = err->status;
        r.error.type = err->error_type.empty() ? "api_error" : err->error_type;
        r.error.code = err->error_code;
        r.error.message = err->message;
        r.error.origin = core::ErrorOrigin::upstream;
        exchange_ = nullptr;
        r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
          record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
        co_return r;
      }
      if (!chunks.empty() && !committed) {
        auto headers = common_headers(dep);
        if (!co_await sink_.begin_stream(headers)) {
          gone_ = true;  // the client cannot be written to: stop, do not retry elsewhere
          break;
        }
        committed = true;
        first_byte_ms_ = wall_ms();
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
            r.failure = classify_event(policy::TransportEvent::malformed_body, ex->status());
            r.error = malformed_error(d, "ended its stream before sending any event");
            exchange_ = nullptr;
            r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
          record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
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
    auto u = decoder->usage();
    count_search_calls(dep, u);
    r.usage = u;
    // The usage is the bill only when the stream ran to its end; an interrupted stream is
    // settled conservatively (its partial usage undercounts what the provider bills).
    const bool complete = decoder->finished() && !stream_error && !gone_ && decoder->usage_final();
    r.evidence = complete ? budget::Evidence::answered : gone_ ? budget::Evidence::no_answer : budget::Evidence::unreadable;
    if (!committed) {
      // Nothing reached the client: the client left, or the stream failed before its first event.
      r.ok = false;
      r.failure = classify_event(policy::TransportEvent::reset_after_send, ex->status());
      r.error = malformed_error(d, "stream failed before its first event");
      r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
          record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
      co_return r;
    }
    r.ok = true;  // once committed, the attempt is the answer, complete or not
    record(group, dep, ex->status(), std::nullopt, started, u.prompt_tokens + u.billed_output_tokens(), r.evidence);
    if (stream_error) stream_status_ = decoder->error() ? "failure" : "unknown_outcome";
    else if (!complete) stream_status_ = "unknown_outcome";
    if (!gone_) co_await sink_.end_stream(stream_error);
    co_return r;
  }

  /// Writes the request's spend log row (off the request path: the store's writer batches it).
  void finish(bool ok, std::optional<int> status) {
    finished_ = true;
    outcome_.served = ok;
    outcome_.status = ok ? 200 : status.value_or(0);
    if (!ok && !attempts_.empty() && attempts_.back().failure) {
      const auto c = *attempts_.back().failure;
      outcome_.retryable = c == FailureClass::retryable_capacity || c == FailureClass::transient_provider_error ||
                           c == FailureClass::unknown_outcome;
    } else if (!ok && attempts_.empty()) {
      outcome_.retryable = status.value_or(0) == 429 || status.value_or(0) >= 500;
    }
    trace_.elapsed_ms = ms_between(call_.start, s_->clock->now());
    trace_.charged_total = cost_;
    if (trace_.outcome.empty()) trace_.outcome = ok ? (trace_.degradation.empty() ? "served" : "degraded") : gone_ ? "client_gone" : "failed";
    if (ok && served_dep_) trace_.served_by = cfg_.model_list[*served_dep_].model_name + "/" + cfg_.model_list[*served_dep_].id;
    if (ok && trace_.degradation == "stale_cache") trace_.served_by = "stale_cache";
    if (s_->metrics) count_request(ok, outcome_.status);
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
    const auto served = ok ? served_dep_ : std::nullopt;
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
    row.status = !ok ? "failure" : stream_status_.empty() ? "success" : stream_status_;
    if (first_byte_ms_ != 0) row.completion_start_ms = first_byte_ms_;
    if (ok && !charge_.items.empty()) row.line_items = json::serialize(line_items_json(charge_));
    if (status) row.error_status = std::to_string(*status);
    row.degradation = trace_.degradation;
    row.decision = json::serialize(trace_.to_json());
    s_->store->append_spend_log(std::move(row));
  }

  Headers common_headers(std::optional<std::size_t> dep) const {
    Headers h;
    const auto now = s_->clock->now();
    const long long total = ms_between(call_.start, now);
    h.emplace_back("x-litellm-call-id", call_.call_id);
    h.emplace_back("x-litellm-attempted-retries", std::to_string(trace_.retries_used));
    h.emplace_back("x-litellm-max-retries", std::to_string(trace_.budget.max_retries));
    h.emplace_back("x-litellm-attempted-fallbacks", std::to_string(trace_.fallbacks_used));
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
    // The serving attempt was sent with a smaller output bound than asked: what the budget paid for.
    if (dep && bound_.reduced && bound_.tokens) h.emplace_back("x-tollgate-output-capped", std::to_string(*bound_.tokens));
    {
      // A stream's serving attempt is not recorded yet when its headers go out.
      std::optional<TraceStep> serving;
      const auto& steps = trace_.steps;
      if (dep && (steps.empty() || steps.back().kind != TraceStep::Kind::attempt ||
                  !steps.back().failure_class.empty() || steps.back().deployment != cfg_.model_list[*dep].id)) {
        serving.emplace();
        serving->kind = TraceStep::Kind::attempt;
        serving->group = cfg_.model_list[*dep].model_name;
        serving->deployment = cfg_.model_list[*dep].id;
      }
      // The sink makes header values safe.
      h.emplace_back("x-tollgate-decision", trace_.compact(total, serving ? &*serving : nullptr));
    }
    if (!degradation_.empty()) {
      std::string label = degradation_;
      if (degradation_ == "stale_cache") {
        label += "; age=" + std::to_string(cache_age_.count() / 1000) + "s";
        h.emplace_back("age", std::to_string(cache_age_.count() / 1000));
      }
      h.emplace_back("x-tollgate-degradation", label);
      if (!caveat_.empty()) h.emplace_back("x-tollgate-degradation-caveat", caveat_);
    }
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

  void count_request(bool ok, int status) {
    const auto& m = s_->loop_metrics;
    m.requests->inc({call_.model, trace_.outcome == "deferred" ? "deferred" : ok ? "served" : std::to_string(status),
                     trace_.degradation.empty() ? "none" : trace_.degradation});
    m.duration->observe({call_.model}, static_cast<double>(trace_.elapsed_ms));
    const auto limit = trace_.budget.deadline + cfg_.fallback_policy.deadline_slack;
    if (trace_.elapsed_ms > limit.count()) m.overruns->inc({call_.model});
    if (trace_.retries_used > 0) m.retries->add({call_.model}, trace_.retries_used);
    if (trace_.fallbacks_used > 0) m.fallbacks->add({call_.model}, trace_.fallbacks_used);
  }

  void count_attempt(const std::string& group, const config::Deployment& d, std::optional<FailureClass> failure) {
    s_->loop_metrics.attempts->inc(
        {group, d.id, d.provider_prefix, failure ? std::string(policy::to_string(*failure)) : std::string("ok")});
  }

  std::shared_ptr<Services> s_;
  const config::Config& cfg_;
  ChatCall call_;
  ResponseSink& sink_;
  core::SteadyTime deadline_{};
  bool gone_ = false;
  bool cut_ = false;  ///< the gateway's drain ran out: end now (on_shutdown)
  http::UpstreamExchange* exchange_ = nullptr;
  http::CancelToken* token_ = nullptr;
  net::steady_timer* timer_ = nullptr;
  RunOutcome outcome_;
  DecisionTrace trace_;
  const policy::ClassTable* table_ = nullptr;   ///< classification table of the group being tried
  policy::Permit permit_ = policy::Permit::closed;  ///< circuit permit of the attempt in flight
  std::optional<std::size_t> permit_dep_;       ///< its deployment, until its outcome is reported
  policy::Permit feature_permit_ = policy::Permit::closed;  ///< the group's feature-circuit permit
  bool caller_tightened_deadline_ = false;      ///< the key or request set a shorter deadline than the group's
  bool attempt_cut_by_deadline_ = false;        ///< the attempt in flight ends at the request deadline
  bool finished_ = false;                       ///< finish() ran (spend-log row written)
  budget::Nanos reserved_now_ = 0;              ///< reservation of the attempt in flight
  std::optional<std::size_t> served_dep_;
  std::string degradation_;                     ///< label of a degraded answer ("reduced", ...)
  std::string caveat_;
  milliseconds cache_age_{0};
  long long upstream_ms_ = 0;
  std::optional<std::size_t> last_dep_;
  std::vector<AttemptRecord> attempts_;
  std::shared_ptr<const auth::Principal> principal_;
  std::vector<policy::RateSubject> rate_subjects_;
  std::vector<std::pair<std::string, std::vector<budget::ScopeLimit>>> scopes_by_group_;
  struct InputBound {
    std::string model;
    std::int64_t limit = 0;
    std::int64_t tokens = 0;
  };
  std::vector<InputBound> input_bounds_;  ///< per (model, context limit): input_bound()
  bool rate_admitted_ = false;
  std::vector<std::pair<std::string, std::string>> skipped_;  ///< fallback targets skipped: (group, reason)
  budget::Nanos cost_ = 0;          ///< what this request's attempts cost (settled)
  budget::Nanos cost_preview_ = 0;  ///< the served attempt's cost, known before it is settled
  budget::Charge charge_;           ///< the served attempt's bill, line by line
  /// The output bound of the attempt in flight (what its reservation pays for).
  struct AttemptBound {
    std::optional<std::int64_t> tokens;  ///< per choice; nullopt = sent as the caller asked (free or unpriced)
    bool reduced = false;                ///< a budget lowered it below what was asked
    std::string by;                      ///< the scope that did
  } bound_;
  std::int64_t first_byte_ms_ = 0;             ///< when the answer's first byte went to the client (Unix ms)
  std::string stream_status_;                  ///< a served stream that did not end cleanly: "failure" | "unknown_outcome"
  bool unpriced_ = false;
  bool unknown_ = false;
  providers::Usage usage_;
};

}  // namespace

net::awaitable<RunOutcome> run_chat(std::shared_ptr<Services> services, ChatCall call, ResponseSink& sink) {
  Run run(std::move(services), std::move(call), sink);
  co_return co_await run.go();
}

}  // namespace tollgate::pipeline
