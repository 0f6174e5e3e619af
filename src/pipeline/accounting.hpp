#pragma once
/// Accounting of one run (DESIGN.md "Budget admission"): each attempt is admitted against every
/// budget scope of the caller by a reservation of its worst case (recorded durably before the
/// send), and settled by its evidence afterwards (budget/settlement.hpp); the request's cost is
/// the sum of its settlements. Internal to pipeline/.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "budget/budget_ledger.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/run_state.hpp"
#include "store/records.hpp"

namespace tollgate::pipeline {

/// Admission and settlement of a run's attempts. Holds per-request caches (scopes per group,
/// input bounds per model).
class Accounting {
 public:
  explicit Accounting(RunState& st) : st_(st) {}
  Accounting(const Accounting&) = delete;
  Accounting& operator=(const Accounting&) = delete;

  /// A reservation held for one attempt; settled as `unknown` if the attempt is abandoned.
  struct Held {
    explicit Held(budget::BudgetLedger& l) : ledger(l) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      // Abandoned (an exception, a destroyed frame): unknown, durably and on the request's cost,
      // like any other settlement.
      if (reservation.empty()) return;
      if (owner != nullptr) {
        try {
          owner->settle_held(*this, dep, budget::SettleKind::unknown, 0);
        } catch (...) {  // the durable record could not be queued: recovery settles it at restart
        }
      }
      if (!reservation.empty())
        ledger.settle(std::move(reservation), 0, budget::SettleKind::unknown, std::chrono::system_clock::now());
    }
    budget::BudgetLedger& ledger;
    Accounting* owner = nullptr;  ///< set once admitted: its settle_held records the settlement
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

  /// The request's input bound for deployment `dep`, computed once per (model, context limit,
  /// native) per request: a retry or a fallback to a model of the same family reuses it. A
  /// deployment that may be sent the caller's native body (/v1/messages to Anthropic, /v1/responses
  /// to OpenAI/Azure) is bounded by that body too, and by the context limit when the call has
  /// hidden input (ChatCall::hidden_input).
  std::int64_t input_bound(std::size_t dep);
  /// Forgets the input bounds computed so far: the call's body changed (a continuation's prefill).
  void forget_input_bounds() { input_bounds_.clear(); }

  /// The caller's scopes for `group`, computed once per group per request (retries reuse them).
  std::vector<budget::ScopeLimit> scopes_for(const std::string& group);

  /// Admits `dep` for this caller within `plan`: nullopt when admitted (the worst case is
  /// reserved in `held`, durably when a store is configured, with the output bound it pays
  /// for), else the refusal.
  net::awaitable<std::optional<Refusal>> admit_target(std::string group, std::size_t dep, bool is_fallback, Held& held,
                                                      AttemptPlan plan);

  /// Settles the attempt's reservation by its evidence (budget/settlement.hpp) and records the
  /// cost on the request: the failure class decides what happens next, never what is charged.
  /// Returns the attempt's charge, nano-dollars (budget::settle_charge).
  budget::Nanos settle(Held& held, std::size_t dep, const AttemptResult& r);

  /// Settles `held` in memory and appends the durable settle record (not awaited: the reserve
  /// record is already durable, and recovery settles conservatively if this one is lost). The
  /// settle record names the windows that contain `now`: the ones the in-memory ledger charges.
  /// Returns the charge, nano-dollars (0 for an empty reservation).
  budget::Nanos settle_held(Held& held, std::size_t dep, budget::SettleKind kind, budget::Nanos actual);

  /// A durable ledger record of this request's attempt on `dep`: a reserve of `amount`, or a
  /// settle (`settle_kind`) releasing `amount` and charging `charged`, against `limits` in the
  /// windows that contain `now`.
  store::LedgerRecord ledger_record(store::LedgerKind kind, std::uint64_t id, const std::vector<budget::ScopeLimit>& limits,
                                    budget::Nanos amount, budget::Nanos charged,
                                    std::optional<budget::SettleKind> settle_kind, std::size_t dep,
                                    budget::SystemTime now) const;

 private:
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

  RunState& st_;
  std::vector<std::pair<std::string, std::vector<budget::ScopeLimit>>> scopes_by_group_;
  struct InputBound {
    std::string model;
    std::int64_t limit = 0;
    bool native = false;
    std::int64_t tokens = 0;
  };
  std::vector<InputBound> input_bounds_;  ///< per (model, context limit, native): input_bound()
};

}  // namespace tollgate::pipeline
