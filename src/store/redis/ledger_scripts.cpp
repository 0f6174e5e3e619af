#include "store/redis/ledger_scripts.hpp"

namespace tollgate::store::redis {
namespace {

// Moves scope hash `k` to the window [ws, we) (0, 0 = lifetime) by the in-process ledger's rule
// (budget/ledger.cpp, roll and starts_fresh): spent starts again from 0 only when the new window
// begins after the stored one ended; a changed period whose window overlaps the old one keeps
// the spend, and so does a change from or to a lifetime budget (a lifetime window never ends). An
// older window than the stored one (a settle retried after a reset, a clock behind the others')
// never moves it back: the stored, newer window pays. A scope never seen starts fresh.
// `expire` keeps a window's counters a day past its end (late settles) and a lifetime's forever.
constexpr const char* kRoll = R"lua(
local function roll(k, ws, we)
  local v = redis.call('HMGET', k, 'ws', 'we')
  if not v[1] then
    redis.call('HSET', k, 'ws', ws, 'we', we, 'spent', 0, 'unknown', 0)
    return
  end
  local sws, swe, nws, nwe = tonumber(v[1]), tonumber(v[2]), tonumber(ws), tonumber(we)
  if nws == sws and nwe == swe then return end
  if (nws == 0 and nwe == 0) or swe == 0 then
    redis.call('HSET', k, 'ws', ws, 'we', we)
    return
  end
  if nws < sws then return end
  if nws >= swe then
    redis.call('HSET', k, 'ws', ws, 'we', we, 'spent', 0, 'unknown', 0)
  else
    redis.call('HSET', k, 'ws', ws, 'we', we)
  end
end
local function expire(k)
  local we = tonumber(redis.call('HGET', k, 'we') or '0')
  if we > 0 then redis.call('PEXPIREAT', k, we + 86400000) else redis.call('PERSIST', k) end
end
)lua";

std::string reserve_text() {
  return std::string(kRoll) + R"lua(
-- An id named before the reserve (ARGV[8] > 0) whose reserve grants nothing is kept in the
-- instance's `refused` set for ARGV[8] ms: should the instance die before the release of its
-- durable reserve record commits, a survivor writes that release.
local function refused(code)
  local keep = tonumber(ARGV[8])
  if keep > 0 then
    redis.call('ZADD', KEYS[4], ARGV[6], ARGV[1])
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. string.format('%.0f', tonumber(ARGV[6]) - keep))
    redis.call('PEXPIRE', KEYS[4], keep)
  end
  return code
end
local floor = redis.call('GET', KEYS[1])
if not floor then return refused({-2}) end
if redis.call('EXISTS', KEYS[2]) == 1 or tonumber(ARGV[1]) <= tonumber(floor) then return refused({-3}) end
local n = #KEYS - 4
local minv, maxv, share = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local spent = {}
local head = nil
local tight = 0
for i = 1, n do
  local k = KEYS[4 + i]
  local b = 8 + (i - 1) * 3
  roll(k, ARGV[b + 2], ARGV[b + 3])
  local v = redis.call('HMGET', k, 'spent', 'reserved')
  local sp, rs = tonumber(v[1] or '0'), tonumber(v[2] or '0')
  spent[i] = v[1] or '0'
  local limit = tonumber(ARGV[b + 1])
  if limit >= 0 then
    local committed = sp + rs
    local room = 0
    if committed <= limit then room = limit - committed end
    if committed > limit or room < minv then
      return refused({-1, i - 1, ARGV[b + 1], string.format('%.0f', committed)})
    end
    if head == nil or room < head then head = room; tight = i - 1 end
  end
end
local g = maxv
local gs = ARGV[3]
if head ~= nil then
  local sh = math.floor(head / 100) * share + math.floor((head % 100) * share / 100)
  if maxv > sh then
    g = math.min(maxv, math.min(head, math.max(minv, sh)))
    gs = string.format('%.0f', g)
  end
end
if g <= 0 then return refused({0}) end
for i = 1, n do
  local k = KEYS[4 + i]
  redis.call('HINCRBY', k, 'reserved', gs)
  expire(k)
end
redis.call('HSET', KEYS[2], 'amt', gs, 'own', ARGV[5], 'at', ARGV[6], 'sc', ARGV[7])
redis.call('SADD', KEYS[3], ARGV[1])
local out = {1, gs, tight}
for i = 1, n do out[3 + i] = spent[i] end
return out
)lua";
}

std::string settle_text() {
  return std::string(kRoll) + R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return -2 end
local amt = redis.call('HGET', KEYS[2], 'amt')
if not amt then
  -- Settled already, or never reserved (a release after a reserve whose reply was lost): a
  -- tombstone makes that reserve, should it still arrive, refuse (-3) instead of holding forever.
  redis.call('HSET', KEYS[2], 'dead', 1)
  redis.call('PEXPIRE', KEYS[2], 3600000)
  redis.call('SREM', KEYS[3], ARGV[1])
  return 0
end
-- budget::settle_charge: unknown charges the reservation, or the partial usage's price when more.
local charge = '0'
if ARGV[2] == 'actual' then charge = ARGV[3]
elseif ARGV[2] == 'unknown' then
  if tonumber(ARGV[3]) > tonumber(amt) then charge = ARGV[3] else charge = amt end
end
-- Adds to a counter saturating at kMaxCounterNanos (ledger_scripts.hpp).
local function add(k, field, v)
  if tonumber(redis.call('HGET', k, field) or '0') + tonumber(v) >= 9.2e18 then
    redis.call('HSET', k, field, '9200000000000000000')
  else
    redis.call('HINCRBY', k, field, v)
  end
end
for i = 1, #KEYS - 3 do
  local k = KEYS[3 + i]
  local b = 3 + (i - 1) * 2
  local left = redis.call('HINCRBY', k, 'reserved', '-' .. amt)
  if left < 0 then redis.call('HSET', k, 'reserved', 0) end
  if charge ~= '0' then
    roll(k, ARGV[b + 1], ARGV[b + 2])
    add(k, 'spent', charge)
    if ARGV[2] == 'unknown' then add(k, 'unknown', charge) end
    expire(k)
  end
end
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
)lua";
}

}  // namespace

std::string rebuild_write_text() {
  return R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call(ARGV[2], KEYS[3], unpack(ARGV, 3))
return 1
)lua";
}

std::string rebuild_finish_text() {
  return R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if tonumber(redis.call('GET', KEYS[3]) or '0') < tonumber(ARGV[2]) then redis.call('SET', KEYS[3], ARGV[2]) end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return 1
)lua";
}

const Script& rebuild_write_script() {
  static const Script s(rebuild_write_text());
  return s;
}

const Script& rebuild_finish_script() {
  static const Script s(rebuild_finish_text());
  return s;
}

const Script& reserve_script() {
  static const Script s(reserve_text());
  return s;
}

const Script& settle_script() {
  static const Script s(settle_text());
  return s;
}

}  // namespace tollgate::store::redis
