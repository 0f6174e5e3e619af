// The attempt loop's walk (pipeline/attempt_loop.hpp): rate limits, then the primary group and
// each fallback group in turn (each group's deployments with their retries: group_try.hpp), and
// the degradation mode when nothing served the request. One attempt is attempt.hpp, its stream
// relay stream_relay.hpp, admission and settlement accounting.hpp, the modes degrade.hpp; what a
// run records is rendered by the observers (response_headers.hpp, spend_log_row.hpp,
// run_metrics.hpp).

#include "pipeline/attempt_loop.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "auth/access.hpp"
#include "core/await_answer.hpp"
#include "pipeline/accounting.hpp"
#include "pipeline/attempt.hpp"
#include "pipeline/cache_step.hpp"
#include "pipeline/degrade.hpp"
#include "pipeline/group_try.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/run_finish.hpp"
#include "pipeline/run_state.hpp"
#include "pipeline/upstream_errors.hpp"

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
        groups_(st_, acct_, attempter_),
        degrader_(st_, [this](std::string group, bool is_fallback, bool counts_as_fallback, GroupResult& out) {
          return groups_.try_group(std::move(group), is_fallback, counts_as_fallback, out);
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
      co_await groups_.try_group(group, !primary, true, r);
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
  GroupTry groups_;
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
