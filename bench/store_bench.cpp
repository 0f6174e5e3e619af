// Micro benchmark of the embedded store's write path (issue 16): what one request costs the
// group-commit writer on SQLite, measured through the Store interface on a file in a temp dir.
//   BM_SpendRows/N     N spend-log rows (the size of a real one: a decision trace, line items,
//                      metadata) appended, then flushed; time per row.
//   BM_LedgerPairs/N   N reserve + settle pairs (key, team and global scopes), each settle after
//                      its reserve is durable, as a request does; time per pair. Without the
//                      ledger journal: what a request waits for is a SQLite commit.
//   BM_LedgerPairsJournal/N  the same through the ledger journal (as `serve` opens the store):
//                      what a request waits for is the journal's write; the fold into SQLite
//                      runs behind, off the time measured.
//   BM_Fold/N          N pairs through the journal, then flush(): the journal's writes and the
//                      whole fold into SQLite, per pair (the writer's cost a request leaves behind).
// All run with the writer's default batching (spend rows and folded records in batches of their own).
// The ledger benchmarks report the whole process's CPU time (the writer's thread included).

#include <benchmark/benchmark.h>

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.hpp"

namespace {

using namespace tollgate::store;

struct TempStore {
  std::filesystem::path dir;
  std::unique_ptr<Store> store;
  explicit TempStore(bool journal = false) {
    dir = std::filesystem::temp_directory_path() / ("tg_store_bench_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto s = sqlite::open_sqlite_store((dir / "tollgate.db").string(),
                                       {.exclusive_process = journal, .ledger_journal = journal});
    if (s) store = std::move(*s);
  }
  ~TempStore() {
    store.reset();
    std::filesystem::remove_all(dir);
  }
};

SpendLogRow row(std::uint64_t i) {
  SpendLogRow r;
  r.request_id = "b355157b-26ae-4016-8514-" + std::to_string(100000000000 + i);
  r.call_type = "acompletion";
  r.api_key = "9f2c1e0b7a6d5c4b3a29180716f5e4d3c2b1a09f8e7d6c5b4a3928170615f4e3";
  r.key_alias = "bench-budget";
  r.requested_model = r.model_group = r.model = "bench-model";
  r.model_id = "bench-model/0";
  r.custom_llm_provider = "openai";
  r.api_base = "http://127.0.0.1:37747/v1";
  r.attempts = R"([{"model_group":"bench-model","deployment":"bench-model/0","status":200,"outcome":"ok","duration_ms":2}])";
  r.skipped_fallbacks = "[]";
  r.prompt_tokens = 23;
  r.completion_tokens = 16;
  r.total_tokens = 39;
  r.spend_nanos = 55000;
  r.start_ms = 1796551993325 + static_cast<std::int64_t>(i);
  r.end_ms = r.start_ms + 2;
  r.request_duration_ms = 2;
  r.metadata = R"({"user_api_key_hash":"9f2c1e0b","requester_ip_address":"127.0.0.1","trace_id":"b355157b26ae8016514ace6bf109ae5d","span_id":"dce53f294d1ae4ea"})";
  r.decision = R"({"budget":{"max_retries":2,"max_fallbacks":5,"deadline_ms":600000},"steps":[{"step":"attempt","group":"bench-model","deployment":"bench-model/0","provider":"openai","circuit":"closed","status":200,"class":null,"duration_ms":2,"reserved":"0.000112","charged":"0.000055","evidence":"answered","max_tokens":16,"decision":"served"}],"consumed":{"retries":0,"fallbacks":0,"elapsed_ms":2,"reserved":"0.000112","charged":"0.000055"},"outcome":"served","served_by":"bench-model/bench-model/0"})";
  r.line_items = R"([{"kind":"input","count":23,"price":"0.000001","cost":"0.000023"},{"kind":"output","count":16,"price":"0.000002","cost":"0.000032"}])";
  r.requester_ip_address = "127.0.0.1";
  return r;
}

void BM_SpendRows(benchmark::State& state) {
  TempStore t;
  if (!t.store) {
    state.SkipWithError("cannot open the store");
    return;
  }
  const auto n = static_cast<std::uint64_t>(state.range(0));
  std::uint64_t i = 0;
  for (auto _ : state) {
    for (std::uint64_t k = 0; k < n; ++k) t.store->append_spend_log(row(i++));
    t.store->flush();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(i));
  if (t.store->writer_stats().dropped_spend_rows > 0) state.SkipWithError("rows dropped");
}
BENCHMARK(BM_SpendRows)->Arg(64)->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();

LedgerRecord ledger(std::uint64_t id, LedgerKind kind) {
  LedgerRecord r;
  r.reservation_id = id;
  r.kind = kind;
  r.amount_nanos = 112000;
  r.actual_nanos = kind == LedgerKind::settle ? 55000 : 0;
  r.settle_kind = kind == LedgerKind::settle ? "actual" : "";
  if (kind == LedgerKind::reserve)
    r.scopes = {{"key", "9f2c1e0b7a6d5c4b3a29180716f5e4d3c2b1a09f8e7d6c5b4a3928170615f4e3", 0}, {"team", "team-a", 0}, {"global", "", 0}};
  r.request_id = "req-" + std::to_string(id);
  r.model = "bench-model";
  r.at_ms = 1796551993325;
  return r;
}

// n requests in flight: n reserves (one group commit, or n journal writes), then their n settles.
void append_pairs(Store& store, std::uint64_t first, std::uint64_t n) {
  std::vector<std::future<bool>> reserved, settled;
  for (std::uint64_t k = 0; k < n; ++k) {
    auto p = std::make_shared<std::promise<bool>>();
    reserved.push_back(p->get_future());
    store.append_ledger(ledger(first + k, LedgerKind::reserve), [p](bool ok) { p->set_value(ok); });
  }
  for (auto& f : reserved) f.get();
  for (std::uint64_t k = 0; k < n; ++k) {
    auto p = std::make_shared<std::promise<bool>>();
    settled.push_back(p->get_future());
    store.append_ledger(ledger(first + k, LedgerKind::settle), [p](bool ok) { p->set_value(ok); });
  }
  for (auto& f : settled) f.get();
}

void ledger_pairs(benchmark::State& state, bool journal, bool fold) {
  TempStore t(journal);
  if (!t.store) {
    state.SkipWithError("cannot open the store");
    return;
  }
  const auto n = static_cast<std::uint64_t>(state.range(0));
  std::uint64_t id = 0;
  for (auto _ : state) {
    append_pairs(*t.store, id, n);
    if (fold) t.store->flush();
    id += n;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(id));
}

void BM_LedgerPairs(benchmark::State& state) { ledger_pairs(state, false, false); }
void BM_LedgerPairsJournal(benchmark::State& state) { ledger_pairs(state, true, false); }
void BM_Fold(benchmark::State& state) { ledger_pairs(state, true, true); }
BENCHMARK(BM_LedgerPairs)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_LedgerPairsJournal)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_Fold)->Arg(512)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
