#include "store/ledger_state.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tollgate::store {

StoreResult<LedgerState> read_ledger_state(Store& store, std::int64_t page) {
  LedgerState out;
  std::map<LedgerScope, std::int64_t> spent;
  std::unordered_map<std::uint64_t, LedgerRecord> open;
  std::int64_t after = 0;
  for (;;) {
    auto records = store.read_ledger(after, page);
    if (!records) return std::unexpected(records.error());
    for (auto& r : *records) {
      after = r.sequence;
      if (r.reservation_id > out.max_reservation_id) out.max_reservation_id = r.reservation_id;
      if (r.kind == LedgerKind::reserve) {
        open.emplace(r.reservation_id, std::move(r));
        continue;
      }
      // A settle charges the open reserve it closes; a second settle record of the same
      // reservation (an instance cut off past its lease settled it too, after a survivor did) is
      // not counted again. An id reused later opens, and is charged, afresh.
      if (open.erase(r.reservation_id) == 0) continue;
      for (const auto& sc : r.scopes) {
        auto& total = spent[sc];
        if (__builtin_add_overflow(total, r.actual_nanos, &total)) total = INT64_MAX;
      }
    }
    if (static_cast<std::int64_t>(records->size()) < page) break;
  }
  out.spent.reserve(spent.size());
  for (auto& [scope, total] : spent) out.spent.push_back(ScopeSpend{scope, total});
  out.open.reserve(open.size());
  for (auto& [id, r] : open) out.open.push_back(std::move(r));
  std::sort(out.open.begin(), out.open.end(),
            [](const LedgerRecord& a, const LedgerRecord& b) { return a.reservation_id < b.reservation_id; });
  return out;
}

}  // namespace tollgate::store
