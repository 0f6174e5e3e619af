// Micro benchmark of budget admission (docs/budgets.md, "Performance"): one reserve + settle
// against key + team + global scopes, with one million distinct keys already in the ledger.
// Arg(0) = number of lock shards (1 = one mutex, 64 = the default).

#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "budget/ledger.hpp"

namespace {

using namespace tollgate::budget;

constexpr std::size_t kKeys = 1'000'000;
constexpr std::size_t kTeams = 10'000;
const SystemTime kNow = SystemTime(std::chrono::seconds(1'700'000'000));

std::string hex_id(std::uint64_t i) {
  // 64 hex characters, like a SHA-256 key hash.
  char buf[80];
  std::snprintf(buf, sizeof buf, "%016llx%016llx%016llx%016llx", static_cast<unsigned long long>(i * 0x9e3779b97f4a7c15ULL),
                static_cast<unsigned long long>(i), static_cast<unsigned long long>(~i),
                static_cast<unsigned long long>(i ^ 0xabcdefULL));
  return buf;
}

const std::vector<std::string>& key_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> v;
    v.reserve(kKeys);
    for (std::size_t i = 0; i < kKeys; ++i) v.push_back(hex_id(i));
    return v;
  }();
  return ids;
}

std::string team_id(std::size_t key) { return "team-" + std::to_string(key % kTeams); }

// One pre-populated ledger per shard count, shared by all runs and threads.
Ledger& ledger_for(std::size_t shards) {
  static std::mutex m;
  static std::map<std::size_t, std::unique_ptr<Ledger>> ledgers;
  std::lock_guard lock(m);
  auto& l = ledgers[shards];
  if (!l) {
    LedgerOptions options;
    options.shards = shards;
    l = std::make_unique<Ledger>(options);
    const auto& ids = key_ids();
    for (std::size_t i = 0; i < kKeys; ++i) l->load(ScopeId{ScopeKind::key, ids[i]}, 0, SystemTime{});
    for (std::size_t t = 0; t < kTeams; ++t) l->load(ScopeId{ScopeKind::team, team_id(t)}, 0, SystemTime{});
    l->load(ScopeId{ScopeKind::global, ""}, 0, SystemTime{});
  }
  return *l;
}

// One reserve + settle per iteration against a random key of the million, its team and the
// global scope; `reserve` is the call measured.
template <class Reserve>
void reserve_settle_random_keys(benchmark::State& state, Reserve reserve) {
  Ledger& ledger = ledger_for(static_cast<std::size_t>(state.range(0)));
  const auto& ids = key_ids();
  // The caller builds its ScopeLimits from the identity snapshot; reusing the strings' capacity
  // keeps the benchmark about the ledger, not about malloc.
  std::array<ScopeLimit, 3> scopes = {
      ScopeLimit{ScopeId{ScopeKind::key, std::string(64, 'x')}, 1'000'000'000'000'000, BudgetPeriod{PeriodUnit::days, 1}},
      ScopeLimit{ScopeId{ScopeKind::team, std::string(16, 'x')}, 4'000'000'000'000'000'000, std::nullopt},
      ScopeLimit{ScopeId{ScopeKind::global, ""}, 9'000'000'000'000'000'000, std::nullopt}};
  std::uint64_t x = 0x243f6a8885a308d3ULL + static_cast<std::uint64_t>(state.thread_index()) * 0x13198a2e03707344ULL;
  for (auto _ : state) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t key = static_cast<std::size_t>((x >> 20) % kKeys);
    scopes[0].scope.id.assign(ids[key]);
    scopes[1].scope.id.assign("team-");
    scopes[1].scope.id.append(std::to_string(key % kTeams));
    auto r = reserve(ledger, scopes);
    if (!r) {
      state.SkipWithError("refused");
      break;
    }
    ledger.settle(std::move(*r), 600, SettleKind::actual, kNow);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_ReserveSettle(benchmark::State& state) {
  reserve_settle_random_keys(state, [](Ledger& l, const auto& scopes) { return l.reserve(scopes, 1'000, kNow); });
}
BENCHMARK(BM_ReserveSettle)->Arg(1)->Arg(64)->Threads(1)->Threads(2)->UseRealTime();

// The same with a ranged reservation (issue 8: the output bound follows what the tightest scope can
// still pay for), computed in the same pass over the scopes: admission's cost per attempt.
void BM_ReserveRangeSettle(benchmark::State& state) {
  reserve_settle_random_keys(state, [](Ledger& l, const auto& scopes) {
    return l.reserve(scopes, AmountRange{100, 1'000, 50}, kNow);
  });
}
BENCHMARK(BM_ReserveRangeSettle)->Arg(1)->Arg(64)->Threads(1)->Threads(2)->UseRealTime();

// What BM_ReserveSettle spends outside the ledger (picking a key, copying its id): subtract it.
void BM_ScopeBuildOnly(benchmark::State& state) {
  const auto& ids = key_ids();
  ScopeId key{ScopeKind::key, std::string(64, 'x')};
  ScopeId team{ScopeKind::team, std::string(16, 'x')};
  std::uint64_t x = 0x243f6a8885a308d3ULL;
  for (auto _ : state) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t k = static_cast<std::size_t>((x >> 20) % kKeys);
    key.id.assign(ids[k]);
    team.id.assign("team-");
    team.id.append(std::to_string(k % kTeams));
    benchmark::DoNotOptimize(key.id.data());
    benchmark::DoNotOptimize(team.id.data());
  }
}
BENCHMARK(BM_ScopeBuildOnly);

// The same without the 1M-key cache misses: one hot key (lower bound of the lock + bookkeeping).
void BM_ReserveSettleHotKey(benchmark::State& state) {
  Ledger& ledger = ledger_for(static_cast<std::size_t>(state.range(0)));
  const std::array<ScopeLimit, 3> scopes = {
      ScopeLimit{ScopeId{ScopeKind::key, key_ids()[state.thread_index()]}, 1'000'000'000'000'000, BudgetPeriod{PeriodUnit::days, 1}},
      ScopeLimit{ScopeId{ScopeKind::team, team_id(static_cast<std::size_t>(state.thread_index()))}, 4'000'000'000'000'000'000, std::nullopt},
      ScopeLimit{ScopeId{ScopeKind::global, ""}, 9'000'000'000'000'000'000, std::nullopt}};
  for (auto _ : state) {
    auto r = ledger.reserve(scopes, 1'000, kNow);
    if (!r) {
      state.SkipWithError("refused");
      break;
    }
    ledger.settle(std::move(*r), 600, SettleKind::actual, kNow);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReserveSettleHotKey)->Arg(1)->Arg(64)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
