#include "store/redis/redis_ledger.hpp"

#include <unistd.h>

#include <boost/json.hpp>
#include <future>
#include <random>
#include <spdlog/spdlog.h>

#include "store/redis/ledger_scripts.hpp"

namespace tollgate::store::redis {
namespace {

using budget::Nanos;
using budget::ScopeLimit;
using std::chrono::milliseconds;

std::int64_t to_ms(budget::SystemTime t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

std::string default_instance_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device rd;
  const auto salt = (static_cast<std::uint64_t>(rd()) << 32) | rd();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%012llx", static_cast<unsigned long long>(salt & 0xffffffffffffULL));
  return std::string(host[0] ? host : "tollgate") + ":" + std::to_string(::getpid()) + ":" + buf;
}

budget::Refusal unavailable(Nanos requested) {
  budget::Refusal r;
  r.reason = budget::RefusalReason::observer_rejected;
  r.requested = requested;
  return r;
}

std::string limit_text(Nanos max_budget) {
  if (max_budget >= budget::kMaxNanos) return "-1";
  return std::to_string(max_budget < 0 ? 0 : max_budget);
}

/// How long a scope's refusal keeps an attempt that would not fit from naming its id early.
constexpr std::chrono::milliseconds kRefusalMemory{1000};

bool is_code(const ReplyResult& r, long long code) {
  if (!r) return false;
  if (r->type == Reply::Type::integer) return r->integer == code;
  if (r->type == Reply::Type::array && !r->elements.empty()) return r->elements[0].as_integer() == code;
  return false;
}

}  // namespace

/// The distinct scopes of one reservation, with their keys and the windows at one instant.
struct RedisLedger::ScopeArgs {
  std::vector<ScopeLimit> scopes;    // distinct, in the caller's order of first appearance
  std::vector<std::size_t> index;    // each one's index in the caller's list
  std::vector<std::string> keys;
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;
  std::string json;                  // [[kind, id, period], ...] as the reservation record keeps it
};

/// A settlement waiting to be applied (or retried).
struct RedisLedger::Pending {
  std::uint64_t id = 0;
  std::string owner_set;
  std::vector<std::string> keys;
  std::vector<std::string> args;
};

RedisLedger::RedisLedger(std::shared_ptr<RedisClient> client, RedisLedgerOptions options, std::shared_ptr<Store> store)
    : options_(std::move(options)), store_(std::move(store)), client_(std::move(client)) {
  if (options_.instance_id.empty()) options_.instance_id = default_instance_id();
  if (options_.id_block == 0) options_.id_block = 1;
  lease_thread_ = std::thread([this] { renew_loop(); });
  thread_ = std::thread([this] {
    const auto every = std::clamp<milliseconds>(options_.lease / 3, milliseconds(50), milliseconds(1000));
    std::unique_lock lock(wake_mutex_);
    while (!stop_) {
      lock.unlock();
      try {
        tick();
      } catch (const std::exception& e) {
        spdlog::error("redis ledger: background duties failed: {}", e.what());
      }
      lock.lock();
      wake_.wait_for(lock, every, [this] { return stop_; });
    }
  });
}

RedisLedger::~RedisLedger() {
  {
    std::lock_guard lock(wake_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  lease_thread_.join();
  retry_pending();
  bool clean = false;
  {
    std::lock_guard lock(mutex_);
    clean = pending_.empty();
  }
  if (clean) {
    // Nothing left to settle: leave no lease for a survivor to wait out.
    auto open = client_->call({"SCARD", key("own:" + options_.instance_id)});
    if (open && open->as_integer() == 0) {
      client_->call({"DEL", key("lease:" + options_.instance_id)});
      client_->call({"SREM", key("instances"), options_.instance_id});
    }
  }
  // The client may outlive this ledger (rate limits and circuit sync share it): no callback of
  // ours may run after this point.
  std::unique_lock lock(mutex_);
  idle_.wait_for(lock, std::chrono::seconds(10), [this] { return inflight_.load() == 0; });
}

ReplyDone RedisLedger::tracked(ReplyDone done) {
  ++inflight_;
  return [this, done = std::move(done)](ReplyResult r) {
    done(std::move(r));
    std::lock_guard lock(mutex_);
    if (--inflight_ == 0) idle_.notify_all();
  };
}

void RedisLedger::renew_loop() {
  const auto every = std::clamp<milliseconds>(options_.lease / 3, milliseconds(50), milliseconds(1000));
  std::unique_lock lock(wake_mutex_);
  while (!stop_) {
    lock.unlock();
    // Queued, never awaited: a slow recovery round on the other thread cannot let the lease lapse.
    client_->submit({"SET", key("lease:" + options_.instance_id), "1", "PX", std::to_string(options_.lease.count())},
                    tracked([](ReplyResult) {}));
    std::string token;
    {
      std::lock_guard g(mutex_);
      token = rebuild_token_;
    }
    if (!token.empty())
      client_->eval(rebuild_write_script(), {key("ready"), key("rebuild"), key("rebuild")},
                    {token, "PEXPIRE", std::to_string(kRebuildLockMs)}, tracked([](ReplyResult) {}));
    lock.lock();
    wake_.wait_for(lock, every, [this] { return stop_; });
  }
}

void RedisLedger::drop_id_block() {
  std::lock_guard lock(ids_mutex_);
  next_id_ = end_id_ = block_start_ = 0;
  block_confirmed_ = false;
}

std::string RedisLedger::scope_key(const budget::ScopeId& scope) const {
  return key("s:" + std::string(budget::to_string(scope.kind)) + ":" + scope.id);
}

std::pair<std::int64_t, std::int64_t> RedisLedger::window_ms(const std::optional<budget::BudgetPeriod>& period,
                                                             budget::SystemTime now) const {
  if (!period) return {0, 0};
  const auto w = budget::window_of(*period, now, options_.reset_timezone);
  return {to_ms(w.start), to_ms(w.end)};
}

std::shared_ptr<RedisLedger::ScopeArgs> RedisLedger::prepare(std::vector<ScopeLimit>& scopes, budget::AmountRange amount,
                                                             budget::SystemTime now, budget::ReserveDone& done) const {
  if (amount.min < 0 || amount.max < amount.min || amount.share_percent < 1 || amount.share_percent > 100) {
    budget::Refusal r;
    r.reason = budget::RefusalReason::invalid_amount;
    r.requested = amount.min < 0 ? amount.min : amount.max;
    done(std::unexpected(std::move(r)));
    return nullptr;
  }
  if (amount.max == 0 || scopes.empty()) {
    done(budget::Reservation{});
    return nullptr;
  }
  auto args = std::make_shared<ScopeArgs>();
  boost::json::array sc;
  for (std::size_t i = 0; i < scopes.size(); ++i) {
    auto& s = scopes[i];
    bool dup = false;
    for (auto& seen : args->scopes)
      if (seen.scope == s.scope) {
        seen.max_budget = std::min(seen.max_budget, s.max_budget);  // held once, against the smaller limit
        dup = true;
        break;
      }
    if (dup) continue;
    args->keys.push_back(scope_key(s.scope));
    args->windows.push_back(window_ms(s.period, now));
    sc.push_back(boost::json::array{budget::to_string(s.scope.kind), s.scope.id,
                                    s.period ? budget::to_string(*s.period) : std::string()});
    args->index.push_back(i);
    args->scopes.push_back(std::move(s));
  }
  args->json = boost::json::serialize(sc);
  return args;
}

void RedisLedger::reserve_async(std::vector<ScopeLimit> scopes, budget::AmountRange amount, budget::SystemTime now,
                                budget::ReserveDone done) {
  if (auto args = prepare(scopes, amount, now, done)) reserve_args(std::move(args), amount, now, std::move(done), 0);
}

void RedisLedger::reserve_as_async(std::uint64_t id, std::vector<ScopeLimit> scopes, budget::AmountRange amount,
                                   budget::SystemTime now, budget::ReserveDone done) {
  if (auto args = prepare(scopes, amount, now, done))
    reserve_with_id(id, std::move(args), amount, now, std::move(done), 0, true);
}

std::optional<std::uint64_t> RedisLedger::take_reservation_id(const std::vector<ScopeLimit>& scopes,
                                                              budget::AmountRange amount, budget::SystemTime now) {
  if (amount.max == 0 || scopes.empty()) return std::nullopt;
  {
    std::lock_guard lock(mutex_);
    const auto steady = std::chrono::steady_clock::now();
    for (const auto& s : scopes) {
      if (s.max_budget >= budget::kMaxNanos) continue;
      // Most likely refused: ask first, and write nothing.
      if (auto r = refused_.find(s.scope); r != refused_.end() && steady < r->second.until &&
                                           r->second.limit == s.max_budget &&
                                           budget::saturating_add(r->second.committed, amount.min) > s.max_budget)
        return std::nullopt;
      auto it = cache_.find(s.scope);
      if (it == cache_.end() || now >= it->second.window_end) continue;  // unknown, or a fresh window
      if (budget::saturating_add(it->second.spent, amount.min) > s.max_budget) return std::nullopt;
    }
  }
  std::lock_guard lock(ids_mutex_);
  // Only from a block a grant has confirmed: a block taken from a Redis that lost its data (its
  // `seq` restarted) holds ids the durable ledger may have already.
  if (!block_confirmed_ || next_id_ >= end_id_) return std::nullopt;
  return next_id_++;
}

void RedisLedger::reserve_args(std::shared_ptr<ScopeArgs> args, budget::AmountRange amount, budget::SystemTime now,
                               budget::ReserveDone done, int attempt) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(ids_mutex_);
    if (next_id_ < end_id_) id = next_id_++;
  }
  if (id != 0) {
    reserve_with_id(id, std::move(args), amount, now, std::move(done), attempt, false);
    return;
  }
  const auto block = options_.id_block;
  client_->submit({"INCRBY", key("seq"), std::to_string(block)},
                  tracked([this, args, amount, now, done = std::move(done), block, attempt](ReplyResult r) mutable {
                    const auto top = r ? r->as_integer() : std::nullopt;
                    if (!top || *top < static_cast<long long>(block)) {
                      done(std::unexpected(unavailable(amount.min)));
                      return;
                    }
                    std::uint64_t first = 0;
                    {
                      std::lock_guard lock(ids_mutex_);
                      next_id_ = block_start_ = static_cast<std::uint64_t>(*top) - block + 1;
                      end_id_ = static_cast<std::uint64_t>(*top) + 1;
                      block_confirmed_ = false;
                      first = next_id_++;
                    }
                    reserve_with_id(first, std::move(args), amount, now, std::move(done), attempt, false);
                  }));
}

void RedisLedger::reserve_with_id(std::uint64_t id, std::shared_ptr<ScopeArgs> args, budget::AmountRange amount,
                                  budget::SystemTime now, budget::ReserveDone done, int attempt, bool named) {
  const std::string ids = std::to_string(id);
  std::vector<std::string> keys{key("ready"), key("r:" + ids), key("own:" + options_.instance_id),
                                key("refused:" + options_.instance_id)};
  keys.insert(keys.end(), args->keys.begin(), args->keys.end());
  // Kept past the lease and a survivor's round after it, so that the survivor finds it.
  const auto keep_ms = named ? 3 * options_.lease.count() + 1000 : 0;
  std::vector<std::string> argv{ids,
                                std::to_string(amount.min),
                                std::to_string(amount.max),
                                std::to_string(amount.share_percent),
                                options_.instance_id,
                                std::to_string(to_ms(now)),
                                args->json,
                                std::to_string(keep_ms)};
  for (std::size_t i = 0; i < args->scopes.size(); ++i) {
    argv.push_back(limit_text(args->scopes[i].max_budget));
    argv.push_back(std::to_string(args->windows[i].first));
    argv.push_back(std::to_string(args->windows[i].second));
  }
  client_->eval(reserve_script(), std::move(keys), std::move(argv),
                tracked([this, id, args, amount, now, done = std::move(done), attempt](ReplyResult r) mutable {
                  if (!r) {
                    // It may have run: release whatever it took (a no-op when it did not).
                    auto p = std::make_shared<Pending>();
                    p->id = id;
                    p->owner_set = key("own:" + options_.instance_id);
                    p->keys = args->keys;
                    p->args = {std::to_string(id), "no_usage", "0"};
                    for (const auto& w : args->windows) {
                      p->args.push_back(std::to_string(w.first));
                      p->args.push_back(std::to_string(w.second));
                    }
                    {
                      std::lock_guard lock(mutex_);
                      pending_.push_back(std::move(p));
                    }
                    done(std::unexpected(unavailable(amount.min)));
                    return;
                  }
                  {
                    std::lock_guard lock(mutex_);
                    ++stats_.reserves;
                  }
                  const auto code = r->type == Reply::Type::array && !r->elements.empty()
                                        ? r->elements[0].as_integer()
                                        : std::nullopt;
                  if (!code) {
                    spdlog::error("redis ledger: unexpected reserve reply ({})", r->str);
                    done(std::unexpected(unavailable(amount.min)));
                    return;
                  }
                  const auto& el = r->elements;
                  if (*code == -2) {
                    counters_ready_ = false;
                    drop_id_block();  // ids of a block taken before a rebuild may be in the store
                    wake_.notify_all();
                    done(std::unexpected(unavailable(amount.min)));
                    return;
                  }
                  if (*code == -3) {  // an id already used, or below the floor a rebuild set: a new block
                    drop_id_block();
                    if (attempt == 0) {
                      reserve_args(args, amount, now, std::move(done), 1);
                      return;
                    }
                  }
                  if (*code == -3 || (*code == -1 && el.size() < 4) || (*code == 1 && el.size() < 3 + args->scopes.size())) {
                    done(std::unexpected(unavailable(amount.min)));
                    return;
                  }
                  if (*code == 0) {
                    done(budget::Reservation{});
                    return;
                  }
                  if (*code == -1) {
                    const auto i = static_cast<std::size_t>(el[1].as_integer().value_or(0));
                    budget::Refusal f;
                    f.reason = budget::RefusalReason::budget_exceeded;
                    f.limit = el[2].as_integer().value_or(0);
                    f.committed = el[3].as_integer().value_or(0);
                    if (i < args->scopes.size()) {
                      f.scope = args->scopes[i].scope;
                      f.resets_at = args->windows[i].second == 0
                                        ? budget::SystemTime::max()
                                        : budget::SystemTime(milliseconds(args->windows[i].second));
                      std::lock_guard lock(mutex_);
                      refused_[f.scope] = Refused{f.committed, args->scopes[i].max_budget,
                                                  std::chrono::steady_clock::now() + kRefusalMemory};
                    }
                    f.requested = amount.min;
                    done(std::unexpected(std::move(f)));
                    return;
                  }
                  {
                    std::lock_guard lock(ids_mutex_);
                    if (id >= block_start_ && id < end_id_) block_confirmed_ = true;
                  }
                  const Nanos grant = el[1].as_integer().value_or(0);
                  const auto tight = static_cast<std::size_t>(el[2].as_integer().value_or(0));
                  for (std::size_t i = 0; i < args->scopes.size(); ++i)
                    remember(args->scopes[i], el[3 + i].as_integer().value_or(0), args->windows[i].first,
                             args->windows[i].second);
                  const bool reduced = grant < amount.max;
                  const std::size_t binding = reduced && tight < args->index.size() ? args->index[tight] : SIZE_MAX;
                  done(budget::Reservation::shared(this, id, grant, now, reduced, binding, args->scopes));
                }));
}

void RedisLedger::settle(budget::Reservation&& reservation, Nanos actual, budget::SettleKind kind,
                         budget::SystemTime now) noexcept {
  if (reservation.empty() || reservation.owner() != this) return;
  try {
    auto p = std::make_shared<Pending>();
    p->id = reservation.id();
    p->owner_set = key("own:" + options_.instance_id);
    p->args = {std::to_string(p->id), std::string(budget::to_string(kind)), std::to_string(std::max<Nanos>(0, actual))};
    for (const auto& s : reservation.shared_scopes()) {
      p->keys.push_back(scope_key(s.scope));
      const auto w = window_ms(s.period, now);
      p->args.push_back(std::to_string(w.first));
      p->args.push_back(std::to_string(w.second));
    }
    reservation.clear();
    send_settle(std::move(p));
  } catch (...) {
    // Out of memory building the command: the lease recovery settles it at its full amount.
    reservation.clear();
  }
}

void RedisLedger::send_settle(std::shared_ptr<Pending> p) {
  std::vector<std::string> keys{key("ready"), key("r:" + std::to_string(p->id)), p->owner_set};
  keys.insert(keys.end(), p->keys.begin(), p->keys.end());
  client_->eval(settle_script(), std::move(keys), p->args, tracked([this, p](ReplyResult r) {
    std::lock_guard lock(mutex_);
    if (!r || r->type != Reply::Type::integer || r->integer == -2) {
      if (r && r->type == Reply::Type::error) spdlog::error("redis ledger: settle script failed: {}", r->str);
      if (is_code(r, -2)) counters_ready_ = false;
      pending_.push_back(p);
      return;
    }
    ++stats_.settles;
  }));
}

void RedisLedger::retry_pending() {
  std::vector<std::shared_ptr<Pending>> again;
  {
    std::lock_guard lock(mutex_);
    again.swap(pending_);
  }
  if (again.empty()) return;
  std::vector<std::future<void>> waits;
  for (auto& p : again) {
    auto done = std::make_shared<std::promise<void>>();
    waits.push_back(done->get_future());
    std::vector<std::string> keys{key("ready"), key("r:" + std::to_string(p->id)), p->owner_set};
    keys.insert(keys.end(), p->keys.begin(), p->keys.end());
    client_->eval(settle_script(), std::move(keys), p->args, [this, p, done](ReplyResult r) {
      {
        std::lock_guard lock(mutex_);
        if (!r || r->type != Reply::Type::integer || r->integer == -2) pending_.push_back(p);
        else ++stats_.settles;
      }
      done->set_value();
    });
  }
  for (auto& w : waits) w.wait();
}

void RedisLedger::remember(const ScopeLimit& scope, Nanos spent, std::int64_t ws, std::int64_t we) {
  std::lock_guard lock(mutex_);
  auto& st = cache_[scope.scope];
  st.spent = spent;
  st.window_start = ws == 0 ? budget::SystemTime::min() : budget::SystemTime(milliseconds(ws));
  st.window_end = we == 0 ? budget::SystemTime::max() : budget::SystemTime(milliseconds(we));
  st.max_budget = scope.max_budget;
  st.period = scope.period;
}

std::optional<budget::ScopeState> RedisLedger::state(const budget::ScopeId& scope, budget::SystemTime now) const {
  std::lock_guard lock(mutex_);
  auto it = cache_.find(scope);
  if (it == cache_.end()) return std::nullopt;
  budget::ScopeState st = it->second;
  if (now >= st.window_end) st.spent = 0;  // that window ended: a fresh one
  return st;
}

std::size_t RedisLedger::forget_ended(budget::SystemTime now) {
  std::lock_guard lock(mutex_);
  const auto steady = std::chrono::steady_clock::now();
  std::erase_if(refused_, [steady](const auto& kv) { return steady >= kv.second.until; });
  return std::erase_if(cache_, [now](const auto& kv) { return now >= kv.second.window_end; });
}

bool RedisLedger::ready() const noexcept {
  return client_->reachable() && counters_ready_.load() && ready_epoch_.load() == client_->connection_epoch();
}

RedisLedgerStats RedisLedger::stats() const {
  RedisLedgerStats out;
  {
    std::lock_guard lock(mutex_);
    out = stats_;
    out.pending_settles = pending_.size();
  }
  out.client = client_->stats();
  return out;
}

void RedisLedger::tick() {
  std::lock_guard round(tick_mutex_);
  renew_lease();
  if (!client_->reachable()) {
    counters_ready_ = false;
    return;
  }
  if (!persistence_checked_) {
    persistence_checked_ = true;
    // A Redis that restarts from a snapshot (or fails over to a lagging replica) comes back with
    // old counters and `ready` set: spend since the snapshot is forgotten. Say so once.
    auto save = client_->call({"CONFIG", "GET", "save"});
    auto aof = client_->call({"CONFIG", "GET", "appendonly"});
    const bool snapshots = save && save->type == Reply::Type::array && save->elements.size() == 2 &&
                           !save->elements[1].str.empty();
    const bool appendonly = aof && aof->type == Reply::Type::array && aof->elements.size() == 2 &&
                            aof->elements[1].str == "yes";
    if (snapshots || appendonly)
      spdlog::warn("redis ledger: Redis persists its data (save '{}', appendonly {}): a restart from that data would "
                   "bring back old budget counters; run it without persistence (save '' appendonly no) so that a "
                   "restart comes back empty and is rebuilt from the durable ledger (docs/scale_out.md)",
                   snapshots ? save->elements[1].str : "", appendonly ? "yes" : "no");
  }
  // Checked every round, not only after a failure: a Redis restarted between two rounds comes
  // back empty without this instance seeing an error (the scripts refuse until it is rebuilt).
  const auto epoch = client_->connection_epoch();
  auto r = client_->call({"EXISTS", key("ready")});
  if (!r) {
    counters_ready_ = false;  // unknown until Redis answers again: it may come back empty
    return;
  }
  if (r->as_integer() == 1) {
    counters_ready_ = true;
  } else {
    counters_ready_ = false;
    rebuild();
  }
  if (counters_ready_) ready_epoch_ = epoch;
  if (!counters_ready_) return;
  retry_pending();
  recover_dead();
}

void RedisLedger::renew_lease() {
  client_->submit({"SET", key("lease:" + options_.instance_id), "1", "PX", std::to_string(options_.lease.count())},
                  [](ReplyResult) {});
  client_->call({"SADD", key("instances"), options_.instance_id});
}

}  // namespace tollgate::store::redis
