#pragma once
/// The admin UI's endpoints (issue 15; docs/admin_api.md "Admin UI endpoints"), one handler per
/// file: whoami (admin_ui.cpp), overview (admin_overview.cpp), budgets (admin_budget_list.cpp),
/// routing (admin_routing.cpp), simulate (admin_simulate.cpp). Routes and access flags are in
/// admin_ui.cpp (admin::ui_routes). Threading: as every admin handler (admin.hpp).

#include "api/admin_context.hpp"

namespace tollgate::api::admin {

/// GET /tollgate/whoami → {"role": "master"|"key", "token", "key_alias", "team_id", "user_id",
/// "models", "blocked"}.
Reply whoami(const Context& c, const Call& q);

/// GET /tollgate/overview?start_date=&end_date=&bucket=hour|day: spend today / month / range, a
/// series with every bucket (≤ kMaxOverviewBuckets), per model group, top keys, teams, models,
/// alerts (master only). A virtual key: its own spend-log rows only.
Reply overview(const Context& c, const Call& q);
/// The most buckets one overview series holds (more → 400 naming `bucket`).
inline constexpr std::int64_t kMaxOverviewBuckets = 2000;

/// The buckets of an overview series over [start_ms, end_ms): the first starts at start_ms
/// rounded down to a multiple of bucket_ms (whole UTC hours / days), `count` cover end_ms.
struct BucketPlan {
  std::int64_t origin_ms = 0;
  std::int64_t bucket_ms = 0;
  std::int64_t count = 0;
};
/// The plan, or the 400 (param `bucket`) when it would hold more than `max_buckets` buckets.
/// Requires start_ms < end_ms and bucket_ms > 0.
std::expected<BucketPlan, core::Error> plan_buckets(std::int64_t start_ms, std::int64_t end_ms, std::int64_t bucket_ms,
                                                   std::int64_t max_buckets = kMaxOverviewBuckets);
/// The series of `plan`: one {"t", "spend", "requests", "errors"} per bucket, oldest first, zeros
/// where `totals` (store::SpendGroupBy::time_bucket rows) has none.
boost::json::array series_json(const BucketPlan& plan, const std::vector<store::SpendTotals>& totals);

/// GET /tollgate/budgets[?limit=N]: every budget admission enforces (api/budget_list.hpp).
Reply budgets(const Context& c, const Call& q);

/// GET /tollgate/routing: model groups, deployments (price, circuit), fallback edges.
Reply routing(const Context& c, const Call& q);

/// POST /tollgate/simulate {"scenario", "config"?}: `tollgate simulate --json` over texts.
Reply simulate(const Context& c, const Call& q);
/// The largest POST /tollgate/simulate body (413 beyond).
inline constexpr std::size_t kMaxSimulateBodyBytes = 1024 * 1024;
/// The most simulated requests one POST /tollgate/simulate runs (repeat included).
inline constexpr std::int64_t kMaxSimulatedRequests = 1000;
/// The retry and fallback budgets of a POST /tollgate/simulate run are capped at this.
inline constexpr int kMaxSimulatedRetries = 10;

/// The services snapshot in force (AdminDeps::services), or the 503 to answer without it.
std::expected<std::shared_ptr<const pipeline::Services>, core::Error> live_services(const Context& c);

}  // namespace tollgate::api::admin
