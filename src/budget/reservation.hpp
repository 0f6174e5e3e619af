#pragma once
/// What a budget ledger hands out and reports, whichever ledger it is (the in-process Ledger,
/// budget/ledger.hpp, or a shared one behind budget/budget_ledger.hpp): the scopes an attempt is
/// reserved against, the amount asked for, the held reservation, why one was refused, and a
/// scope's state.
///
/// Units: money is Nanos (int64 nano-dollars, money.hpp); instants are SystemTime
/// (std::chrono::system_clock).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "budget/money.hpp"
#include "budget/scope.hpp"
#include "budget/window.hpp"

namespace tollgate::budget {

/// One budget that applies to an attempt: the scope, its limit and its optional reset period.
/// Limits come from the caller's identity snapshot on every call (the ledger keeps no limit
/// configuration of its own, so a changed limit applies to the next reservation).
struct ScopeLimit {
  ScopeId scope;
  /// The most that may be spent plus reserved in one window, in nano-dollars. A negative value
  /// behaves like 0 (nothing paid passes); kMaxNanos is no limit (a scope charged without a
  /// budget): it never refuses, even once its spend saturated at kMaxNanos.
  Nanos max_budget = 0;
  /// The reset period (`budget_duration`); nullopt = a lifetime budget that never resets.
  std::optional<BudgetPeriod> period;
};

/// How an attempt's reservation settles.
enum class SettleKind {
  actual,    ///< the upstream reported usage: charge the actual cost passed to settle
  no_usage,  ///< nothing can have been billed (evidence not_sent or error_response: budget/settlement.hpp): charge 0
  unknown,   ///< outcome unknown (timeout/reset after send, abandoned reservation, a cut stream):
             ///< charge the full reservation, or more when the upstream's partial usage says more
             ///< was billed, and count it in ScopeState::unknown
};

/// What a settle charges, nano-dollars: actual → max(actual, 0); no_usage → 0; unknown →
/// max(reserved, actual), where `actual` is what the upstream's partial usage prices at (0 when
/// none was reported): the reservation covers an upstream that honoured the output bound it was
/// sent, and an upstream that reported more (it ignored the bound, then the stream was cut) is
/// charged what it reported.
[[nodiscard]] constexpr Nanos settle_charge(SettleKind kind, Nanos reserved, Nanos actual) noexcept {
  switch (kind) {
    case SettleKind::actual: return actual > 0 ? actual : 0;
    case SettleKind::no_usage: return 0;
    case SettleKind::unknown: return actual > reserved ? actual : reserved;
  }
  return reserved;
}

/// "actual", "no_usage", "unknown" (stable: used in the durable ledger and logs).
[[nodiscard]] std::string_view to_string(SettleKind kind);

/// Unique id of one reservation within a ledger (and, with LedgerOptions::first_reservation_id
/// set past the durable store's highest id, across restarts). 0 means "no reservation".
using ReservationId = std::uint64_t;

/// Why a reservation was refused.
enum class RefusalReason {
  budget_exceeded,    ///< a scope's spent + reserved + amount would exceed its max_budget
  invalid_amount,     ///< amount < 0 (a caller bug)
  observer_rejected,  ///< LedgerObserver::on_reserve could not record it (store down: fail closed)
};

/// "budget_exceeded", "invalid_amount", "observer_rejected".
[[nodiscard]] std::string_view to_string(RefusalReason reason);

/// Why reserve() said no. For budget_exceeded it describes the FIRST refusing scope in the order
/// the caller passed them, and only that scope's own figures: the pipeline may put kind and id
/// in the 429 message; it must not leak other scopes' (other tenants') figures.
struct Refusal {
  RefusalReason reason = RefusalReason::budget_exceeded;
  /// The refusing scope (budget_exceeded only; default-constructed otherwise).
  ScopeId scope;
  /// That scope's max_budget, nano-dollars.
  Nanos limit = 0;
  /// That scope's spent + reserved in its current window when refused, nano-dollars.
  Nanos committed = 0;
  /// The amount that was asked for, nano-dollars.
  Nanos requested = 0;
  /// When that scope's window resets (a Retry-After hint); SystemTime::max() for a lifetime budget.
  SystemTime resets_at = SystemTime::max();
};

/// How much one reservation asks for: the whole worst case when it fits, less when a budget is
/// nearly spent (the caller then lowers the attempt's output bound to match what was granted).
///
/// With H the smallest headroom (max_budget - spent - reserved) of the scopes, the grant is
///   `max`                                   when max <= H * share_percent / 100,
///   max(min, H * share_percent / 100)       otherwise, if that is <= H;
/// and the reservation is refused when H < min. `share_percent` < 100 keeps one attempt from
/// taking the whole of what is left, so concurrent callers near the end of a budget are still
/// served (smaller answers) instead of refused by one large worst case. min == max asks for a
/// fixed amount (share is then irrelevant).
struct AmountRange {
  Nanos min = 0;           ///< the least that is worth reserving, nano-dollars (>= 0)
  Nanos max = 0;           ///< the whole worst case, nano-dollars (>= min)
  int share_percent = 100; ///< 1..100: the most of the tightest headroom one grant may take when `max` does not fit in it
};

class Ledger;
namespace detail {
struct LedgerEntry;
}

/// A held reservation: `amount` nano-dollars added to `reserved` of every scope it was taken
/// against. Move-only value; settle it exactly once with the ledger that handed it out
/// (BudgetLedger::settle; a reservation of another ledger is ignored there), or own it with a
/// ReservationGuard, which settles as `unknown` if nobody else does). Destroying an unsettled
/// non-empty Reservation leaks its amount as `reserved` until restart — use ReservationGuard.
/// Thread safety: a Reservation may be moved to and settled from any thread; not shared.
class Reservation {
 public:
  /// An empty reservation (nothing held): what reserve() returns for amount 0.
  Reservation() = default;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  /// Moves; the source becomes empty.
  Reservation(Reservation&& other) noexcept;
  /// Moves; the source becomes empty. Assigning over a non-empty reservation leaks it (as above).
  Reservation& operator=(Reservation&& other) noexcept;
  ~Reservation() = default;

