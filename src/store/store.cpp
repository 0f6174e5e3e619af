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

namespace {
StoreError no_models() { return StoreError{StoreErrorCode::invalid, "this store keeps no models", {}}; }
}  // namespace

StoreResult<ProxyModelRecord> Store::create_proxy_model(const ProxyModelRecord&) { return std::unexpected(no_models()); }
StoreResult<ProxyModelRecord> Store::update_proxy_model(const ProxyModelRecord&) { return std::unexpected(no_models()); }
StoreResult<void> Store::delete_proxy_model(const std::string&) { return std::unexpected(no_models()); }
StoreResult<std::vector<ProxyModelRecord>> Store::list_proxy_models() { return std::vector<ProxyModelRecord>{}; }
StoreResult<std::int64_t> Store::proxy_model_generation() { return std::int64_t{0}; }

}  // namespace tollgate::store
