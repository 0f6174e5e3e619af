#pragma once
/// The shared budget ledger: the in-process Ledger's twin for several Tollgate instances
/// (DESIGN.md, "Budget admission"; docs/scale_out.md). Every instance reserves and settles through
/// one Redis server with the Lua scripts of store/redis/ledger_scripts.hpp, so a cap holds across
/// any number of instances: a reservation checks and takes every scope at once, all or none, on
/// the server. The durable ledger stays in the Store (PostgreSQL when scaled out): the pipeline
/// appends every reserve before the upstream call and every settle after, as with one instance.
///
/// Liveness: each open reservation is owned by an instance under a lease (a Redis key with a TTL)
/// that the instance renews; when an instance's lease expires, any survivor settles what it left
/// open — at the amount its own durable settle record says when there is one, else at the full
/// reservation (conservative), writing a "recovered" settle record. Redis unreachable: reserves
/// are refused (observer_rejected → 503 ledger_unavailable; free models are not affected),
/// settlements are kept and applied when it is back. Redis restarted empty (no `ready` key): one
/// instance rebuilds the counters from the store (settled spend of current windows, reservations
/// still open) before paid traffic is admitted again.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "budget/budget_ledger.hpp"
#include "store/redis/redis_client.hpp"
#include "store/store.hpp"

namespace tollgate::store::redis {

/// Knobs of the shared ledger (tollgate_settings; every field has a default).
struct RedisLedgerOptions {
  /// Prefix of every key (several clusters may share one Redis with different prefixes).
  std::string key_prefix = "tollgate:";
  /// This instance's id, unique among live instances; empty = hostname:pid:random.
  std::string instance_id;
  /// How long an instance's reservations stay its own without a renewal, milliseconds. A dead
  /// instance's open reservations are settled by a survivor about this long after it died.
  std::chrono::milliseconds lease{10000};
  /// How long reservations rebuilt from the store (after Redis restarted empty) stay held before a
  /// survivor settles them as a dead instance's: at least the longest request, milliseconds.
  std::chrono::milliseconds rebuilt_hold{660000};
  /// The timezone day and month windows reset in.
  budget::ResetTimezone reset_timezone{};
  /// Reservation ids taken from Redis at a time (one INCRBY per block).
  std::uint64_t id_block = 4096;
  /// Before a rebuild reads the durable ledger: time for reserve records still on their way there.
  std::chrono::milliseconds rebuild_settle_wait{1000};
};

/// What the shared ledger did (cheap copy).
struct RedisLedgerStats {
  std::uint64_t reserves = 0;          ///< reserve scripts answered
  std::uint64_t settles = 0;           ///< settle scripts applied (reply 1 or 0)
  std::uint64_t pending_settles = 0;   ///< settlements waiting for Redis
  std::uint64_t recovered = 0;         ///< dead instances' reservations this instance settled
  std::uint64_t rebuilds = 0;          ///< times this instance rebuilt the counters from the store
  ClientStats client;                  ///< round trips and commands
};

/// The Redis ledger. Thread-safe. Starts a background thread (lease renewal, dead-instance
/// recovery, rebuild, retry of pending settlements) that the destructor joins after one last try
/// to apply pending settlements.
class RedisLedger final : public budget::BudgetLedger {
 public:
  /// `client` (not null) reaches the Redis server (it may be shared with RedisRateLimits);
  /// `store` (not null) is the durable ledger: read to rebuild and to recover, appended with
  /// recovered settle records.
  RedisLedger(std::shared_ptr<RedisClient> client, RedisLedgerOptions options, std::shared_ptr<Store> store);
  ~RedisLedger() override;
  RedisLedger(const RedisLedger&) = delete;
  RedisLedger& operator=(const RedisLedger&) = delete;

  void reserve_async(std::vector<budget::ScopeLimit> scopes, budget::AmountRange amount, budget::SystemTime now,
                     budget::ReserveDone done) override;
  /// An id from this instance's block (none when the block is used up: the next reserve takes a
  /// new one), when every scope's last known spend leaves room for `amount.min`.
  [[nodiscard]] std::optional<std::uint64_t> take_reservation_id(const std::vector<budget::ScopeLimit>& scopes,
                                                                 budget::AmountRange amount,
                                                                 budget::SystemTime now) override;
  /// Grants under `id` unless the script refuses it (an id used already, or below a rebuild's
  /// floor): then under an id of a new block.
  void reserve_as_async(std::uint64_t id, std::vector<budget::ScopeLimit> scopes, budget::AmountRange amount,
                        budget::SystemTime now, budget::ReserveDone done) override;
  void settle(budget::Reservation&& reservation, budget::Nanos actual, budget::SettleKind kind,
              budget::SystemTime now) noexcept override;
  [[nodiscard]] std::optional<budget::ScopeState> state(const budget::ScopeId& scope,
                                                        budget::SystemTime now) const override;
  [[nodiscard]] const budget::ResetTimezone& reset_timezone() const noexcept override {
    return options_.reset_timezone;
  }
  std::size_t forget_ended(budget::SystemTime now) override;