  /// The id (0 for an empty reservation). Also passed to LedgerObserver.
  [[nodiscard]] ReservationId id() const noexcept { return id_; }
  /// The reserved amount in nano-dollars (0 for an empty reservation).
  [[nodiscard]] Nanos amount() const noexcept { return amount_; }
  /// A reservation held by a shared ledger (one whose counters live outside this process, e.g.
  /// store/redis/redis_ledger.hpp): `owner` identifies that ledger (its settle ignores any other
  /// reservation), `scopes` are the distinct scopes reserved against, as that ledger needs them to
  /// settle. amount must be > 0 and scopes non-empty (else the result is empty).
  [[nodiscard]] static Reservation shared(const void* owner, ReservationId id, Nanos amount, SystemTime reserved_at,
                                          bool reduced, std::size_t binding_scope, std::vector<ScopeLimit> scopes);

  /// True when nothing is held (zero amount, already settled, or moved from).
  [[nodiscard]] bool empty() const noexcept { return holds_.empty() && shared_scopes_.empty(); }
  /// The number of distinct scopes held.
  [[nodiscard]] std::size_t scope_count() const noexcept { return holds_.size() + shared_scopes_.size(); }
  /// The ledger that handed it out (null when empty).
  [[nodiscard]] const void* owner() const noexcept { return owner_; }
  /// A shared ledger's reservation: the distinct scopes it holds (empty for the in-process ledger's).
  [[nodiscard]] const std::vector<ScopeLimit>& shared_scopes() const noexcept { return shared_scopes_; }
  /// Empties the reservation without settling it; only the owning ledger's settle may call this.
  void clear() noexcept;
  /// When it was taken (the `now` passed to reserve).
  [[nodiscard]] SystemTime reserved_at() const noexcept { return reserved_at_; }
  /// True when a ranged reserve granted less than AmountRange::max (a budget was nearly spent).
  [[nodiscard]] bool reduced() const noexcept { return reduced_; }
  /// The index, in the caller's scope list, of the scope with the smallest headroom when the
  /// grant was reduced (the scope that bound it); SIZE_MAX otherwise.
  [[nodiscard]] std::size_t binding_scope() const noexcept { return binding_scope_; }

 private:
  friend class Ledger;
  struct Hold {
    std::uint32_t shard;
    detail::LedgerEntry* entry;
  };

  const void* owner_ = nullptr;
  ReservationId id_ = 0;
  Nanos amount_ = 0;
  SystemTime reserved_at_{};
  bool reduced_ = false;
  std::size_t binding_scope_ = SIZE_MAX;
  std::vector<Hold> holds_;  // in-process ledger: sorted by shard
  std::vector<ScopeLimit> shared_scopes_;  // shared ledger
};

/// The state of one scope, as the ledger knows it at `now`.
struct ScopeState {
  /// Settled spend in the current window, nano-dollars.
  Nanos spent = 0;
  /// Open reservations, nano-dollars. Not tied to a window: in-flight amounts survive a reset.
  Nanos reserved = 0;
  /// The part of `spent` that was charged by `unknown` settlements, nano-dollars.
  Nanos unknown = 0;
  /// The current window [window_start, window_end); SystemTime::min()/max() for a lifetime budget.
  SystemTime window_start = SystemTime::min();
  SystemTime window_end = SystemTime::max();
  /// The max_budget of the most recent reservation against the scope, if any.
  std::optional<Nanos> max_budget;
  /// The period of the most recent reservation against the scope (nullopt: lifetime or unknown).
  std::optional<BudgetPeriod> period;
};

}  // namespace tollgate::budget
