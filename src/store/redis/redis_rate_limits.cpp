#include "store/redis/redis_rate_limits.hpp"

#include <chrono>
#include <spdlog/spdlog.h>

namespace tollgate::store::redis {
namespace {

// KEYS: each subject's counter hash. ARGV: minute, prefix, instance, then per subject rpm, tpm,
// max_parallel (-1 = none). Each hash: m (minute), req, tok; its parallel counts per instance live
// in <key>:p, counted only for instances whose lease exists.
// Reply: {0} admitted | {1, index (0-based), limit name}.
const Script& acquire_script() {
  static const Script s(R"lua(
local minute, prefix, me = ARGV[1], ARGV[2], ARGV[3]
local function parallel(k)
  local h = redis.call('HGETALL', k .. ':p')
  local n = 0
  for i = 1, #h, 2 do
    local c = tonumber(h[i + 1])
    if c > 0 then
      if h[i] == me or redis.call('EXISTS', prefix .. 'lease:' .. h[i]) == 1 then n = n + c
      else redis.call('HDEL', k .. ':p', h[i]) end
    end
  end
  return n
end
for i = 1, #KEYS do
  local k = KEYS[i]
  local b = 3 + (i - 1) * 3
  local rpm, tpm, par = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
  local v = redis.call('HMGET', k, 'm', 'req', 'tok')
  local req, tok = 0, 0
  if v[1] == minute then req, tok = tonumber(v[2] or '0'), tonumber(v[3] or '0') end
  if par >= 0 and parallel(k) >= par then return {1, i - 1, 'max_parallel_requests'} end
  if rpm >= 0 and req >= rpm then return {1, i - 1, 'rpm_limit'} end
  if tpm >= 0 and tok >= tpm then return {1, i - 1, 'tpm_limit'} end
end
for i = 1, #KEYS do
  local k = KEYS[i]
  local v = redis.call('HGET', k, 'm')
  if v ~= minute then redis.call('HSET', k, 'm', minute, 'req', 0, 'tok', 0) end
  redis.call('HINCRBY', k, 'req', 1)
  redis.call('PEXPIRE', k, 180000)
  redis.call('HINCRBY', k .. ':p', me, 1)
  redis.call('PEXPIRE', k .. ':p', 3600000)
end
return {0}
)lua");
  return s;
}

// KEYS: the subjects' hashes. ARGV: minute, instance, tokens.
const Script& release_script() {
  static const Script s(R"lua(
local minute, me, tokens = ARGV[1], ARGV[2], ARGV[3]
for i = 1, #KEYS do
  local k = KEYS[i]
  if redis.call('HINCRBY', k .. ':p', me, -1) < 0 then redis.call('HSET', k .. ':p', me, 0) end
  local v = redis.call('HGET', k, 'm')
  if v ~= minute then redis.call('HSET', k, 'm', minute, 'req', 0, 'tok', 0) end
  redis.call('HINCRBY', k, 'tok', tokens)
  redis.call('PEXPIRE', k, 180000)
end
return 0
)lua");
  return s;
}

std::string minute_now() {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::minutes>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::chrono::milliseconds until_next_minute() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto next = std::chrono::duration_cast<std::chrono::minutes>(now) + std::chrono::minutes(1);
  return std::max(std::chrono::milliseconds(1000), std::chrono::ceil<std::chrono::milliseconds>(next - now));
}

std::string opt(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "-1"; }

}  // namespace

RedisRateLimits::RedisRateLimits(std::shared_ptr<RedisClient> client, std::string key_prefix, std::string instance_id,
                                 std::unique_ptr<policy::RateLimiter> fallback)
    : client_(std::move(client)),
      prefix_(std::move(key_prefix)),
      instance_(std::move(instance_id)),
      fallback_(std::move(fallback)) {}

void RedisRateLimits::acquire_async(std::vector<policy::RateSubject> subjects, policy::RateDone done) {
  std::vector<std::string> keys;
  std::vector<std::string> args{minute_now(), prefix_, instance_};
  for (const auto& s : subjects) {
    keys.push_back(prefix_ + "rl:" + s.id);
    args.push_back(opt(s.rpm));
    args.push_back(opt(s.tpm));
    args.push_back(opt(s.max_parallel));
  }
  client_->eval(acquire_script(), std::move(keys), std::move(args),
                [this, subjects = std::move(subjects), done = std::move(done)](ReplyResult r) {
                  if (!r || r->type != Reply::Type::array || r->elements.empty()) {
                    if (!degraded_.exchange(true))
                      spdlog::warn("rate limits: Redis cannot be reached; limits hold per instance until it can");
                    done(fallback_->acquire(subjects));
                    return;
                  }
                  if (degraded_.exchange(false)) spdlog::info("rate limits: shared through Redis again");
                  if (r->elements[0].as_integer() == 0 || r->elements.size() < 3) {
                    done(std::nullopt);
                    return;
                  }
                  const auto i = static_cast<std::size_t>(r->elements[1].as_integer().value_or(0));
                  policy::RateDenial d;
                  d.subject = i < subjects.size() ? subjects[i].id : std::string("unknown");
                  d.limit = r->elements[2].str;
                  d.retry_after = d.limit == "max_parallel_requests" ? std::chrono::milliseconds(1000) : until_next_minute();
                  done(std::move(d));
                });
}

void RedisRateLimits::release(const std::vector<policy::RateSubject>& subjects, std::int64_t tokens) {
  // A request admitted by the fallback during an outage releases there too (harmless if it was
  // admitted by Redis: the fallback clamps its counts at 0).
  if (degraded_) fallback_->release(subjects, tokens);
  std::vector<std::string> keys;
  for (const auto& s : subjects) keys.push_back(prefix_ + "rl:" + s.id);
  client_->eval(release_script(), std::move(keys), {minute_now(), instance_, std::to_string(std::max<std::int64_t>(0, tokens))},
                [](ReplyResult) {});
}

}  // namespace tollgate::store::redis
