// The attempt loop's walk (pipeline/attempt_loop.hpp): rate limits, then the primary group and
// each fallback group in turn, each group's deployments with their retries, and the degradation
// mode when nothing served the request. One attempt is attempt.hpp, its stream relay
// stream_relay.hpp, admission and settlement accounting.hpp, the modes degrade.hpp; what a run
// records is rendered by the observers (response_headers.hpp, spend_log_row.hpp, run_metrics.hpp).

#include "pipeline/attempt_loop.hpp"

#include "config/wildcard.hpp"

#include <algorithm>
#include <map>

#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include "auth/access.hpp"
#include "budget/money.hpp"
#include "budget/operation_bounds.hpp"
#include "core/await_answer.hpp"
#include "core/ids.hpp"
#include "pipeline/accounting.hpp"
#include "pipeline/attempt.hpp"
#include "pipeline/cache_step.hpp"
#include "pipeline/degrade.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/run_finish.hpp"
#include "pipeline/run_state.hpp"
#include "pipeline/upstream_errors.hpp"
#include "providers/native.hpp"
#include "providers/prefill.hpp"
#include "routing/backoff.hpp"

namespace tollgate::pipeline {
namespace {

/// One run of the loop: owns its state and its units.
class Run {
 public:
  Run(std::shared_ptr<Services> s, ChatCall call, ResponseSink& sink, std::unique_ptr<ResponseSink> owned = nullptr)
      : owned_sink_(std::move(owned)),
        st_(std::move(s), std::move(call), sink),
        acct_(st_),
        attempter_(st_),
        degrader_(st_, [this](std::string group, bool is_fallback, bool counts_as_fallback, GroupResult& out) {
          return try_group(std::move(group), is_fallback, counts_as_fallback, out);
        }) {
    st_.sink.on_client_gone([this] { on_client_gone(); });
    st_.sink.on_shutdown([this] { on_shutdown(); });
  }
  ~Run() {
    st_.sink.on_client_gone(nullptr);
    st_.sink.on_shutdown(nullptr);
    if (rate_admitted_) st_.svc->limiter->release(rate_subjects_, st_.usage.prompt_tokens + st_.usage.completion_tokens);
    // An exception (or an abandoned frame) between a permit and its verdict must not leave a
    // half-open circuit waiting for a probe that never reports.
    if (st_.permit_dep) st_.svc->circuits->release(*st_.permit_dep, st_.permit);
    st_.svc->circuits->release_feature(st_.metric_group, st_.feature_permit);
    if (!st_.finished && started_) {  // a run never started (its awaitable dropped) records nothing
      try {
        finish_run(st_, false, 500);
      } catch (...) {
      }
    }
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  /// The caller's rate-limited subjects: its key, user and team.
  std::vector<policy::RateSubject> rate_subjects() const {
    std::vector<policy::RateSubject> out;
    const auto& p = st_.principal();
    if (p.key && (p.key->rpm_limit || p.key->tpm_limit || p.key->max_parallel_requests))
      out.push_back({"key:" + p.key->token_hash, p.key->rpm_limit, p.key->tpm_limit, p.key->max_parallel_requests});
    if (p.user && (p.user->rpm_limit || p.user->tpm_limit))
      out.push_back({"user:" + p.user->user_id, p.user->rpm_limit, p.user->tpm_limit, std::nullopt});
    if (p.team && (p.team->rpm_limit || p.team->tpm_limit))
      out.push_back({"team:" + p.team->team_id, p.team->rpm_limit, p.team->tpm_limit, std::nullopt});
    return out;
  }

  // go() stays small: its frame lives as long as the request (a stream's whole length), and a
  // coroutine keeps every local of every branch in it; the branches are coroutines of their own.
  net::awaitable<RunOutcome> go() {
    started_ = true;
    set_budget();
    if (!co_await admit_rate_limits()) co_return st_.outcome;
    // The response cache: a hit is answered here, after the rate limits and before any budget.
    if (!st_.call.pin && co_await answer_from_cache(st_)) co_return st_.outcome;
    const auto& gp = st_.svc->policies->for_group(st_.call.model);
    // A group that is itself the degradation target (defaults.degradation naming it) does not
    // degrade to itself.
    const bool self_target = (gp.degradation.mode == config::DegradationMode::equivalent ||
                              gp.degradation.mode == config::DegradationMode::reduced) &&
                             gp.degradation.model == st_.call.model;
    const bool can_degrade =
        st_.call.allow_degradation && !st_.call.pin && gp.degradation.mode != config::DegradationMode::none &&
        !self_target;
    if (can_degrade && co_await degraded_by_feature_circuit(gp)) co_return st_.outcome;
    Walk walk;
    co_await walk_targets(walk);
    co_await end_walk(walk, can_degrade, gp);
    co_return st_.outcome;
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
  };

  /// Effective budgets: the group's configured ones, tightened by the key, then by the request.
  void set_budget() {
    const auto& gp = st_.svc->policies->for_group(st_.call.model);
    std::vector<std::string> ignored;
    auto b = policy::tighten(gp.budget, st_.call.key_budget, &ignored);
    std::vector<std::string> ignored_req;
    b = policy::tighten(b, st_.call.request_budget, &ignored_req);
    for (auto& i : ignored) {
      if (i.starts_with("x-tollgate-")) i = "key metadata tollgate_request_budget." + i.substr(11);
      st_.trace.ignored.push_back(i);
    }
    for (auto& i : ignored_req) st_.trace.ignored.push_back(i);
    for (const auto& i : st_.trace.ignored)
      spdlog::info("request {}: budget override ignored (only tightening is allowed): {}", st_.call.call_id, i);
    if (st_.call.pin) {  // one attempt on one deployment, bounded by its own timeout
      b.max_retries = 0;
      b.max_fallbacks = 0;
      b.deadline = st_.call.pin->timeout;
      b.min_time_left = std::min(b.min_time_left, b.deadline);
    }
    st_.trace.budget = b;
    st_.deadline = st_.call.start + b.deadline;
    st_.caller_tightened_deadline = b.deadline < gp.budget.deadline;
    auto tightened = [](const std::optional<milliseconds>& now, const std::optional<milliseconds>& group) {
      return now && (!group || *now < *group);
    };
    st_.caller_tightened_first_token = tightened(b.first_token_timeout, gp.budget.first_token_timeout);
    st_.caller_tightened_idle = tightened(b.stream_idle_timeout, gp.budget.stream_idle_timeout);
  }

  /// The rate limits of the key, user and team (waited for within the deadline); false when the
  /// request was refused (its 429 is sent and the run finished).
  net::awaitable<bool> admit_rate_limits() {
    rate_subjects_ = rate_subjects();
    if (rate_subjects_.empty()) co_return true;
    auto& limiter = *st_.svc->limiter;
    std::function<void(std::function<void(std::optional<policy::RateDenial>)>)> start =
        [&limiter, subjects = rate_subjects_](std::function<void(std::optional<policy::RateDenial>)> done) {
          limiter.acquire_async(subjects, std::move(done));
        };
    std::function<void(std::optional<policy::RateDenial>)> late = [&limiter, subjects = rate_subjects_](
                                                                      std::optional<policy::RateDenial> d) {
      if (!d) limiter.release(subjects, 0);  // admitted after the request gave up waiting
    };
    auto answer = co_await core::await_answer<std::optional<policy::RateDenial>>(std::move(start), st_.deadline, std::move(late));
    std::optional<policy::RateDenial> denied =
        answer ? std::move(*answer) : std::optional<policy::RateDenial>(policy::RateDenial{"gateway:rate_limits", "rate_limits_unavailable", std::chrono::milliseconds(1000)});
    if (denied) {
      auto err = core::Error::gateway(429, "rate_limit_exceeded",
                                      "Rate limit exceeded: " + denied->limit + " of " + denied->subject.substr(0, denied->subject.find(':')) +
                                          " reached; retry after " + std::to_string((denied->retry_after.count() + 999) / 1000) + " s",
                                      "rate_limit_exceeded");
      auto headers = response_headers(st_, std::nullopt);
      headers.emplace_back("retry-after", std::to_string((denied->retry_after.count() + 999) / 1000));
      st_.trace.outcome = "refused";
      co_await st_.sink.send_error(err, headers);
      finish_run(st_, false, 429);
      co_return false;
    }
    rate_admitted_ = true;
    co_return true;
  }

  /// The group's feature circuit: when it is open the group cannot keep its budgets right now and
  /// its degradation mode answers directly (true: answered).
  net::awaitable<bool> degraded_by_feature_circuit(const policy::GroupPolicy& gp) {
    st_.feature_permit = st_.svc->circuits->acquire_feature(st_.metric_group);
    if (st_.feature_permit != policy::Permit::denied) co_return false;
    st_.feature_permit = policy::Permit::closed;
    st_.step_skip(st_.call.model, "feature circuit open");
    const std::string why = "feature circuit of '" + st_.call.model + "' is open";
    co_await degrader_.degrade(gp.degradation, why, std::nullopt);
    co_return true;
  }

  /// After the walk: the feature circuit hears the outcome, then an unanswered request is
  /// degraded (where its failure allows) or failed.
  net::awaitable<void> end_walk(const Walk& walk, bool can_degrade, const policy::GroupPolicy& gp) {
    // The feature circuit hears only what says something about the group: not the caller's own
    // errors, not a client that left, not a deadline the caller tightened below the group's.
    const bool neutral = walk.neutral || st_.gone || st_.cut || (!walk.met_budget && st_.caller_tightened_deadline);
    if (can_degrade) {
      if (neutral) st_.svc->circuits->release_feature(st_.metric_group, st_.feature_permit);
      else st_.svc->circuits->on_feature_result(st_.metric_group, walk.met_budget, st_.feature_permit);
      st_.feature_permit = policy::Permit::closed;
    }
    if (walk.answered) co_return;
    if (st_.cut) {  // shutting down: no degraded answer, no deferred job; worth running again elsewhere
      st_.step_stop("gateway shutting down: drain time over");
      co_await fail_run(st_, shutdown_error());
      st_.outcome.retryable = true;
      co_return;
    }
    // A client stream that began (a cut nothing continued) takes no second answer.
    if (can_degrade && walk.may_degrade && !(st_.client && st_.client->open())) {
      co_await degrader_.degrade(gp.degradation, walk.why, walk.error);
      co_return;
    }
    co_await fail_run(st_, walk.error);
  }

  /// What the walk over the fallbacks keeps of the primary group's failure.
  struct FallbackWalk {
    FailureClass cls = FailureClass::transient_provider_error;  ///< the primary's failure class
    bool primary_constraint_blocked = false;
    std::vector<std::string> fallbacks;  ///< the fallback groups for that class, in order
    std::size_t next = 0;                ///< the next of them to consider
    std::string last_stop;               ///< why the walk left the previous group
    std::string current;                 ///< the fallback group being tried
  };

  /// What the walk does after a group.
  enum class Step { done, refuse, next, leave };

  // As small as try_group's frame (it lives as long as the stream): one group's result at a
  // time, the decisions in plain functions.
  /// The walk over the primary group and its fallbacks; how it ended is written to `w`.
  net::awaitable<void> walk_targets(Walk& w) {
    FallbackWalk f;
    std::string group = st_.call.model;
    for (bool primary = true;; primary = false) {
      GroupResult r;
      co_await try_group(group, !primary, true, r);
      const Step step = primary ? after_primary(w, f, r) : after_fallback(w, f, r);
      if (step == Step::refuse) {
        co_await send_refusal(r.refusal->error);
        co_return;
      }
      if (step == Step::done) co_return;
      if (step == Step::leave) break;
      auto named = next_fallback(w, f);
      if (!named) break;
      group = std::move(*named);
    }
    if (st_.gone) {
      finish_run(st_, false, 499);
      w.answered = true;
      co_return;
    }
    if (!st_.time_for_an_attempt()) w.met_budget = false;
  }

  /// The caller cannot pay for (or we cannot meter) the model it asked for: its refusal, no fallback.
  net::awaitable<void> send_refusal(const core::Error& error) {
    auto headers = response_headers(st_, std::nullopt);
    co_await st_.sink.send_error(error, headers);
    finish_run(st_, false, error.status);
  }

  /// After the primary group: served, refused, stopped by its failure's action, or on to the
  /// fallbacks for its class (`f`).
  Step after_primary(Walk& w, FallbackWalk& f, GroupResult& primary) {
    if (primary.ok || st_.gone) {
      finish_run(st_, primary.ok, primary.ok ? std::nullopt : std::optional<int>(499));
      w.answered = true;
      return Step::done;
    }
    if (st_.cut) return Step::done;  // go() answers the shutdown
    if (primary.constraint_blocked)  // walked on: a fallback within the boundary may serve it
      st_.step_skip(st_.call.model, primary.refusal->reason + ": " + primary.refusal->error.message);
    if (!primary.attempted && primary.refusal && !primary.circuit_blocked && !primary.constraint_blocked) {
      // The caller cannot pay for (or we cannot meter) the model it asked for: refuse, no fallback.
      st_.trace.outcome = "refused";
      st_.step_stop(primary.refusal->reason);
      w.answered = true;
      w.neutral = primary.refusal->reason.rfind("max_request_cost", 0) != 0;
      w.met_budget = w.neutral;
      return Step::refuse;
    }
    w.error = primary.error;
    if (primary.commercial_block) {
      w.neutral = true;  // a billing problem, not the group's latency or cost
      st_.step_stop("stop_and_alert: commercial_limit, provider circuit open; no fallback to another provider");
      return Step::done;
    }
    const auto cls = primary.failure;
    const auto action = primary.attempted ? st_.table->action(cls) : policy::Action::retry_then_fallback;
    w.neutral = primary.attempted && (cls == FailureClass::caller_fix_required ||
                                      cls == FailureClass::context_overflow || cls == FailureClass::content_policy);
    w.met_budget = w.neutral;
    if (action == policy::Action::fail_fast) {
      st_.step_stop("fail_fast: " + std::string(policy::to_string(cls)) + " is not retried or sent elsewhere");
      w.why = std::string(policy::to_string(cls));
      return Step::done;
    }
    if (action == policy::Action::stop_and_alert) {
      stop_and_alert(primary);
      w.error = primary.error;
      return Step::done;
    }
    // A prompt too long or blocked by a content filter is about the request, not the group's
    // health: another model answering it as a "degraded" answer would sidestep the filter or
    // overflow again. Those classes degrade only when their action says `degrade`.
    w.may_degrade = cls != FailureClass::context_overflow && cls != FailureClass::content_policy;
    if (primary.constraint_blocked) {
      // The caller's own boundary, not the group's health: no degradation, the circuit hears nothing.
      w.neutral = true;
      w.met_budget = true;
      w.may_degrade = false;
    }
    w.why = primary.stop_reason.empty() ? std::string(policy::to_string(cls)) : primary.stop_reason;
    if (action == policy::Action::degrade) {
      w.may_degrade = true;
      w.why = std::string(policy::to_string(cls)) + " (action degrade)";
      return Step::done;
    }
    if (st_.call.pin) {
      st_.step_stop("pinned to deployment " + st_.deployment(st_.call.pin->deployment).id + ": no fallback");
      return Step::done;
    }
    f.cls = cls;
    f.primary_constraint_blocked = primary.constraint_blocked;
    f.fallbacks = routing::fallback_groups(st_.cfg, st_.call.model, cls);
    f.last_stop = primary.stop_reason;
    return Step::next;
  }

  /// The next fallback group to try (its trace step pushed), skipping those the key may not
  /// call; nullopt when the walk stops (the client left, the fallback budget, the deadline) or
  /// none is left.
  std::optional<std::string> next_fallback(Walk& w, FallbackWalk& f) {
    while (f.next < f.fallbacks.size()) {
      const std::string& named = f.fallbacks[f.next++];
      if (st_.gone || st_.cut) return std::nullopt;
      std::string group = st_.svc->groups->resolve_alias(named);  // access and budgets see the group
      if (!st_.svc->groups->contains(group)) continue;
      if (st_.trace.fallbacks_used >= st_.trace.budget.max_fallbacks) {
        st_.skipped.emplace_back(group, "fallback_budget_exhausted");
        st_.step_skip(group, "fallback budget exhausted (" + std::to_string(st_.trace.budget.max_fallbacks) + ")");
        w.why = "fallback budget exhausted";
        return std::nullopt;
      }
      if (!st_.time_for_an_attempt()) {
        st_.skipped.emplace_back(group, "deadline");
        st_.step_skip(group, "deadline: " + std::to_string(std::max<long long>(0, st_.time_left().count())) + " ms left");
        w.why = "deadline";
        w.met_budget = false;
        return std::nullopt;
      }
      // A target the key may not call is skipped like one it cannot pay for.
      if (st_.cfg.general_settings.enforce_fallback_model_access && !auth::may_call(st_.principal(), group, st_.cfg)) {
        st_.skipped.emplace_back(group, "model_access_denied");
        st_.step_skip(group, "model_access_denied");
        continue;
      }
      TraceStep step;
      step.kind = TraceStep::Kind::fallback;
      step.group = group;
      step.reason = std::string(policy::to_string(f.cls)) + (f.last_stop.empty() ? "" : "; " + f.last_stop);
      st_.trace.steps.push_back(std::move(step));
      f.current = group;
      return group;
    }
    return std::nullopt;
  }

  /// After a fallback group (`f.current`): served, stopped (stop_and_alert, fail_fast), or on
  /// to the next.
  Step after_fallback(Walk& w, FallbackWalk& f, GroupResult& r) {
    const std::string& group = f.current;
    if (r.ok || st_.gone) {
      finish_run(st_, r.ok, r.ok ? std::nullopt : std::optional<int>(499));
      w.answered = true;
      w.met_budget = r.ok;  // served within the request's budgets: the group kept its promise
      return Step::done;
    }
    if (!r.attempted && r.refusal) {
      st_.skipped.emplace_back(group, r.refusal->reason);
      st_.step_skip(group, r.constraint_blocked ? r.refusal->reason + ": " + r.refusal->error.message : r.refusal->reason);
      if (r.refusal->reason.rfind("max_request_cost", 0) == 0) w.met_budget = false;
    }
    if (r.attempted) {
      const auto fa = st_.svc->policies->for_group(group).classes.action(r.failure);
      if (fa == policy::Action::stop_and_alert) {
        stop_and_alert(r);
        w.error = r.error;  // the client is told why the walk stopped here
        w.may_degrade = false;
        return Step::done;
      }
      if (fa == policy::Action::fail_fast) {  // the fallback says the request itself is wrong
        w.may_degrade = false;
        return Step::leave;
      }
    }
    // A primary no deployment of which was in the boundary: the client hears what the fallbacks
    // that were tried answered (a 503 may be retried; the boundary's 400 would not be).
    if (f.primary_constraint_blocked && r.attempted && r.error) w.error = r.error;
    if (!r.stop_reason.empty()) w.why = r.stop_reason;
    f.last_stop = r.stop_reason;
    return Step::next;
  }

  /// A group whose deployments are blocked because their provider answered a commercial limit
  /// (the provider circuit is open for that reason): the request stops as the limit itself
  /// would have (stop_and_alert), so that while the limit lasts a second provider does not
  /// silently take over every request. nullopt when the group is blocked for another reason.
  std::optional<core::Error> commercial_block(const std::string& group) const {
    const auto* members = st_.svc->groups->find(group);
    if (!members || st_.table->action(FailureClass::commercial_limit) != policy::Action::stop_and_alert) return std::nullopt;
    for (const auto& c : st_.svc->circuits->snapshot()) {
      if (c.scope != "provider" || c.state != policy::CircuitState::open || c.reason != "commercial_limit") continue;
      for (auto i : *members) {
        if (st_.deployment(i).provider_prefix != c.id) continue;
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
    std::string where = st_.call.model;
    std::string provider;
    if (st_.last_dep) {
      const auto& d = st_.deployment(*st_.last_dep);
      provider = d.provider_prefix;
      where = d.model_name + " (" + d.id + ", provider " + d.provider_prefix + ")";
    }
    const std::string upstream = r.error ? r.error->message : std::string();
    st_.alert(cls, provider.empty() ? where : provider,
          "request " + st_.call.call_id + ": " + where + " answered " + cls + (upstream.empty() ? "" : ": " + upstream));
    st_.step_stop("stop_and_alert: " + cls + " from " + where + "; no retry, no fallback to another provider");
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

  /// One group's walk (try_group): what it keeps between its attempts.
  struct GroupWalk {
    explicit GroupWalk(GroupResult& result) : out(result) {}
    std::string group;
    bool is_fallback = false;        ///< admitted as a fallback target (enforce_fallback_budget)
    bool counts_as_fallback = true;  ///< spends the fallback budget (a degradation target does not)
    bool counted_fallback = false;
    int n = 0;  ///< attempts sent (retries are the ones after the first)
    const policy::GroupPolicy* gpol = nullptr;
    /// The deployments this request may still send to (shrinks when one has had its
    /// litellm_params.max_retries); those tried, refused at admission, and denied by a circuit.
    std::vector<std::size_t> candidates, tried, refused, denied;
    std::map<std::size_t, int> attempts_on;
    std::optional<milliseconds> hint;  ///< the last failure's Retry-After
    GroupResult& out;                  ///< the group's result
  };

  /// The group walk's next attempt, decided between its waits.
  struct NextAttempt {
    enum class Go { stop, skip, unsupported, admit };
    Go go = Go::stop;
    std::size_t dep = 0;
    milliseconds wait{0};  ///< backoff before it
    policy::Permit permit = policy::Permit::closed;
    AttemptPlan plan;
    std::optional<std::int64_t> max_tokens;  ///< the output limit it is sent with (caller's or the deployment's default)
    bool counted_retry = false;
    std::size_t retry_class = 0;  ///< the class of the failure it retries
    bool continuation = false;    ///< it continues the client's cut stream
  };

  /// How an attempt ended the group's walk, or not.
  enum class After { served, again, stop };

  /// Tries `group`'s deployments (retries within the request's retry budget); the group's
  /// result is written to `out`. `is_fallback`: admitted as a fallback target
  /// (enforce_fallback_budget); `counts_as_fallback`: spends the fallback budget (a degradation
  /// target does not).
  // The coroutine keeps only what lives across its waits (the walk, the admission's hold, the
  // attempt's result): GCC keeps every local and temporary of a coroutine in its frame, which
  // lives as long as the stream. The decisions between the waits are plain functions.
  net::awaitable<void> try_group(std::string group, bool is_fallback, bool counts_as_fallback, GroupResult& out) {
    GroupWalk g(out);
    g.group = std::move(group);
    g.is_fallback = is_fallback;
    g.counts_as_fallback = counts_as_fallback;
    if (!open_group(g)) co_return;
    for (;;) {
      NextAttempt next = pick_next(g);
      if (next.go == NextAttempt::Go::stop) break;
      if (next.wait.count() > 0) {
        co_await sleep(next.wait);
        if (st_.gone || st_.cut) break;
      }
      prepare_next(g, next);
      if (next.go == NextAttempt::Go::stop) break;
      if (next.go == NextAttempt::Go::skip) continue;
      // Admission right before the send: the reservation is never held across a wait.
      Accounting::Held held(*st_.svc->ledger);
      if (next.go == NextAttempt::Go::admit) {
        if (auto refusal = co_await acct_.admit_target(g.group, next.dep, g.is_fallback, held, next.plan)) {
          note_refused(g, next, std::move(*refusal));
          continue;
        }
        if (!begin_attempt(g, next, held)) break;
      } else {
        begin_unsupported(next);
      }
      AttemptResult r;
      co_await attempter_.attempt(g.group, next.dep, r);
      const After after = after_attempt(g, next, held, std::move(r));
      if (after == After::served) co_return;
      if (after == After::stop) break;
    }
    close_group(g);
  }

  /// The group's policy and the deployments the request may send to. False when none is left:
  /// `g.out` says why (a routing boundary, an API no deployment serves, no continuation).
  bool open_group(GroupWalk& g) {
    auto& out = g.out;
    g.gpol = &st_.svc->policies->for_group(g.group);
    st_.table = &g.gpol->classes;
    auto& candidates = g.candidates;
    if (const auto* members = st_.svc->groups->find(g.group)) candidates = *members;
    if (st_.call.pin) {
      const auto pinned = st_.call.pin->deployment;
      const bool member = std::find(candidates.begin(), candidates.end(), pinned) != candidates.end();
      candidates.assign(member ? 1 : 0, pinned);
    }
    // The request's data boundaries (region, tags) filter the group first: a target none of whose
    // deployments the caller may use is never sent anything.
    if (!candidates.empty() && !st_.constraints.empty()) {
      auto eligible = routing::eligible_deployments(st_.cfg, candidates, st_.constraints, g.group);
      if (eligible.members.empty()) {
        const bool region = eligible.boundary == "region";
        out.constraint_blocked = true;
        out.error = core::Error::caller(400, "invalid_request_error", eligible.why, "model",
                                        region ? "region_not_allowed" : "no_deployments_with_tag_routing");
        out.refusal = Refusal{*out.error, eligible.boundary + "_constraint"};
        out.stop_reason = eligible.boundary + "_constraint";
        return false;
      }
      candidates = std::move(eligible.members);
    }
    // The call's API: a deployment whose provider (or model_info.mode) cannot serve it is never
    // sent it. None can: the caller's 400, nothing sent.
    if (auto unserved = refuse_unserved(candidates)) {
      out.error = std::move(*unserved);
      out.refusal = Refusal{*out.error, "operation_not_supported"};
      out.stop_reason = "operation_not_supported";
      return false;
    }
    if (st_.client && st_.client->continuing()) {
      // A cut answer is continued only where a prefill is accepted (issue 13 §3).
      std::erase_if(candidates, [&](std::size_t i) { return !continues_on(i); });
      if (candidates.empty()) {
        out.refusal = Refusal{st_.client->cut_error(), "no_assistant_prefill"};
        out.stop_reason = "no deployment of '" + g.group + "' can continue the answer (supports_assistant_prefill)";
        return false;
      }
    }
    return true;
  }

  /// The next deployment and the wait before it (a retry's backoff), or stop: the retry budget,
  /// the retry policy, a Retry-After or backoff longer than the time left, nothing left to select.
  NextAttempt pick_next(GroupWalk& g) {
    NextAttempt next;
    auto& out = g.out;
    if (st_.gone || st_.cut) return next;
    if (g.n > 0 && st_.trace.retries_used >= st_.trace.budget.max_retries) {
      out.stop_reason = "retry budget exhausted (" + std::to_string(st_.trace.budget.max_retries) + ")";
      st_.decide("fallback");
      return next;
    }
    if (g.n > 0) {  // router_settings.retry_policy: retries after failures of this class
      const auto k = static_cast<std::size_t>(out.failure);
      if (const auto lim = st_.cfg.router_settings.retry_policy[k]; lim && st_.retries_by_class[k] >= *lim) {
        out.stop_reason = "retry_policy: at most " + std::to_string(*lim) + " retries after " +
                          std::string(policy::to_string(out.failure));
        st_.decide("fallback");
        return next;
      }
    }
    auto dep = st_.svc->router->select(g.group, g.tried, core::uniform01(), &g.candidates);
    if (!dep || std::find(g.refused.begin(), g.refused.end(), *dep) != g.refused.end() ||
        std::find(g.denied.begin(), g.denied.end(), *dep) != g.denied.end())
      return next;
    const bool same_again = std::find(g.tried.begin(), g.tried.end(), *dep) != g.tried.end();
    st_.bind_deployment(*dep, g.group);  // before admission: a wildcard deployment is priced per name
    if (g.n > 0) {
      // A Retry-After longer than the time left: no point waiting, go to the fallback now.
      // (The next attempt needs min_time_left_ms after the wait.) This holds for the group's
      // other deployments too: a provider's rate limit is usually its account's, shared by
      // the group's deployments, so the request goes to its fallback at once.
      if (g.hint && *g.hint + st_.trace.budget.min_time_left >= st_.time_left()) {
        out.stop_reason = "retry-after " + std::to_string(g.hint->count()) + " ms exceeds the " +
                          std::to_string(std::max<long long>(0, st_.time_left().count())) + " ms left";
        st_.decide("fallback");
        return next;
      }
      // A fresh deployment needs no wait; the same one waits out its backoff / Retry-After.
      routing::BackoffPolicy bp;
      bp.minimum = st_.cfg.router_settings.retry_after;
      const milliseconds delay = same_again ? routing::backoff_delay(bp, g.n, g.hint, core::uniform01()) : bp.minimum;
      if (st_.svc->clock->now() + delay + st_.trace.budget.min_time_left >= st_.deadline) {
        out.stop_reason = "deadline: no time for the backoff of " + std::to_string(delay.count()) + " ms";
        st_.decide("fallback");
        return next;
      }
      next.wait = delay;
    }
    next.dep = *dep;
    next.go = NextAttempt::Go::admit;
    return next;
  }

  /// After the wait: the time left, the deployment's circuit, whether it can be called at all,
  /// its input limit and the request's cost ceiling; the attempt's plan. `next.go` says what is
  /// next: stop, skip it, send it unadmitted (an unsupported provider), or admit it.
  void prepare_next(GroupWalk& g, NextAttempt& next) {
    auto& out = g.out;
    const std::size_t dep = next.dep;
    if (!st_.time_for_an_attempt()) {
      out.stop_reason = "deadline: " + std::to_string(std::max<long long>(0, st_.time_left().count())) + " ms left";
      out.deadline_hit = true;
      st_.decide("fallback");
      next.go = NextAttempt::Go::stop;
      return;
    }
    // Circuit: an open deployment (or provider) is not tried; half-open lets one probe through.
    next.permit = st_.svc->circuits->acquire(dep);
    if (next.permit == policy::Permit::denied) {
      g.denied.push_back(dep);
      g.tried.push_back(dep);
      out.circuit_blocked = true;
      next.go = NextAttempt::Go::skip;
      return;
    }
    // A deployment Tollgate cannot call is sent nothing: no admission, no reservation (it
    // must neither be refused as unpriced nor use up the request's cost ceiling), and its
    // failure sends the walk on to the group's fallbacks.
    if (st_.deployment(dep).provider == config::ProviderKind::unsupported) {
      next.go = NextAttempt::Go::unsupported;
      return;
    }
    // The attempt's worst case as a function of its output bound, capped by what is left of
    // the request's cost ceiling over all its attempts.
    const auto& price = st_.price_of(dep);
    if (auto over = token_input_overflow(dep)) {  // counted exactly: refused before sending
      note_refused(g, next, Refusal{std::move(*over), "context_length_exceeded"});
      next.go = NextAttempt::Go::skip;
      return;
    }
    const bool priced = price.status == budget::PriceStatus::priced;
    // A deployment's default max_tokens bounds a request that sets no limit (and its reservation).
    OutputRequest output = st_.call.output;
    if (!output.max_tokens) output.max_tokens = st_.deployment(dep).default_max_tokens;
    // A continuation writes what the caller's limit leaves after the delivered text.
    if (st_.client && st_.client->continuing() && output.max_tokens)
      output.max_tokens = std::max<std::int64_t>(1, *output.max_tokens - st_.client->delivered_tokens);
    next.max_tokens = output.max_tokens;
    if (priced)
      next.plan = plan_attempt(price, acct_.input_bound(dep), st_.call.body, output,
                               OutputBoundSettings::from(st_.cfg.tollgate_settings), attempter_.searches_every_request(dep) ? 1 : 0);
    if (st_.trace.budget.max_request_cost < budget::kMaxNanos) {
      const budget::Nanos left = st_.trace.budget.max_request_cost > st_.trace.reserved_total
                                     ? st_.trace.budget.max_request_cost - st_.trace.reserved_total
                                     : 0;
      const bool unbounded = price.status == budget::PriceStatus::unpriced;
      if (unbounded || (priced && !next.plan.cap_at(left))) {
        note_refused(g, next,
                     Refusal{core::Error::gateway(429, "budget_exceeded",
                                                  "max_request_cost: this request's attempts may reserve at most $" +
                                                      budget::format_dollars(st_.trace.budget.max_request_cost) + "; $" +
                                                      budget::format_dollars(st_.trace.reserved_total) +
                                                      " is reserved and the next attempt needs " +
                                                      (unbounded ? std::string("an unknown amount (unpriced model)")
                                                                 : "at least $" + budget::format_dollars(next.plan.range.min)),
                                                  "max_request_cost"),
                             "max_request_cost"});
        next.go = NextAttempt::Go::skip;
        return;
      }
    }
    next.go = NextAttempt::Go::admit;
  }

  /// A deployment refused before its send (admission, its input limit, the cost ceiling): its
  /// circuit permit goes back, and the walk goes on without it.
  void note_refused(GroupWalk& g, const NextAttempt& next, Refusal refusal) {
    st_.svc->circuits->release(next.dep, next.permit);
    g.refused.push_back(next.dep);
    g.tried.push_back(next.dep);
    g.out.refusal = std::move(refusal);
  }

  /// Admitted: counts the retry or fallback and records the attempt's reservation and output
  /// bound. False when it is not sent after all (the client left, shutdown, deadline): its hold
  /// settles at 0.
  bool begin_attempt(GroupWalk& g, NextAttempt& next, Accounting::Held& held) {
    if (st_.gone || st_.cut || !st_.time_for_an_attempt()) {
      st_.svc->circuits->release(next.dep, next.permit);
      acct_.settle_held(held, next.dep, budget::SettleKind::no_usage, 0);  // admitted but never sent
      return false;
    }
    next.counted_retry = g.n > 0;
    next.retry_class = static_cast<std::size_t>(g.out.failure);
    if (next.counted_retry) {
      ++st_.trace.retries_used;
      ++st_.retries_by_class[next.retry_class];
    }
    if (g.is_fallback && g.counts_as_fallback && !g.counted_fallback) {
      ++st_.trace.fallbacks_used;
      g.counted_fallback = true;
    }
    st_.reserved_now = held.reservation.empty() ? held.worst : held.reservation.amount();
    st_.trace.reserved_total = budget::saturating_add(st_.trace.reserved_total, st_.reserved_now);
    g.out.attempted = true;
    ++g.n;
    st_.permit = next.permit;
    st_.permit_dep = next.dep;
    st_.bound = AttemptBound{held.output_tokens, held.output_reduced, held.reduced_by};
    next.continuation = st_.client && st_.client->continuing();
    // A free or unpriced continuation is bounded too: by what the caller's limit leaves.
    if (next.continuation && !st_.bound.tokens && next.max_tokens) st_.bound.tokens = next.max_tokens;
    return true;
  }

  /// An unsupported provider's attempt: no reservation, no output bound.
  void begin_unsupported(const NextAttempt& next) {
    st_.reserved_now = 0;
    st_.bound = AttemptBound{};
    st_.permit = next.permit;  // released when the attempt is recorded (it never counts against a circuit)
    st_.permit_dep = next.dep;
  }

  /// Settles the attempt by its evidence and decides: served, the next attempt, or the walk
  /// leaves the group (the failure's action).
  After after_attempt(GroupWalk& g, const NextAttempt& next, Accounting::Held& held, AttemptResult r) {
    auto& out = g.out;
    const std::size_t dep = next.dep;
    if (next.go == NextAttempt::Go::unsupported) {
      out.attempted = true;
      out.failure = r.failure;
      out.error = std::move(r.error);
      g.tried.push_back(dep);
      st_.decide("next_deployment");
      return After::again;
    }
    const budget::Nanos before = st_.cost;
    acct_.settle(held, dep, r);
    if (!st_.trace.steps.empty() && st_.trace.steps.back().kind == TraceStep::Kind::attempt)
      st_.trace.steps.back().charged = st_.cost - before;
    if (r.ok) {
      out.ok = true;
      st_.served_dep = dep;
      st_.decide("served");
      return After::served;
    }
    g.tried.push_back(dep);
    if (next.continuation && r.failure == FailureClass::caller_fix_required) {
      // The caller's request was answered until the cut; what this target refused is the
      // prefill (issue 13 §3): not the caller's error, not this deployment's fault. The next
      // target that accepts one is asked (the walk keeps the cut's class); the client keeps
      // the cut's error if none is left. Nor does it use up a retry: it was never the caller's
      // request that failed.
      if (next.counted_retry) {
        --st_.trace.retries_used;
        --st_.retries_by_class[next.retry_class];
      }
      std::erase(g.candidates, dep);
      out.error = st_.client->cut_error();
      st_.decide("next_deployment");
      return After::again;
    }
    out.failure = r.failure;
    out.error = std::move(r.error);
    g.hint = r.retry_after;
    if (r.cut) {
      // The stream was cut after text reached the client: the next attempts continue it.
      put_prefill();
      std::erase_if(g.candidates, [&](std::size_t i) { return !continues_on(i); });
    }
    if (const auto& mr = st_.deployment(dep).max_retries; mr && ++g.attempts_on[dep] > *mr)
      std::erase(g.candidates, dep);  // its own retries are used up: the group's others, then fallbacks
    else if (r.silent)
      std::erase(g.candidates, dep);  // a silent upstream is not asked again: the group's others, then fallbacks
    const auto action = g.gpol->classes.action(r.failure);
    // A provider Tollgate does not implement was named at load; its deployment never opens a
    // circuit, so that each request routed to it keeps its clear 400 unsupported_provider.
    // Nor does a wildcard deployment: its failure may be the caller's model name.
    if (action == policy::Action::next_deployment &&
        st_.deployment(dep).provider != config::ProviderKind::unsupported &&
        !config::is_wildcard(st_.cfg.model_list[dep].model_name)) {
      const auto& d = st_.deployment(dep);
      st_.svc->circuits->open_deployment(dep, std::string(policy::to_string(r.failure)));
      st_.alert(std::string(policy::to_string(r.failure)), d.id,
                "deployment " + d.id + " of " + d.model_name + " answered " + std::to_string(r.status) +
                    ": its own credentials or configuration are wrong; its circuit is open");
    }
    const bool walks_on = action == policy::Action::retry_then_fallback || action == policy::Action::retry_with_circuit ||
                          action == policy::Action::next_deployment;
    if (!walks_on) {
      st_.decide(action == policy::Action::fallback ? "fallback"
                 : action == policy::Action::degrade ? "degrade"
                                                     : "stop");
      return After::stop;
    }
    st_.decide(action == policy::Action::next_deployment ? "next_deployment" : "retry");
    return After::again;
  }

  /// The group is left unserved: why, when nothing was tried (the deadline, open circuits, a
  /// commercial limit, nothing available); a retry decided but not started becomes "fallback".
  void close_group(GroupWalk& g) {
    auto& out = g.out;
    if (!out.attempted && !out.error && !out.refusal && out.deadline_hit) {
      // Nothing was tried because the request's deadline left no time for an attempt.
      out.failure = FailureClass::retryable_capacity;
      out.error = core::Error::gateway(
          504, "timeout",
          "request deadline reached before an attempt could start: " +
              std::to_string(std::max<long long>(0, st_.time_left().count())) + " ms left, an attempt needs " +
              std::to_string(st_.trace.budget.min_time_left.count()) + " ms (x-tollgate-deadline-ms / deadline_ms)",
          "deadline_exceeded");
    }
    if (!out.attempted && !out.error && !out.refusal) {
      // The router does not offer deployments whose circuit is open: say so when that is why.
      for (auto i : g.candidates)
        if (!st_.svc->circuits->available(i)) out.circuit_blocked = true;
      if (out.circuit_blocked) {
        if (auto stop = commercial_block(g.group)) {
          out.failure = FailureClass::commercial_limit;
          out.error = std::move(*stop);
          out.commercial_block = true;
          st_.step_skip(g.group, "provider circuit open: commercial_limit");
          return;
        }
      }
      out.failure = FailureClass::retryable_capacity;
      const std::string why = out.circuit_blocked ? "every deployment's circuit is open"
                                                  : "every deployment is cooling down or at its rpm/tpm limit";
      out.error = core::Error::gateway(429, "rate_limit_exceeded",
                                       "no deployment of model group '" + g.group + "' is available: " + why,
                                       "no_deployments_available");
      if (out.circuit_blocked) {
        std::string which = "deployment circuit open";
        if (const auto* members = st_.svc->groups->find(g.group))
          for (auto i : *members)
            if (st_.svc->circuits->provider_state(st_.deployment(i).provider_prefix) == policy::CircuitState::open) {
              which = "provider circuit open (" + st_.deployment(i).provider_prefix + ")";
              break;
            }
        st_.step_skip(g.group, which);
        if (out.stop_reason.empty()) out.stop_reason = which;
      }
      if (out.stop_reason.empty()) out.stop_reason = "no deployment available";
    }
    // A retry that was decided but could not start (deadline, budget, nothing left to select)
    // means the walk moves on.
    for (auto it = st_.trace.steps.rbegin(); it != st_.trace.steps.rend(); ++it)
      if (it->kind == TraceStep::Kind::attempt) {
        if ((it->decision == "retry" || it->decision == "next_deployment") && !out.ok && it->group == g.group &&
            &*it == &st_.trace.steps.back())
          it->decision = "fallback";
        break;
      }
  }

  /// Whether deployment `i` may continue the client's cut stream: it accepts an assistant prefill
  /// and, for a native Anthropic stream, is called natively (its events extend the stream).
  bool continues_on(std::size_t i) const {
    const auto& d = st_.deployment(i);
    if (!providers::accepts_prefill(d)) return false;
    return !st_.client->native() || providers::native_adapter_for(d, st_.call.native_api) != nullptr;
  }

  /// Ends the call's body (and its native body) with the text the client has as a final
  /// assistant message, replacing an earlier continuation's: what the next target continues.
  void put_prefill() {
    if (!st_.client->prefill_in_body)
      if (auto own = providers::final_assistant_text(st_.call.body)) {
        // The caller prefilled the answer: what was delivered continues that message.
        st_.client->caller_prefill = std::move(*own);
        st_.client->prefill_in_body = true;
      }
    const std::string text = st_.client->caller_prefill + std::string(st_.client->prefill());
    providers::put_prefill(st_.call.body, text, false, st_.client->prefill_in_body);
    if (st_.call.native_body) providers::put_prefill(*st_.call.native_body, text, true, st_.client->prefill_in_body);
    st_.client->prefill_in_body = true;
    acct_.forget_input_bounds();  // the prefill is input: admission counts it
  }

  /// Removes from `candidates` the deployments that cannot serve the call's API (allocates only
  /// when one cannot). The 400 to answer when none is left, naming the first one refused.
  std::optional<core::Error> refuse_unserved(std::vector<std::size_t>& candidates) const {
    const auto api = st_.call.api;
    const auto serves = [&](std::size_t i) { return providers::adapter_for(st_.deployment(i), api) != nullptr; };
    const auto first_not = std::find_if_not(candidates.begin(), candidates.end(), serves);
    if (first_not == candidates.end()) return std::nullopt;
    const std::size_t refused = *first_not;
    std::erase_if(candidates, [&](std::size_t i) { return !serves(i); });
    if (!candidates.empty()) return std::nullopt;
    return core::Error::caller(400, "invalid_request_error",
                               providers::operation_unsupported_message(st_.deployment(refused), api), "model",
                               "operation_not_supported");
  }

  /// An embeddings input of token ids longer than the model's max_input_tokens (its length is
  /// exact: no tokenizer needed): OpenAI's 400 context_length_exceeded. Text inputs are sent,
  /// and the provider's own 400 is classified as a context overflow.
  std::optional<core::Error> token_input_overflow(std::size_t dep) const {
    if (st_.call.api != providers::CallApi::embeddings) return std::nullopt;
    const auto limit = st_.price_of(dep).price.max_input_tokens;
    const auto* input = st_.call.body.if_contains("input");
    if (!limit || *limit <= 0 || input == nullptr) return std::nullopt;
    const auto longest = budget::longest_token_input(*input);
    if (!longest || *longest <= *limit) return std::nullopt;
    return core::Error::caller(400, "invalid_request_error",
                               "This model's maximum context length is " + std::to_string(*limit) +
                                   " tokens, however you requested " + std::to_string(*longest) +
                                   " tokens in one input. Please reduce the length of the input.",
                               "input", "context_length_exceeded");
  }

  net::awaitable<void> sleep(milliseconds d) {
    if (st_.svc->virtual_time) {  // simulation: time is virtual
      st_.svc->virtual_time->advance(d);
      co_return;
    }
    auto exec = co_await net::this_coro::executor;
    net::steady_timer t(exec, d);
    st_.timer = &t;
    co_await t.async_wait(use_nothrow);
    st_.timer = nullptr;
  }

  void on_client_gone() {
    st_.gone = true;
    st_.cancel_in_flight();
  }

  /// The gateway's drain ran out with this request running: no new attempt starts and the one
  /// in flight is cancelled. Its reservation settles by its evidence like any other (sent and
  /// not answered in full: unknown, the reservation); the client gets shutdown_error().
  void on_shutdown() {
    st_.cut = true;
    st_.cancel_in_flight();
  }

  std::unique_ptr<ResponseSink> owned_sink_;  ///< serve_chat's sink: destroyed after everything that writes to it
  RunState st_;
  Accounting acct_;
  Attempter attempter_;
  Degrader degrader_;
  std::vector<policy::RateSubject> rate_subjects_;
  bool rate_admitted_ = false;
  bool started_ = false;  ///< go() ran: the run is recorded however it ends
};

}  // namespace

namespace {
// The run lives on the heap, sized to itself: a coroutine frame would also keep the call passed
// by value and every temporary of the await, for as long as the request (a stream's length).
net::awaitable<RunOutcome> drive(std::unique_ptr<Run> run) { co_return co_await run->go(); }
net::awaitable<void> serve(std::unique_ptr<Run> run) { co_await run->go(); }
}  // namespace

net::awaitable<void> serve_chat(std::shared_ptr<Services> services, ChatCall call, std::unique_ptr<ResponseSink> sink) {
  auto& s = *sink;
  return serve(std::make_unique<Run>(std::move(services), std::move(call), s, std::move(sink)));
}

net::awaitable<RunOutcome> run_chat(std::shared_ptr<Services> services, ChatCall call, ResponseSink& sink) {
  return drive(std::make_unique<Run>(std::move(services), std::move(call), sink));
}

}  // namespace tollgate::pipeline