  /// Whether paid traffic can be admitted: Redis answered the last command and its counters are built.
  [[nodiscard]] bool ready() const noexcept;
  [[nodiscard]] bool available() const noexcept override { return ready(); }
  /// One round of the background duties, synchronously: renew the lease, rebuild the counters
  /// if Redis lost them, settle dead instances' reservations, retry pending settlements.
  /// Thread-safe: rounds run one at a time (the background thread runs them too).
  void tick();
  [[nodiscard]] RedisLedgerStats stats() const;
  [[nodiscard]] const std::string& instance_id() const noexcept { return options_.instance_id; }
  /// The key of a scope's counters (for tests and operators).
  [[nodiscard]] std::string scope_key(const budget::ScopeId& scope) const;

 private:
  struct Pending;
  struct ScopeArgs;
  /// `named`: the id came from take_reservation_id (the caller may have recorded it durably).
  void reserve_with_id(std::uint64_t id, std::shared_ptr<ScopeArgs> args, budget::AmountRange amount,
                       budget::SystemTime now, budget::ReserveDone done, int attempt, bool named);
  void reserve_args(std::shared_ptr<ScopeArgs> args, budget::AmountRange amount, budget::SystemTime now,
                    budget::ReserveDone done, int attempt);
  /// reserve_async's checks and the distinct scopes; nullptr when `done` was answered already.
  std::shared_ptr<ScopeArgs> prepare(std::vector<budget::ScopeLimit>& scopes, budget::AmountRange amount,
                                     budget::SystemTime now, budget::ReserveDone& done) const;
  void drop_id_block();
  /// Wraps a callback of a command this ledger sent: the destructor waits for every one of them.
  ReplyDone tracked(ReplyDone done);
  void renew_loop();
  void send_settle(std::shared_ptr<Pending> p);
  void renew_lease();
  void rebuild();
  void recover_dead();
  void recover_instance(const std::string& instance);
  /// Writes the releases a dead instance owed for ids it named and was granted nothing under
  /// (its `refused` set); false when the store could not be read or written (try again later).
  bool release_refused(const std::string& instance);
  void retry_pending();
  void remember(const budget::ScopeLimit& scope, budget::Nanos spent, std::int64_t ws, std::int64_t we);
  std::pair<std::int64_t, std::int64_t> window_ms(const std::optional<budget::BudgetPeriod>& period,
                                                  budget::SystemTime now) const;
  std::string key(const std::string& suffix) const { return options_.key_prefix + suffix; }

  RedisLedgerOptions options_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<RedisClient> client_;

  std::mutex ids_mutex_;
  std::uint64_t next_id_ = 0;  // next id of the current block
  std::uint64_t end_id_ = 0;   // one past the block
  std::uint64_t block_start_ = 0;
  bool block_confirmed_ = false;  // a reserve was granted under an id of the block: its ids are safe to name

  mutable std::mutex mutex_;  // pending_, cache_, stats_, rebuild_token_
  std::string rebuild_token_;  // non-empty while this instance rebuilds (the lease thread renews its lock)
  std::atomic<int> inflight_{0};  // commands sent whose callback has not run yet
  std::condition_variable idle_;
  std::vector<std::shared_ptr<Pending>> pending_;
  std::unordered_map<budget::ScopeId, budget::ScopeState> cache_;
  /// A scope's last refusal: while it is fresh, an attempt that would not fit either is asked
  /// first (no id named, nothing written for it).
  struct Refused {
    budget::Nanos committed = 0;
    budget::Nanos limit = 0;
    std::chrono::steady_clock::time_point until{};
  };
  std::unordered_map<budget::ScopeId, Refused> refused_;
  RedisLedgerStats stats_;
  std::atomic<bool> counters_ready_{false};
  std::mutex tick_mutex_;              // one tick() round at a time (background thread and callers)
  bool persistence_checked_ = false;  // under tick_mutex_
  /// The connection epoch on which the counters were last seen built: after a reconnect they are
  /// not trusted until seen again (Redis may have come back empty).
  std::atomic<std::uint64_t> ready_epoch_{~std::uint64_t{0}};

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;        // recovery, rebuild, retries
  std::thread lease_thread_;  // lease (and rebuild lock) renewal only: never waits on anything
};

/// How long a rebuild's lock lives without a renewal, milliseconds.
inline constexpr long long kRebuildLockMs = 30000;

}  // namespace tollgate::store::redis
