#pragma once
/// The Lua scripts of the Redis ledger (store/redis/redis_ledger.hpp). Each runs atomically on the
/// server (https://redis.io/docs/interact/programmability/eval-intro/): no other command runs
/// between its reads and its writes, which is what makes a reservation over several scopes all or
/// none across every instance. Money travels as decimal strings and is added with HINCRBY (exact
/// int64 on the server); Lua compares amounts as doubles, exact below 2^53 nano-dollars ($9M).
///
/// Key layout (P = the key prefix, default "tollgate:"):
///  - P s:<kind>:<id>  hash: ws, we (window start/end ms of `spent`; 0 = lifetime), spent,
///    unknown, reserved (nano-dollars)
///  - P r:<id>         hash: amt, own (owning instance), at (ms), sc (JSON scopes)
///  - P own:<instance> set of that instance's open reservation ids
///  - P refused:<instance>  sorted set (score: ms) of ids the instance named before their reserve
///    and that were granted nothing: their durable reserve records need a release
///  - P lease:<instance>  string with a TTL: the instance is alive while it exists
///  - P instances      set of instances that ever held reservations
///  - P seq            reservation id counter (blocks handed out with INCRBY)
///  - P ready          the counters are built (absent after a Redis restart: rebuilt from the store);
///    its value is the id floor: every id at or below it may be in the durable ledger already

#include "store/redis/redis_client.hpp"

namespace tollgate::store::redis {

/// Where the Redis ledger's spent and unknown counters saturate, nano-dollars (the in-process
/// ledger saturates at kMaxNanos): the scripts read counters as Lua numbers (doubles), which must
/// convert back to integers below 2^63 in their replies, and HINCRBY fails past INT64_MAX. The
/// settle script and the rebuild from the store clamp to it; a budget above it never refuses.
inline constexpr std::int64_t kMaxCounterNanos = 9'200'000'000'000'000'000;

/// reserve. KEYS: ready, r:<id>, own:<instance>, refused:<instance>, then each distinct scope key.
/// ARGV: id, min, max, share_percent, instance, now_ms, scopes JSON, keep ms (> 0: the id was
/// named before the reserve; if nothing is granted it is added to `refused` with score now_ms,
/// and entries older than keep ms are dropped), then per scope: limit (nano-dollars, -1 =
/// tracked, never refused), window start ms, window end ms.
/// Reply: {1, grant, tightest index (0-based), spent of each scope...} | {0} nothing granted |
/// {-1, refusing index, limit, committed} | {-2} not ready | {-3} id already used, or at or below
/// the floor in `ready` (a block taken before a rebuild: take a new one).
const Script& reserve_script();

/// settle. KEYS: ready, r:<id>, own:<owner>, then the reservation's scope keys.
/// ARGV: id, kind ("actual" | "no_usage" | "unknown"), actual nano-dollars, then per scope: window
/// start ms, window end ms (the windows containing the settle instant). The charge is
/// budget::settle_charge's (unknown: the reservation, or `actual` when more), added to each
/// scope's spent saturating at kMaxCounterNanos.
/// Reply: 1 settled | 0 no such open reservation (already settled: a no-op; a tombstone then keeps
/// a late reserve of that id from holding anything) | -2 not ready.
const Script& settle_script();

/// One write of a rebuild, fenced: KEYS: ready, rebuild lock, target key; ARGV: token, command,
/// its arguments after the key. Runs `command target args...` only while the counters are not
/// built and the lock still holds this rebuild's token (a rebuild that lost its lock, or finished
/// late, can never overwrite live counters). Reply: 1 written | 0 fenced off.
const Script& rebuild_write_script();

/// The end of a rebuild: KEYS: ready, rebuild lock, seq; ARGV: token, id floor. If the lock still
/// holds the token and the counters are not built: seq is raised to the floor, `ready` is set to
/// the floor and the lock released. Reply: 1 done | 0 fenced off.
const Script& rebuild_finish_script();

}  // namespace tollgate::store::redis
