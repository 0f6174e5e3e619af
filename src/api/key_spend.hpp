#pragma once
/// The spend figures `/key/info` shows for a key, read from the in-memory ledger.

#include <boost/json/object.hpp>

#include "budget/budget_ledger.hpp"
#include "config/config.hpp"
#include "store/records.hpp"

namespace tollgate::api {

/// {"spend", "reserved_spend" (dollars), "budget_reset_at_ms" (when the key has a window),
/// "spend_windows": [{budget_duration, spend, max_budget}]} — the windows are exactly the
/// key_window scopes admission charges (pipeline::applicable_scopes), so what is shown is what is
/// enforced.
boost::json::object key_spend_json(const budget::BudgetLedger& ledger, const config::Config& cfg,
                                   const store::KeyRecord& key);

}  // namespace tollgate::api
