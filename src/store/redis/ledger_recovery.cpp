// The Redis ledger's recovery duties (store/redis/redis_ledger.hpp): rebuilding the counters from
// the durable store after Redis lost them, and settling what a dead instance left open.

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>
#include <boost/json.hpp>
#include <map>
#include <spdlog/spdlog.h>

#include "store/ledger_state.hpp"
#include "store/redis/ledger_scripts.hpp"
#include "store/redis/redis_ledger.hpp"

namespace tollgate::store::redis {
namespace {

using budget::Nanos;
using std::chrono::milliseconds;

std::int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A reservation's scopes as its Redis record keeps them: [[kind, id, period], ...].
struct RecordScope {
  budget::ScopeId scope;
  std::optional<budget::BudgetPeriod> period;
  std::string period_text;
};

std::vector<RecordScope> parse_scopes(const std::string& json) {
  std::vector<RecordScope> out;
  boost::system::error_code ec;
  auto v = boost::json::parse(json, ec);
  if (ec || !v.is_array()) return out;
  for (const auto& e : v.as_array()) {
    const auto* a = e.if_array();
    if (a == nullptr || a->size() < 3 || !(*a)[0].is_string() || !(*a)[1].is_string() || !(*a)[2].is_string()) continue;
    auto kind = budget::parse_scope_kind(std::string((*a)[0].as_string()));
    if (!kind) continue;
    RecordScope rs;
    rs.scope = budget::ScopeId{*kind, std::string((*a)[1].as_string())};
    rs.period_text = std::string((*a)[2].as_string());
    if (!rs.period_text.empty())
      if (auto p = budget::parse_budget_duration(rs.period_text)) rs.period = *p;
    out.push_back(std::move(rs));
  }
  return out;
}

std::string scopes_json(const std::vector<LedgerScope>& scopes) {
  boost::json::array a;
  for (const auto& s : scopes) a.push_back(boost::json::array{s.kind, s.id, s.period});
  return boost::json::serialize(a);
}

}  // namespace

void RedisLedger::rebuild() {
  const std::string token = options_.instance_id + ":" + std::to_string(now_ms());
  auto lock = client_->call({"SET", key("rebuild"), token, "NX", "PX", std::to_string(kRebuildLockMs)});
  if (!lock || lock->type != Reply::Type::status) return;  // another instance is rebuilding
  {
    std::lock_guard l(mutex_);
    rebuild_token_ = token;  // the lease thread renews the lock while this runs
  }
  struct Clear {
    RedisLedger& l;
    ~Clear() {
      std::lock_guard g(l.mutex_);
      l.rebuild_token_.clear();
    }
  } clear{*this};
  // A reserve granted just before Redis lost its counters may still be on its way to the store:
  // give it the time a durable append takes before reading the ledger.
  std::this_thread::sleep_for(options_.rebuild_settle_wait);
  auto state = read_ledger_state(*store_);
  if (!state) {
    spdlog::error("redis ledger: cannot read the durable ledger to rebuild the counters: {}", state.error().message);
    client_->call_eval(rebuild_write_script(), {key("ready"), key("rebuild"), key("rebuild")}, {token, "DEL"});
    return;
  }
  const auto now = now_ms();
  struct Counter {
    std::int64_t ws = 0, we = 0;
    Nanos spent = 0, reserved = 0;
    bool have = false;
  };
  std::map<std::string, Counter> counters;
  for (const auto& sp : state->spent) {
    if (sp.scope.window_end_ms != 0 && sp.scope.window_end_ms <= now) continue;  // an ended window
    auto kind = budget::parse_scope_kind(sp.scope.kind);
    if (!kind) continue;
    auto& c = counters[scope_key(budget::ScopeId{*kind, sp.scope.id})];
    if (c.have && c.ws > sp.scope.window_start_ms) continue;  // keep the latest window
    if (!c.have || c.ws < sp.scope.window_start_ms) c = Counter{sp.scope.window_start_ms, sp.scope.window_end_ms, 0, 0, true};
    c.spent = budget::saturating_add(c.spent, sp.spent_nanos);
  }
  std::atomic<bool> failed{false};
  auto check = [&failed](ReplyResult r) {
    if (!r || r->type != Reply::Type::integer || r->integer != 1) failed = true;
  };
  // Every write is fenced (rebuild_write_script): it lands only while this rebuild holds the lock
  // and the counters are not built.
  auto write = [&](std::string target, std::vector<std::string> args) {
    std::vector<std::string> argv{token};
    for (auto& a : args) argv.push_back(std::move(a));
    client_->eval(rebuild_write_script(), {key("ready"), key("rebuild"), std::move(target)}, std::move(argv), check);
  };
  const std::string owner = "rebuilt:" + std::to_string(now);
  for (const auto& rec : state->open) {
    const std::string id = std::to_string(rec.reservation_id);
    for (const auto& sc : rec.scopes) {
      auto kind = budget::parse_scope_kind(sc.kind);
      if (!kind) continue;
      auto& c = counters[scope_key(budget::ScopeId{*kind, sc.id})];
      if (!c.have) c = Counter{sc.window_start_ms, sc.window_end_ms, 0, 0, true};
      c.reserved = budget::saturating_add(c.reserved, rec.amount_nanos);
    }
    write(key("r:" + id), {"HSET", "amt", std::to_string(rec.amount_nanos), "own", owner, "at", std::to_string(rec.at_ms),
                           "sc", scopes_json(rec.scopes)});
    write(key("own:" + owner), {"SADD", id});
  }
  for (const auto& [k, c] : counters) {
    const Nanos spent = std::min<Nanos>(c.spent, kMaxCounterNanos);  // as the settle script saturates
    write(k, {"HSET", "ws", std::to_string(c.ws), "we", std::to_string(c.we), "spent", std::to_string(spent), "unknown",
              "0", "reserved", std::to_string(c.reserved)});
    if (c.we > 0) write(k, {"PEXPIREAT", std::to_string(c.we + 86400000)});
  }
  if (!state->open.empty()) {
    write(key("lease:" + owner), {"SET", "1", "PX", std::to_string(options_.rebuilt_hold.count())});
    write(key("instances"), {"SADD", owner});
  }
  client_->call({"PING"});  // every command above has been answered (one connection, in order)
  if (failed) {
    spdlog::error("redis ledger: rebuilding the counters failed; paid requests stay refused until it succeeds");
    client_->call_eval(rebuild_write_script(), {key("ready"), key("rebuild"), key("rebuild")}, {token, "DEL"});
    return;
  }
  // Ids continue far past every id the store holds and every block an instance may still use;
  // a reserve with an id at or below the floor is refused (-3) and takes a new block.
  const long long floor = static_cast<long long>(state->max_reservation_id) + (1LL << 20);
  auto done = client_->call_eval(rebuild_finish_script(), {key("ready"), key("rebuild"), key("seq")},
                                 {token, std::to_string(floor)});
  if (!done || done->type != Reply::Type::integer || done->integer != 1) {
    spdlog::error("redis ledger: the rebuild lost its lock before it finished; another instance rebuilds");
    return;
  }
  {
    std::lock_guard l(mutex_);
    ++stats_.rebuilds;
  }
  drop_id_block();
  counters_ready_ = true;
  spdlog::warn("redis ledger: counters rebuilt from the durable ledger ({} scope(s), {} open reservation(s))",
               counters.size(), state->open.size());
}

void RedisLedger::recover_dead() {
  auto members = client_->call({"SMEMBERS", key("instances")});
  if (!members || members->type != Reply::Type::array) return;
  for (const auto& m : members->elements) {
    if (m.str == options_.instance_id) continue;
    auto alive = client_->call({"EXISTS", key("lease:" + m.str)});
    if (alive && alive->as_integer() == 0) recover_instance(m.str);
  }
}

void RedisLedger::recover_instance(const std::string& instance) {
  const std::string own = key("own:" + instance);
  auto ids = client_->call({"SMEMBERS", own});
  if (!ids || ids->type != Reply::Type::array) return;
  std::size_t settled = 0;
  for (const auto& e : ids->elements) {
    const auto id = e.as_integer();
    if (!id) {
      client_->call({"SREM", own, e.str});
      continue;
    }
    auto h = client_->call({"HMGET", key("r:" + e.str), "amt", "sc"});
    if (!h || h->type != Reply::Type::array || h->elements.size() < 2) continue;
    if (h->elements[0].type == Reply::Type::nil) {  // settled already
      client_->call({"SREM", own, e.str});
      continue;
    }
    const Nanos amount = h->elements[0].as_integer().value_or(0);
    const auto scopes = parse_scopes(h->elements[1].str);
    // What the dead instance recorded durably wins over the conservative full amount.
    auto recorded = store_->settle_record(static_cast<std::uint64_t>(*id));
    if (!recorded) continue;  // the store cannot say: try again next round
    const auto at = std::chrono::system_clock::now();
    std::vector<std::string> keys{key("ready"), key("r:" + e.str), own};
    std::vector<std::string> args{e.str, *recorded ? "actual" : "unknown",
                                  std::to_string(*recorded ? (*recorded)->actual_nanos : 0)};
    std::vector<LedgerScope> ledger_scopes;
    for (const auto& s : scopes) {
      keys.push_back(scope_key(s.scope));
      const auto w = window_ms(s.period, at);
      args.push_back(std::to_string(w.first));
      args.push_back(std::to_string(w.second));
      ledger_scopes.push_back(LedgerScope{std::string(budget::to_string(s.scope.kind)), s.scope.id, w.first, w.second,
                                          s.period_text});
    }
    auto r = client_->call_eval(settle_script(), std::move(keys), std::move(args));
    if (!r || r->type != Reply::Type::integer || r->integer != 1) continue;
    ++settled;
    if (!*recorded) {
      LedgerRecord rec;
      rec.reservation_id = static_cast<std::uint64_t>(*id);
      rec.kind = LedgerKind::settle;
      rec.scopes = std::move(ledger_scopes);
      rec.amount_nanos = amount;
      rec.actual_nanos = amount;
      rec.settle_kind = "recovered";
      rec.at_ms = now_ms();
      store_->append_ledger(std::move(rec), [](bool) {});
    }
  }
  if (settled > 0) {
    std::lock_guard l(mutex_);
    stats_.recovered += settled;
    spdlog::warn("redis ledger: instance {} is gone (lease expired); settled {} reservation(s) it left open", instance,
                 settled);
  }
  if (!release_refused(instance)) return;  // the next round tries again
  auto left = client_->call({"SCARD", own});
  if (left && left->as_integer() == 0) client_->call({"SREM", key("instances"), instance});
}

bool RedisLedger::release_refused(const std::string& instance) {
  const std::string set = key("refused:" + instance);
  auto ids = client_->call({"ZRANGE", set, "0", "-1"});
  if (!ids || ids->type != Reply::Type::array) return false;
  std::vector<std::future<bool>> written;
  for (const auto& e : ids->elements) {
    const auto id = e.as_integer();
    if (!id || *id <= 0) continue;
    // Granted nothing under this id: its reserve record, if it committed, charged nothing. The
    // dead instance's own release may have committed already (a second one is not counted again).
    auto recorded = store_->settle_record(static_cast<std::uint64_t>(*id));
    if (!recorded) return false;
    if (*recorded) continue;
    LedgerRecord rec;
    rec.reservation_id = static_cast<std::uint64_t>(*id);
    rec.kind = LedgerKind::settle;
    rec.settle_kind = std::string(budget::to_string(budget::SettleKind::no_usage));
    rec.at_ms = now_ms();
    auto done = std::make_shared<std::promise<bool>>();
    written.push_back(done->get_future());
    store_->append_ledger(std::move(rec), [done](bool ok) { done->set_value(ok); });
  }
  for (auto& w : written)
    if (!w.get()) return false;  // kept: written again next round (a duplicate release counts nothing)
  client_->call({"DEL", set});
  if (!written.empty())
    spdlog::warn("redis ledger: instance {} is gone; released {} reserve record(s) it left open for attempts granted "
                 "nothing", instance, written.size());
  return true;
}

}  // namespace tollgate::store::redis
