#include "pipeline/accounting.hpp"

#include <algorithm>

#include "core/await_answer.hpp"
#include "providers/native.hpp"
#include "auth/access.hpp"

namespace tollgate::pipeline {
namespace {

/// A durable append under way: started by start_append, awaited by await_append.
struct PendingAppend {
  std::shared_ptr<net::steady_timer> timer;
  std::shared_ptr<std::optional<bool>> result;
};

/// Whether the caller runs on `exec`'s own thread (an io_context's executor run by this thread).
bool on_thread_of(const net::any_io_executor& exec) {
  const auto* io = exec.target<net::io_context::executor_type>();
  return io != nullptr && io->running_in_this_thread();
}

/// Appends `rec` to the durable ledger. The answer comes on this thread (the ledger journal's
/// write: before append_ledger returns, or when this thread's batch is written at the end of the
/// loop's turn) or on another (the store's writer, the journal's thread: it is posted here).
PendingAppend start_append(store::Store& st, store::LedgerRecord rec, const net::any_io_executor& exec,
                           core::SteadyTime deadline) {
  PendingAppend p{std::make_shared<net::steady_timer>(exec, deadline), std::make_shared<std::optional<bool>>()};
  st.append_ledger(std::move(rec), [exec, timer = p.timer, result = p.result](bool ok) {
    if (on_thread_of(exec)) {
      *result = ok;
      timer->cancel();  // a wait already begun ends now
      return;
    }
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
  // A record in this thread's journal batch is written by a handler posted before this one: one
  // turn of the loop answers it, without arming the timer (which may be the loop's earliest).
  if (!p.result->has_value()) co_await net::post(co_await net::this_coro::executor, net::use_awaitable);
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

}  // namespace

std::int64_t Accounting::input_bound(std::size_t dep) {
  const auto& d = st_.deployment(dep);
  const auto& price = st_.price_of(dep);
  const std::string& model = d.base_model.empty() ? d.upstream_model : d.base_model;
  const auto limit = price.price.max_input_tokens.value_or(0);
  // A deployment that may be sent the caller's own body (Attempter::native_adapter) is bounded by
  // it too: documents by URL, server tools, search results, tool-result images and the fields
  // whose input the body does not show (hidden_input) reach it, and the chat translation drops them.
  const bool native = st_.call.native_body && providers::native_adapter_for(d, st_.call.native_api) != nullptr;
  for (const auto& b : input_bounds_)
    if (b.model == model && b.limit == limit && b.native == native) return b.tokens;
  std::int64_t tokens = input_bound_for(price, st_.call.body, model, st_.call.api);
  if (native)
    tokens = std::max(tokens, input_bound_for(price, *st_.call.native_body, model, providers::CallApi::chat,
                                              !st_.call.hidden_input.empty()));
  input_bounds_.push_back({model, limit, native, tokens});
  return tokens;
}

std::vector<budget::ScopeLimit> Accounting::scopes_for(const std::string& group) {
  for (const auto& [g, scopes] : scopes_by_group_)
    if (g == group) return scopes;
  scopes_by_group_.emplace_back(group, applicable_scopes(st_.principal(), group, st_.cfg));
  return scopes_by_group_.back().second;
}

net::awaitable<std::optional<Refusal>> Accounting::admit_target(std::string group, std::size_t dep, bool is_fallback, Held& held,
                                                    AttemptPlan plan) {
  const bool guarded = !is_fallback || st_.cfg.general_settings.enforce_fallback_budget;
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
  if (auto unreserved = admit_unreserved(st_.cfg, st_.price_of(dep), scopes)) {
    adm = std::move(*unreserved);
  } else {
    if (st_.svc->store) early_id = st_.svc->ledger->take_reservation_id(scopes, plan.range, now);
    if (early_id) {
      early = start_append(*st_.svc->store, ledger_record(store::LedgerKind::reserve, *early_id, scopes, plan.range.max, 0, {}, dep, now),
                           co_await net::this_coro::executor, st_.deadline);
      early_release.emplace(st_.svc->store.get(), ledger_record(store::LedgerKind::settle, *early_id, scopes, plan.range.max,
                                                           0, budget::SettleKind::no_usage, dep, now));
    }
    auto reserved = co_await reserve_on(*st_.svc->ledger, scopes, plan.range, now, st_.deadline, early_id);
    adm = admission_decision(std::move(reserved), st_.price_of(dep), scopes, plan);
  }
  const bool granted_early = early_id && adm.outcome == AdmissionDecision::Outcome::admitted &&
                             !adm.reservation.empty() && adm.reservation.id() == *early_id;
  if (granted_early) early_release->store = nullptr;  // the grant's own settle closes it
  early_release.reset();
  if (adm.outcome != AdmissionDecision::Outcome::admitted) co_return Refusal{std::move(adm.error), std::move(adm.reason)};
  if (adm.price_status == budget::PriceStatus::unpriced) st_.unpriced = true;
  held.reservation = std::move(adm.reservation);
  held.owner = this;
  held.dep = dep;
  held.output_tokens = adm.output_tokens;
  held.output_reduced = adm.output_reduced;
  held.reduced_by = std::move(adm.reduced_by);
  held.worst = adm.worst;
  if (held.reservation.empty() || !st_.svc->store) co_return std::nullopt;
  held.limits = std::move(scopes);
  const bool durable =
      granted_early ? co_await await_append(std::move(*early), st_.deadline)
                    : co_await append_durably(*st_.svc->store,
                                              ledger_record(store::LedgerKind::reserve, held.reservation.id(), held.limits,
                                                            held.reservation.amount(), 0, {}, dep, now),
                                              st_.deadline);
  if (durable) co_return std::nullopt;
  // Fail closed: a paid attempt that cannot be recorded is not sent. Its settle record follows
  // the reserve in the writer's queue, in case the reserve commits after all.
  settle_held(held, dep, budget::SettleKind::no_usage, 0);
  st_.alert("ledger_unavailable", "ledger",
            "the spend ledger cannot be written: paid requests are refused (503) until it can");
  co_return Refusal{core::Error::gateway(503, "api_error",
                                         "the spend ledger cannot be written; paid requests are refused until it can",
                                         "ledger_unavailable"),
                    "ledger_unavailable"};
}

budget::Nanos Accounting::settle(Held& held, std::size_t dep, const AttemptResult& r) {
  const auto& price = st_.price_of(dep);
  const budget::SettleKind kind = budget::settle_kind_for(r.evidence);
  budget::Nanos actual = 0;
  if (kind == budget::SettleKind::actual) {
    auto charge = attempt_charge(price, r.usage);
    actual = charge.total;
    if (r.ok) st_.charge = std::move(charge);
  } else if (kind == budget::SettleKind::unknown && r.usage.reported) {
    // A cut stream's partial usage: what the provider billed at least (settle_charge).
    actual = attempt_charge(price, r.usage).total;
  }
  if (kind == budget::SettleKind::unknown) st_.unknown = true;
  if (r.ok) st_.usage = r.usage;
  if (held.reservation.empty()) {
    // No scope to reserve against (master key, open gateway): the spend is still recorded, at
    // the worst case when the outcome is unknown, as a reservation would have been.
    const budget::Nanos charged = budget::settle_charge(kind, held.worst, actual);
    st_.cost = budget::saturating_add(st_.cost, charged);
    return charged;
  }
  return settle_held(held, dep, kind, actual);
}

budget::Nanos Accounting::settle_held(Held& held, std::size_t dep, budget::SettleKind kind, budget::Nanos actual) {
  if (held.reservation.empty()) return 0;
  const budget::Nanos reserved = held.reservation.amount();
  const budget::Nanos charged = budget::settle_charge(kind, reserved, actual);
  st_.cost = budget::saturating_add(st_.cost, charged);
  const auto id = held.reservation.id();
  const auto now = std::chrono::system_clock::now();
  st_.svc->ledger->settle(std::move(held.reservation), actual, kind, now);
  if (st_.svc->store)
    st_.svc->store->append_ledger(ledger_record(store::LedgerKind::settle, id, held.limits, reserved, charged, kind, dep, now),
                                  [](bool) {});
  return charged;
}

store::LedgerRecord Accounting::ledger_record(store::LedgerKind kind, std::uint64_t id, const std::vector<budget::ScopeLimit>& limits,
                                  budget::Nanos amount, budget::Nanos charged,
                                  std::optional<budget::SettleKind> settle_kind, std::size_t dep,
                                  budget::SystemTime now) const {
  store::LedgerRecord rec;
  rec.reservation_id = id;
  rec.kind = kind;
  rec.scopes = ledger_scopes(limits, st_.svc->ledger->reset_timezone(), now);
  rec.amount_nanos = amount;
  rec.actual_nanos = charged;
  if (settle_kind) rec.settle_kind = std::string(budget::to_string(*settle_kind));
  rec.request_id = st_.call.call_id;
  rec.model = st_.deployment(dep).id;
  rec.at_ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
  return rec;
}

}  // namespace tollgate::pipeline
