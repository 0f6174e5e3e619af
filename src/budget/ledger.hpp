#pragma once
/// The in-memory budget ledger: atomic all-or-none reservation of an attempt's worst-case cost
/// against every scope that applies, and settlement to the actual cost (DESIGN.md, "Budget
/// admission (the heart)"; docs/budgets.md). It is the cache of the durable ledger: the store
/// layer rebuilds it with Ledger::load at start and records every change through LedgerObserver.
///
/// Units: money is Nanos (int64 nano-dollars, money.hpp); instants are SystemTime
/// (std::chrono::system_clock). No I/O and no hidden clock: callers pass `now`.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
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
  /// behaves like 0 (nothing paid passes).
  Nanos max_budget = 0;
  /// The reset period (`budget_duration`); nullopt = a lifetime budget that never resets.
  std::optional<BudgetPeriod> period;
};

/// How an attempt's reservation settles.
enum class SettleKind {
  actual,    ///< the upstream reported usage: charge the actual cost passed to settle
  no_usage,  ///< nothing can have been billed (evidence not_sent or error_response: budget/settlement.hpp): charge 0
  unknown,   ///< outcome unknown (timeout/reset after send, abandoned reservation): charge the full
             ///< reservation and count it in ScopeState::unknown
};

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
/// against. Move-only value; settle it exactly once with Ledger::settle (or own it with a
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
  /// True when nothing is held (zero amount, already settled, or moved from).
  [[nodiscard]] bool empty() const noexcept { return holds_.empty(); }
  /// The number of distinct scopes held.
  [[nodiscard]] std::size_t scope_count() const noexcept { return holds_.size(); }
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
  void clear() noexcept;

  const Ledger* owner_ = nullptr;
  ReservationId id_ = 0;
  Nanos amount_ = 0;
  SystemTime reserved_at_{};
  bool reduced_ = false;
  std::size_t binding_scope_ = SIZE_MAX;
  std::vector<Hold> holds_;  // sorted by shard
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

/// Durability hooks: the store layer implements this to append ledger records (group commit).
/// Both calls happen on the thread that called reserve/settle, after the in-memory change and
/// outside every ledger lock, possibly from many threads at once: implementations must be
/// thread-safe and fast (enqueue, do not write synchronously).
class LedgerObserver {
 public:
  virtual ~LedgerObserver() = default;
  /// A reservation was taken: `amount` nano-dollars against `scopes` (the caller's list, in its
  /// order, duplicates included) at `now`. Return false if it cannot be recorded (store
  /// unavailable, queue full): the ledger then releases the reservation, never calls on_settle
  /// for it, and reserve() returns RefusalReason::observer_rejected (fail closed).
  virtual bool on_reserve(ReservationId id, std::span<const ScopeLimit> scopes, Nanos amount, SystemTime now) = 0;
  /// A reservation settled: `reserved` was released and `charged` nano-dollars were added to the
  /// spend of each of its scopes (charged = actual for SettleKind::actual, 0 for no_usage, the
  /// reservation for unknown) at `now`. Must not throw: a settlement cannot be refused.
  virtual void on_settle(ReservationId id, Nanos reserved, Nanos charged, SettleKind kind,
                         SystemTime now) noexcept = 0;
};

/// Construction options of a Ledger.
struct LedgerOptions {
  /// Number of lock shards, rounded up to a power of two (1 = a single mutex). Scopes are
  /// spread over shards by ScopeIdHash; a reservation locks the shards of its scopes in
  /// ascending index order (no deadlock). Default 64 (see docs/budgets.md for measurements).
  std::size_t shards = 64;
  /// The timezone in which day and month windows reset (see window_of).
  ResetTimezone reset_timezone{};
  /// The first reservation id handed out; the store sets it past the highest id it holds.
  ReservationId first_reservation_id = 1;
  /// Durability hooks; not owned, may be null, must outlive the ledger.
  LedgerObserver* observer = nullptr;
};

/// The in-memory ledger. Thread safety: every member function may be called concurrently from
/// any number of threads. No lock is held while calling the observer, and none is ever held
/// across a suspension point (there are none: all calls are synchronous and short).
class Ledger {
 public:
  explicit Ledger(LedgerOptions options = {});
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  /// Atomically reserves `amount` nano-dollars against every scope in `scopes`.
  ///
  /// First, each scope's window is rolled to the one containing `now` (spent and unknown go
  /// back to 0 at a window boundary; reserved does not). Then, for every scope,
  /// `spent + reserved + amount <= max_budget` must hold; if it does for all, every scope's
  /// `reserved` grows by `amount` — all or none, under the locks of all involved shards, so two
  /// concurrent reservations can never both take the last of a budget.
  /// - amount == 0, or no scopes: succeeds with an empty Reservation and touches nothing (a free
  ///   attempt is never blocked by money).
  /// - The same ScopeId listed twice is held once and checked against the smaller limit.
  /// - Unknown scopes are created with spent = 0 (the store loads known spend first).
  /// Errors: Refusal (budget_exceeded naming the first refusing scope in the caller's order;
  /// invalid_amount for amount < 0; observer_rejected when the observer cannot record it).
  /// Throws only std::bad_alloc (creating a scope) or std::system_error (mutex).
  [[nodiscard]] std::expected<Reservation, Refusal> reserve(std::span<const ScopeLimit> scopes, Nanos amount,
                                                            SystemTime now);

