#include "budget/ledger.hpp"

#include "budget/scope_table.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

namespace tollgate::budget {

namespace detail {

/// One scope's counters. Lives in a shard's ScopeTable node (stable address: an entry is erased
/// only by forget_ended, and only while no reservation holds it), guarded by that shard's mutex.
struct LedgerEntry {
  Nanos spent = 0;
  Nanos reserved = 0;
  Nanos unknown = 0;
  Nanos max_budget = 0;
  bool has_max_budget = false;
  std::optional<BudgetPeriod> period;  // of the current window; nullopt = lifetime (or just loaded)
  SystemTime window_start = SystemTime::min();
  SystemTime window_end = SystemTime::min();  // min: the window must be computed before use
};

}  // namespace detail

namespace {

using detail::LedgerEntry;

Nanos sat_add(Nanos a, Nanos b) {
  Nanos out = 0;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? kMaxNanos : std::numeric_limits<Nanos>::min();
  return out;
}

// The window of a scope with `period` containing `now`.
Window current_window(const std::optional<BudgetPeriod>& period, SystemTime now, const ResetTimezone& tz) {
  if (!period) return {SystemTime::min(), SystemTime::max()};
  return window_of(*period, now, tz);
}

// Whether moving from the entry's window to `w` starts a fresh window (spent back to 0). Only
// when `w` begins after the old window ended: a changed period whose new window overlaps the old
// one keeps the spend (conservative). A loaded entry has window_end == window_start, so any later
// window resets it and the same window keeps it.
bool starts_fresh(const LedgerEntry& e, const Window& w) {
  return w.start > e.window_start && w.start >= e.window_end;
}

// Rolls `e` to the window of `period` containing `now` if its window ended or its period changed.
void roll(LedgerEntry& e, const std::optional<BudgetPeriod>& period, SystemTime now, const ResetTimezone& tz) {
  if (e.period == period && now < e.window_end) return;
  const Window w = current_window(period, now, tz);
  if (starts_fresh(e, w)) {
    e.spent = 0;
    e.unknown = 0;
  }
  e.window_start = w.start;
  e.window_end = w.end;
  e.period = period;
}

// Per-call scratch, reused per thread so a reservation allocates only its Reservation.
struct Slot {
  std::size_t hash;
  std::uint32_t shard;
  std::uint32_t index;  // position in the caller's list
  LedgerEntry* entry;
  bool duplicate;
};

std::size_t round_up_pow2(std::size_t n) {
  std::size_t p = 1;
  while (p < n && p < (std::size_t{1} << 20)) p <<= 1;
  return p;
}

}  // namespace

struct alignas(64) Ledger::Shard {
  mutable std::mutex mutex;
  ScopeTable<LedgerEntry> entries;
};

std::string_view to_string(SettleKind kind) {
  switch (kind) {
    case SettleKind::actual: return "actual";
    case SettleKind::no_usage: return "no_usage";
    case SettleKind::unknown: return "unknown";
  }
  return "unknown";
}

std::string_view to_string(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::budget_exceeded: return "budget_exceeded";
    case RefusalReason::invalid_amount: return "invalid_amount";
    case RefusalReason::observer_rejected: return "observer_rejected";
  }
  return "budget_exceeded";
}

// ---- Reservation ----

Reservation::Reservation(Reservation&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      id_(std::exchange(other.id_, 0)),
      amount_(std::exchange(other.amount_, 0)),
      reserved_at_(other.reserved_at_),
      reduced_(other.reduced_),
      binding_scope_(other.binding_scope_),
      holds_(std::move(other.holds_)),
      shared_scopes_(std::move(other.shared_scopes_)) {
  other.holds_.clear();
  other.shared_scopes_.clear();
}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = std::exchange(other.id_, 0);
    amount_ = std::exchange(other.amount_, 0);
    reserved_at_ = other.reserved_at_;
    reduced_ = other.reduced_;
    binding_scope_ = other.binding_scope_;
    holds_ = std::move(other.holds_);
    shared_scopes_ = std::move(other.shared_scopes_);
    other.holds_.clear();
    other.shared_scopes_.clear();
  }
  return *this;
}

