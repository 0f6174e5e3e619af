#pragma once
/// The spend-log row of a run (LiteLLM's LiteLLM_SpendLogs shape, store/records.hpp), rendered
/// from its state: who asked, what served, the attempts and skipped fallbacks, tokens, cost,
/// timings and the whole decision trace. Internal to pipeline/.

#include <optional>

#include "pipeline/run_state.hpp"
#include "store/records.hpp"

namespace tollgate::pipeline {

/// The row of a run that ended `ok` or with `status`; call after finish_run set the trace's totals.
store::SpendLogRow spend_log_row(const RunState& st, bool ok, std::optional<int> status);

}  // namespace tollgate::pipeline
