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

#include "budget/budget_ledger.hpp"
#include "budget/money.hpp"
#include "budget/reservation.hpp"
#include "budget/scope.hpp"
#include "budget/window.hpp"

namespace tollgate::budget {

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
class Ledger final : public BudgetLedger {
 public:
  explicit Ledger(LedgerOptions options = {});
  ~Ledger() override;
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
  /// - SettleKind::unknown: charge the reserved amount, or `actual` when larger (the price of the
  ///   upstream's partial usage: settle_charge), also added to `unknown`.
  /// The charge goes to the window containing `now`: if a scope's window reset between reserve
  /// and settle, the new window pays (conservative: late spend is never dropped).
  /// An empty reservation (zero amount, moved-from, already settled) is a no-op, as is one taken
  /// from another Ledger. Calls LedgerObserver::on_settle after the change.
  void settle(Reservation&& reservation, Nanos actual, SettleKind kind, SystemTime now) noexcept override;

  /// BudgetLedger: the ranged reserve, answered before returning.
  void reserve_async(std::vector<ScopeLimit> scopes, AmountRange amount, SystemTime now, ReserveDone done) override;

  /// The state of `scope` at `now` (a window that has ended reads as the new window with
  /// spent 0, without modifying the ledger); nullopt if the ledger has never seen the scope.
  [[nodiscard]] std::optional<ScopeState> state(const ScopeId& scope, SystemTime now) const override;

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
  std::size_t forget_ended(SystemTime now) override;

  /// The number of scopes the ledger tracks. Thread-safe (locks every shard in turn).
  [[nodiscard]] std::size_t scope_count() const;

  /// The ids of the scopes of `kind` the ledger tracks, unordered (listings: the end-user budgets
  /// of GET /tollgate/budgets). Thread-safe (locks every shard in turn).
  [[nodiscard]] std::vector<ScopeId> scope_ids(ScopeKind kind) const;

  /// The timezone day and month windows reset in (LedgerOptions::reset_timezone).
  [[nodiscard]] const ResetTimezone& reset_timezone() const noexcept override { return options_.reset_timezone; }

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
  ReservationGuard(BudgetLedger& ledger, Reservation reservation, const WallClock& clock) noexcept;
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
  BudgetLedger* ledger_ = nullptr;
  const WallClock* clock_ = nullptr;
  Reservation reservation_;
};

}  // namespace tollgate::budget
