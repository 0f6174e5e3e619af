#include "store/store.hpp"

namespace tollgate::store {

const char* to_string(StoreErrorCode code) noexcept {
  switch (code) {
    case StoreErrorCode::not_found: return "not_found";
    case StoreErrorCode::conflict: return "conflict";
    case StoreErrorCode::unavailable: return "unavailable";
    case StoreErrorCode::invalid: return "invalid";
  }
  return "unknown";
}

StoreResult<std::optional<LedgerRecord>> Store::settle_record(std::uint64_t reservation_id) {
  std::int64_t after = 0;
  constexpr std::int64_t page = 10000;
  for (;;) {
    auto records = read_ledger(after, page);
    if (!records) return std::unexpected(records.error());
    for (auto& r : *records) {
      after = r.sequence;
      if (r.kind == LedgerKind::settle && r.reservation_id == reservation_id) return std::optional<LedgerRecord>(std::move(r));
    }
    if (static_cast<std::int64_t>(records->size()) < page) return std::optional<LedgerRecord>();
  }
}

}  // namespace tollgate::store
