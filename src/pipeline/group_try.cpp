// A group's attempts (pipeline/group_try.hpp).

#include "pipeline/group_try.hpp"

#include <algorithm>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "budget/money.hpp"
#include "budget/operation_bounds.hpp"
#include "config/wildcard.hpp"
#include "core/ids.hpp"
#include "providers/native.hpp"
#include "providers/prefill.hpp"
#include "routing/backoff.hpp"

namespace tollgate::pipeline {

std::optional<core::Error> GroupTry::commercial_block(const std::string& group) const {
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

// The coroutine keeps only what lives across its waits (the walk, the admission's hold, the
// attempt's result): GCC keeps every local and temporary of a coroutine in its frame, which
// lives as long as the stream. The decisions between the waits are plain functions.
net::awaitable<void> GroupTry::try_group(std::string group, bool is_fallback, bool counts_as_fallback, GroupResult& out) {
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

bool GroupTry::open_group(GroupWalk& g) {
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

GroupTry::NextAttempt GroupTry::pick_next(GroupWalk& g) {
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

void GroupTry::prepare_next(GroupWalk& g, NextAttempt& next) {
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

void GroupTry::note_refused(GroupWalk& g, const NextAttempt& next, Refusal refusal) {
  st_.svc->circuits->release(next.dep, next.permit);
  g.refused.push_back(next.dep);
  g.tried.push_back(next.dep);
  g.out.refusal = std::move(refusal);
}

bool GroupTry::begin_attempt(GroupWalk& g, NextAttempt& next, Accounting::Held& held) {
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

void GroupTry::begin_unsupported(const NextAttempt& next) {
  st_.reserved_now = 0;
  st_.bound = AttemptBound{};
  st_.permit = next.permit;  // released when the attempt is recorded (it never counts against a circuit)
  st_.permit_dep = next.dep;
}

GroupTry::After GroupTry::after_attempt(GroupWalk& g, const NextAttempt& next, Accounting::Held& held, AttemptResult r) {
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
  const budget::Nanos charged = acct_.settle(held, dep, r);
  if (!st_.trace.steps.empty() && st_.trace.steps.back().kind == TraceStep::Kind::attempt)
    st_.trace.steps.back().charged = charged;
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

void GroupTry::close_group(GroupWalk& g) {
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

bool GroupTry::continues_on(std::size_t i) const {
  const auto& d = st_.deployment(i);
  if (!providers::accepts_prefill(d)) return false;
  return !st_.client->native() || providers::native_adapter_for(d, st_.call.native_api) != nullptr;
}

void GroupTry::put_prefill() {
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

std::optional<core::Error> GroupTry::refuse_unserved(std::vector<std::size_t>& candidates) const {
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

std::optional<core::Error> GroupTry::token_input_overflow(std::size_t dep) const {
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

net::awaitable<void> GroupTry::sleep(milliseconds d) {
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

}  // namespace tollgate::pipeline