Reservation Reservation::shared(const void* owner, ReservationId id, Nanos amount, SystemTime reserved_at, bool reduced,
                                std::size_t binding_scope, std::vector<ScopeLimit> scopes) {
  Reservation r;
  if (amount <= 0 || scopes.empty() || owner == nullptr) return r;
  r.owner_ = owner;
  r.id_ = id;
  r.amount_ = amount;
  r.reserved_at_ = reserved_at;
  r.reduced_ = reduced;
  r.binding_scope_ = binding_scope;
  r.shared_scopes_ = std::move(scopes);
  return r;
}

void Reservation::clear() noexcept {
  owner_ = nullptr;
  id_ = 0;
  amount_ = 0;
  holds_.clear();
  shared_scopes_.clear();
}

// ---- Ledger ----

Ledger::Ledger(LedgerOptions options)
    : options_(options),
      shard_count_(round_up_pow2(options.shards == 0 ? 1 : options.shards)),
      shards_(std::make_unique<Shard[]>(shard_count_)),
      next_id_(options.first_reservation_id == 0 ? 1 : options.first_reservation_id) {}

Ledger::~Ledger() = default;

namespace {

// Locks the distinct shards of sorted `slots` in ascending order; unlocks on destruction.
template <typename ShardT>
class MultiLock {
 public:
  MultiLock(ShardT* shards, const std::vector<Slot>& slots) : shards_(shards), slots_(slots) {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (i > 0 && slots_[i].shard == slots_[i - 1].shard) continue;
      shards_[slots_[i].shard].mutex.lock();
      locked_ = i + 1;
    }
  }
  ~MultiLock() {
    for (std::size_t i = 0; i < locked_; ++i) {
      if (i > 0 && slots_[i].shard == slots_[i - 1].shard) continue;
      shards_[slots_[i].shard].mutex.unlock();
    }
  }
  MultiLock(const MultiLock&) = delete;
  MultiLock& operator=(const MultiLock&) = delete;

 private:
  ShardT* shards_;
  const std::vector<Slot>& slots_;
  std::size_t locked_ = 0;
};

}  // namespace

std::expected<Reservation, Refusal> Ledger::reserve(std::span<const ScopeLimit> scopes, Nanos amount,
                                                    SystemTime now) {
  return reserve(scopes, AmountRange{amount, amount, 100}, now);
}

namespace {

// The grant of AmountRange for the smallest headroom `h` (>= range.min).
Nanos grant_for(const AmountRange& range, Nanos h) {
  // floor(h * share / 100) without overflow (h may be near INT64_MAX).
  const Nanos p = range.share_percent;
  const Nanos share = h / 100 * p + h % 100 * p / 100;
  if (range.max <= share) return range.max;
  return std::min(range.max, std::min(h, std::max(range.min, share)));
}

}  // namespace

