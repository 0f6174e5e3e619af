#pragma once
/// The ledger interface the pipeline admits and settles through (DESIGN.md, "Budget admission"):
/// the in-process Ledger (budget/ledger.hpp) and its multi-instance twin, the Redis ledger
/// (store/redis/redis_ledger.hpp), implement it, so the attempt loop does not change when Tollgate
/// scales out. Both apply the same rule: every applicable scope checked and reserved at once, all
/// or none (AmountRange gives the grant), settled to what the evidence says.
///
/// Units: money is Nanos (int64 nano-dollars); instants are SystemTime. No Asio here: a shared
/// ledger answers through a callback, which the pipeline turns into an awaitable.

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <vector>

#include "budget/reservation.hpp"

namespace tollgate::budget {

/// The answer to one reserve: the held reservation (empty when nothing needed reserving) or why not.
using ReserveResult = std::expected<Reservation, Refusal>;

/// Receives a ReserveResult exactly once. Must be quick and must not throw; a shared ledger
/// calls it on its own I/O thread (post to your executor).
using ReserveDone = std::function<void(ReserveResult)>;

/// A budget ledger. Every member function is thread-safe.
class BudgetLedger {
 public:
  virtual ~BudgetLedger() = default;

  /// Reserves between `amount.min` and `amount.max` against every scope in `scopes` (the
  /// AmountRange rule, all or none; the same scope listed twice is held once against the smaller
  /// limit; amount.max == 0 or no scopes: an empty Reservation) and calls `done` with the result:
  /// before returning for the in-process ledger, later (from another thread) for a shared one.
  /// Refusals: budget_exceeded (the first refusing scope in the caller's order, its own figures
  /// only), invalid_amount, observer_rejected (the reservation cannot be recorded or the shared
  /// ledger cannot be reached: the caller fails closed, 503 ledger_unavailable).
  virtual void reserve_async(std::vector<ScopeLimit> scopes, AmountRange amount, SystemTime now,
                             ReserveDone done) = 0;

  /// The id the next reservation against `scopes` will be granted under, when this ledger can
  /// name it before asking (a shared ledger takes ids from a local block) and the last answers it
  /// saw suggest the grant (no scope is known to be spent past `amount.min`'s room). The caller
  /// may then write the durable reserve record while the ledger decides, and passes the id to
  /// reserve_as_async. nullopt (the default, and the in-process ledger): the id is known only
  /// from the grant. An id taken and not used is simply never seen again.
  [[nodiscard]] virtual std::optional<std::uint64_t> take_reservation_id(const std::vector<ScopeLimit>& scopes,
                                                                         AmountRange amount, SystemTime now) {
    (void)scopes, (void)amount, (void)now;
    return std::nullopt;
  }

  /// reserve_async, granting under `id` (from take_reservation_id) where it can. A ledger may
  /// still grant under another id (the id turned out to be unusable): the caller compares the
  /// granted reservation's id with `id`. The default ignores `id`.
  virtual void reserve_as_async(std::uint64_t id, std::vector<ScopeLimit> scopes, AmountRange amount, SystemTime now,
                                ReserveDone done) {
    (void)id;
    reserve_async(std::move(scopes), amount, now, std::move(done));
  }

  /// Settles a reservation this ledger handed out (it becomes empty): `reserved` leaves every
  /// scope and the charge is added to its spend in the window containing `now` — actual:
  /// max(actual, 0); no_usage: 0; unknown: the reserved amount (also counted as unknown). Never
  /// refused and never blocks: a shared ledger that cannot be reached keeps the settlement and
  /// applies it when it can. An empty reservation, or another ledger's, is a no-op.
  virtual void settle(Reservation&& reservation, Nanos actual, SettleKind kind, SystemTime now) noexcept = 0;

  /// The state of `scope` at `now` as this process knows it (a shared ledger: as of the last
  /// answer it received for the scope; good for headers and /key/info, not for admission);
  /// nullopt if never seen.
  [[nodiscard]] virtual std::optional<ScopeState> state(const ScopeId& scope, SystemTime now) const = 0;

  /// The timezone day and month windows reset in.
  [[nodiscard]] virtual const ResetTimezone& reset_timezone() const noexcept = 0;

  /// Whether paid attempts can be admitted now (a shared ledger: its server answers and its
  /// counters are built). Readiness reports it; the in-process ledger always can.
  [[nodiscard]] virtual bool available() const noexcept { return true; }

  /// Drops what this process keeps of scopes whose window has ended and that hold nothing;
  /// returns how many. Bounded memory, whatever the number of distinct callers over time.
  virtual std::size_t forget_ended(SystemTime now) = 0;
};

}  // namespace tollgate::budget