  /// Atomically reserves between `amount.min` and `amount.max` nano-dollars against every scope
  /// (AmountRange gives the rule), in the same single pass over the scopes as the fixed-amount
  /// reserve: the headroom of every scope is read under the locks, the grant chosen from the
  /// smallest, and every scope's `reserved` grows by it — all or none. The Reservation's amount()
  /// is the grant; reduced() and binding_scope() say whether and by which scope it was lowered.
  /// amount.max == 0 (or no scopes): an empty Reservation, nothing touched.
  /// Errors: as the fixed-amount reserve; budget_exceeded when a scope's headroom < amount.min
  /// (Refusal::requested = amount.min); invalid_amount when min < 0, max < min or
  /// share_percent is outside 1..100.
  [[nodiscard]] std::expected<Reservation, Refusal> reserve(std::span<const ScopeLimit> scopes, AmountRange amount,
                                                            SystemTime now);

  /// Settles `reservation` (which becomes empty): its amount leaves `reserved` of every scope
  /// and the charge is added to `spent` (saturating at kMaxNanos):
  /// - SettleKind::actual: charge max(actual, 0) — may exceed the reservation if the estimate
  ///   was low (the overshoot is recorded, never hidden);
  /// - SettleKind::no_usage: charge 0 (`actual` ignored);
  /// - SettleKind::unknown: charge the reserved amount (`actual` ignored), also added to `unknown`.
  /// The charge goes to the window containing `now`: if a scope's window reset between reserve
  /// and settle, the new window pays (conservative: late spend is never dropped).
  /// An empty reservation (zero amount, moved-from, already settled) is a no-op, as is one taken
  /// from another Ledger. Calls LedgerObserver::on_settle after the change.
  void settle(Reservation&& reservation, Nanos actual, SettleKind kind, SystemTime now) noexcept;

  /// The state of `scope` at `now` (a window that has ended reads as the new window with
  /// spent 0, without modifying the ledger); nullopt if the ledger has never seen the scope.
  [[nodiscard]] std::optional<ScopeState> state(const ScopeId& scope, SystemTime now) const;

  /// Rebuilds a scope from the durable store at start: sets its spent (and clears unknown) for
  /// the window that began at `window_start` (pass SystemTime{} for a lifetime budget), of
  /// `period` when known. Reserved is left as is. With a period, the window's end is known:
  /// state() reports a window that has ended as a new window with spent 0, and the next
  /// reservation starts it fresh. Without one (records written before periods were stored), the
  /// next reservation computes the window: if that window began after `window_start`, spent
  /// resets to 0; if it is the loaded window, spent is kept. Open reservations found in the store
  /// should be settled conservatively by the store first and included in `spent`.
  void load(const ScopeId& scope, Nanos spent, SystemTime window_start,
            std::optional<BudgetPeriod> period = std::nullopt);

  /// Forgets the scopes whose window has ended and that hold no reservation (their spend belongs
  /// to a window no admission will look at again; a later reservation recreates the scope in its
  /// new window with spent 0, which is what it would have read anyway). Keeps memory bounded by
  /// the scopes of current windows and lifetime budgets, whatever the number of distinct callers
  /// over time. Returns how many were forgotten. Thread-safe; locks one shard at a time.
  std::size_t forget_ended(SystemTime now);

  /// The number of scopes the ledger tracks. Thread-safe (locks every shard in turn).
  [[nodiscard]] std::size_t scope_count() const;

  /// The timezone day and month windows reset in (LedgerOptions::reset_timezone).
  [[nodiscard]] const ResetTimezone& reset_timezone() const noexcept { return options_.reset_timezone; }

  /// The number of lock shards (a power of two).
  [[nodiscard]] std::size_t shard_count() const noexcept { return shard_count_; }

 private:
  struct Shard;
  void release(Reservation& reservation, Nanos charge, bool count_unknown, SystemTime now) noexcept;

  LedgerOptions options_;
  std::size_t shard_count_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<ReservationId> next_id_;
};

/// Owns a Reservation and makes sure it settles: explicitly with settle(), or as
/// SettleKind::unknown at clock.now() when destroyed unsettled (exception, client disconnect,
/// cancelled coroutine). Move-only. Not thread-safe (one owner at a time); the ledger and the
/// clock must outlive it.
class ReservationGuard {
 public:
  /// Guards nothing.
  ReservationGuard() = default;
  /// Takes ownership of `reservation`, to be settled on `ledger`.
  ReservationGuard(Ledger& ledger, Reservation reservation, const WallClock& clock) noexcept;
  ReservationGuard(const ReservationGuard&) = delete;
  ReservationGuard& operator=(const ReservationGuard&) = delete;
  /// Moves; the source guards nothing.
  ReservationGuard(ReservationGuard&& other) noexcept;
  /// Settles the current reservation as unknown (if any), then takes over `other`'s.
  ReservationGuard& operator=(ReservationGuard&& other) noexcept;
  /// Settles as SettleKind::unknown at clock.now() if still unsettled.
  ~ReservationGuard();

  /// Settles now (see Ledger::settle). A second call is a no-op.
  void settle(Nanos actual, SettleKind kind, SystemTime now) noexcept;
  /// settle(actual, kind, clock.now()).
  void settle(Nanos actual, SettleKind kind) noexcept;
  /// The guarded reservation (empty once settled or released).
  [[nodiscard]] const Reservation& reservation() const noexcept { return reservation_; }
  /// True while a non-empty reservation is held.
  [[nodiscard]] bool active() const noexcept { return ledger_ != nullptr && !reservation_.empty(); }
  /// Gives up ownership without settling; the caller must settle the result.
  [[nodiscard]] Reservation release() noexcept;

 private:
  Ledger* ledger_ = nullptr;
  const WallClock* clock_ = nullptr;
  Reservation reservation_;
};

}  // namespace tollgate::budget