std::expected<Reservation, Refusal> Ledger::reserve(std::span<const ScopeLimit> scopes, AmountRange range,
                                                    SystemTime now) {
  if (range.min < 0 || range.max < range.min || range.share_percent < 1 || range.share_percent > 100) {
    Refusal r;
    r.reason = RefusalReason::invalid_amount;
    r.requested = range.min < 0 ? range.min : range.max;
    return std::unexpected(std::move(r));
  }
  if (range.max == 0 || scopes.empty()) return Reservation{};

  thread_local std::vector<Slot> slots;
  slots.clear();
  const std::size_t mask = shard_count_ - 1;
  for (std::size_t i = 0; i < scopes.size(); ++i) {
    const std::size_t h = ScopeIdHash{}(scopes[i].scope);
    slots.push_back(Slot{h, static_cast<std::uint32_t>(h & mask), static_cast<std::uint32_t>(i), nullptr, false});
  }
  // Ascending shard order is the global lock order; equal hashes end up adjacent for dedup.
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
    if (a.shard != b.shard) return a.shard < b.shard;
    if (a.hash != b.hash) return a.hash < b.hash;
    return a.index < b.index;
  });

  Reservation out;
  std::optional<Refusal> refusal;
  std::uint32_t refusing_index = 0;
  Nanos headroom = kMaxNanos;           // the smallest headroom over the scopes
  std::uint32_t tightest = UINT32_MAX;  // its index in the caller's list
  Nanos amount = range.max;
  {
    MultiLock<Shard> lock(shards_.get(), slots);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      Slot& s = slots[i];
      const ScopeLimit& limit = scopes[s.index];
      auto& map = shards_[s.shard].entries;
      s.entry = &map.find_or_add(s.hash, limit.scope);
      for (std::size_t j = i; j > 0 && slots[j - 1].shard == s.shard && slots[j - 1].hash == s.hash; --j) {
        if (slots[j - 1].entry == s.entry) {
          s.duplicate = true;
          break;
        }
      }
      LedgerEntry& e = *s.entry;
      if (!s.duplicate) roll(e, limit.period, now, options_.reset_timezone);
      const Nanos committed = sat_add(e.spent, e.reserved);
      const Nanos max_budget = limit.max_budget < 0 ? 0 : limit.max_budget;
      // kMaxNanos is no limit (a scope without a budget): it never refuses, even once its spend
      // saturated at kMaxNanos (an upstream that reported absurd usage), as the Redis ledger.
      const Nanos room = max_budget == kMaxNanos ? kMaxNanos : committed <= max_budget ? max_budget - committed : 0;
      if (room < headroom || (room == headroom && s.index < tightest)) {
        headroom = room;
        tightest = s.index;
      }
      const bool fits = (max_budget == kMaxNanos || committed <= max_budget) && range.min <= room;
      if (!fits && (!refusal || s.index < refusing_index)) {
        refusing_index = s.index;
        refusal.emplace();
        refusal->scope = limit.scope;
        refusal->limit = max_budget;
        refusal->committed = committed;
        refusal->requested = range.min;
        refusal->resets_at = e.window_end;
      }
    }
    if (!refusal) amount = grant_for(range, headroom);
    if (!refusal && amount > 0) {
      out.holds_.reserve(slots.size());
      for (const Slot& s : slots) {
        LedgerEntry& e = *s.entry;
        const ScopeLimit& limit = scopes[s.index];
        if (s.duplicate) {  // the same scope listed twice: remember the smaller limit
          e.max_budget = std::min(e.max_budget, limit.max_budget);
          continue;
        }
        e.max_budget = limit.max_budget;
        e.has_max_budget = true;
        e.reserved = sat_add(e.reserved, amount);
        out.holds_.push_back(Reservation::Hold{s.shard, s.entry});
      }
    }
  }
  if (refusal) return std::unexpected(std::move(*refusal));

  if (amount == 0) return Reservation{};  // min 0 and nothing left: an empty grant holds nothing
  out.owner_ = this;
  out.id_ = next_id_.fetch_add(1, std::memory_order_relaxed);
  out.amount_ = amount;
  out.reserved_at_ = now;
  out.reduced_ = amount < range.max;
  if (out.reduced_) out.binding_scope_ = tightest;
  if (options_.observer != nullptr && !options_.observer->on_reserve(out.id_, scopes, amount, now)) {
    release(out, 0, false, now);
    Refusal r;
    r.reason = RefusalReason::observer_rejected;
    r.requested = amount;
    return std::unexpected(std::move(r));
  }
  return out;
}

void Ledger::reserve_async(std::vector<ScopeLimit> scopes, AmountRange amount, SystemTime now, ReserveDone done) {
  done(reserve(scopes, amount, now));
}

void Ledger::release(Reservation& reservation, Nanos charge, bool count_unknown, SystemTime now) noexcept {
  std::uint32_t locked = UINT32_MAX;
  for (const Reservation::Hold& h : reservation.holds_) {
    if (h.shard != locked) {
      if (locked != UINT32_MAX) shards_[locked].mutex.unlock();
      shards_[h.shard].mutex.lock();
      locked = h.shard;
    }
    LedgerEntry& e = *h.entry;
    e.reserved = std::max<Nanos>(0, e.reserved - reservation.amount_);
    if (charge > 0) {
      roll(e, e.period, now, options_.reset_timezone);
      e.spent = sat_add(e.spent, charge);
      if (count_unknown) e.unknown = sat_add(e.unknown, charge);
    }
  }
  if (locked != UINT32_MAX) shards_[locked].mutex.unlock();
  reservation.clear();
}

void Ledger::settle(Reservation&& reservation, Nanos actual, SettleKind kind, SystemTime now) noexcept {
  if (reservation.empty() || reservation.owner_ != this) return;
  const Nanos charge = settle_charge(kind, reservation.amount_, actual);
  const ReservationId id = reservation.id_;
  const Nanos reserved = reservation.amount_;
  release(reservation, charge, kind == SettleKind::unknown, now);
  if (options_.observer != nullptr) options_.observer->on_settle(id, reserved, charge, kind, now);
}

std::optional<ScopeState> Ledger::state(const ScopeId& scope, SystemTime now) const {
  const std::size_t h = ScopeIdHash{}(scope);
  const Shard& shard = shards_[h & (shard_count_ - 1)];
  std::lock_guard lock(shard.mutex);
  const LedgerEntry* found = shard.entries.find(h, scope);
  if (found == nullptr) return std::nullopt;
  const LedgerEntry& e = *found;
  ScopeState out;
  out.spent = e.spent;
  out.reserved = e.reserved;
  out.unknown = e.unknown;
  out.window_start = e.window_start;
  out.window_end = e.window_end;
  if (e.has_max_budget) out.max_budget = e.max_budget;
  out.period = e.period;
  if (e.period && now >= e.window_end) {  // report the rolled view without changing the ledger
    const Window w = current_window(e.period, now, options_.reset_timezone);
    if (starts_fresh(e, w)) {
      out.spent = 0;
      out.unknown = 0;
    }
    out.window_start = w.start;
    out.window_end = w.end;
  }
  return out;
}

void Ledger::load(const ScopeId& scope, Nanos spent, SystemTime window_start, std::optional<BudgetPeriod> period) {
  const std::size_t h = ScopeIdHash{}(scope);
  Shard& shard = shards_[h & (shard_count_ - 1)];
  std::lock_guard lock(shard.mutex);
  LedgerEntry& e = shard.entries.find_or_add(h, scope);
  e.spent = std::max<Nanos>(0, spent);
  e.unknown = 0;
  e.period = period;
  e.window_start = window_start;
  // Unknown period: the next reservation recomputes the window. Known: the window's own end.
  e.window_end = period ? window_of(*period, window_start, options_.reset_timezone).end : window_start;
}

std::size_t Ledger::forget_ended(SystemTime now) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    // reserved == 0 means no Reservation holds the entry (a hold always has a positive amount in
    // it), so erasing it invalidates no pointer.
    n += shards_[i].entries.erase_if([now](ScopeKind, std::string_view, const LedgerEntry& e) {
      return e.reserved == 0 && e.period && now >= e.window_end;
    });
  }
  return n;
}

std::size_t Ledger::scope_count() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    n += shards_[i].entries.size();
  }
  return n;
}

std::vector<ScopeId> Ledger::scope_ids(ScopeKind kind) const {
  std::vector<ScopeId> out;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    shards_[i].entries.for_each([&](ScopeKind k, std::string_view id, const LedgerEntry&) {
      if (k == kind) out.push_back(ScopeId{k, std::string(id)});
    });
  }
  return out;
}

// ---- ReservationGuard ----

ReservationGuard::ReservationGuard(BudgetLedger& ledger, Reservation reservation, const WallClock& clock) noexcept
    : ledger_(&ledger), clock_(&clock), reservation_(std::move(reservation)) {}

ReservationGuard::ReservationGuard(ReservationGuard&& other) noexcept
    : ledger_(std::exchange(other.ledger_, nullptr)),
      clock_(std::exchange(other.clock_, nullptr)),
      reservation_(std::move(other.reservation_)) {}

ReservationGuard& ReservationGuard::operator=(ReservationGuard&& other) noexcept {
  if (this != &other) {
    if (active()) settle(0, SettleKind::unknown);
    ledger_ = std::exchange(other.ledger_, nullptr);
    clock_ = std::exchange(other.clock_, nullptr);
    reservation_ = std::move(other.reservation_);
  }
  return *this;
}

ReservationGuard::~ReservationGuard() {
  if (active()) settle(0, SettleKind::unknown);
}

void ReservationGuard::settle(Nanos actual, SettleKind kind, SystemTime now) noexcept {
  if (ledger_ == nullptr || reservation_.empty()) return;
  ledger_->settle(std::move(reservation_), actual, kind, now);
}

void ReservationGuard::settle(Nanos actual, SettleKind kind) noexcept {
  if (ledger_ == nullptr || reservation_.empty() || clock_ == nullptr) return;
  settle(actual, kind, clock_->now());
}

Reservation ReservationGuard::release() noexcept { return std::move(reservation_); }

}  // namespace tollgate::budget
