#pragma once
/// The storage interface of Tollgate (DESIGN.md layout: "store/ Store interface; sqlite/ ...").
///
/// One abstract class so that the engines (SQLite, PostgreSQL) and a Redis-backed shared ledger
/// plug in without touching the request path. Four families of operations:
///  - identity CRUD (admin API, auth snapshot): synchronous, may block on disk — call them from
///    an admin/worker thread, never from an io_context thread on the request path;
///  - deferred jobs (degradation mode `deferred`): synchronous like identity CRUD;
///  - the ledger: `append_ledger` is asynchronous and group-committed; `on_durable` fires after
///    the record is durable (or with false when it could not be written);
///  - spend logs: `append_spend_log` is asynchronous and batched with the ledger; queries are
///    synchronous.
/// Expected failures are values (`std::expected<T, StoreError>`); no function throws for I/O
/// errors. Every member function is thread-safe unless stated otherwise.

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "store/records.hpp"

namespace tollgate::store {

/// Why a store operation failed.
enum class StoreErrorCode {
  not_found,    ///< the id does not exist
  conflict,     ///< duplicate primary key or unique field (e.g. key_alias)
  unavailable,  ///< the store cannot be read or written (disk full, read-only, locked, I/O error)
  invalid,      ///< the request is malformed (empty id, schema newer than the binary, bad URL)
};

/// An expected failure of a store operation.
struct StoreError {
  StoreErrorCode code = StoreErrorCode::unavailable;
  std::string message;  ///< human-readable; never contains secrets
  std::string field;    ///< offending field when known (e.g. "key_alias" on conflict), else empty
};

/// Name of a StoreErrorCode ("not_found", "conflict", "unavailable", "invalid").
const char* to_string(StoreErrorCode code) noexcept;

/// Result of a store operation.
template <class T>
using StoreResult = std::expected<T, StoreError>;

/// Filters for list_keys; unset fields do not filter. All set fields must match.
struct KeyFilter {
  std::optional<std::string> user_id;
  std::optional<std::string> team_id;
  std::optional<std::string> organization_id;
  std::optional<std::string> key_alias;
  std::int64_t limit = 1000;  ///< at most this many rows, ordered by created_at_ms, token_hash
  std::int64_t offset = 0;
};

/// Every identity at one instant (read in one transaction), for the auth layer's snapshot.
struct IdentitySnapshot {
  std::vector<KeyRecord> keys;
  std::vector<UserRecord> users;
  std::vector<TeamRecord> teams;
  std::vector<TeamMemberRecord> team_members;
  std::vector<OrganizationRecord> organizations;
  std::vector<CustomerRecord> customers;
  std::vector<TagRecord> tags;
  std::vector<BudgetRecord> budgets;
  /// Value of identity_generation() the snapshot corresponds to.
  std::int64_t generation = 0;
};

/// Spent total of one scope, rebuilt from the ledger.
struct ScopeSpend {
  LedgerScope scope;
  std::int64_t spent_nanos = 0;  ///< sum of `actual_nanos` of every settle charging this scope
  bool operator==(const ScopeSpend&) const = default;
};

/// Moves a ledger scope to the budget window containing `now_ms` (see Store::recover_ledger).
using ScopeRoller = std::function<LedgerScope(const LedgerScope& scope, std::int64_t now_ms)>;

/// What recover_ledger found and did.
struct RecoveryResult {
  /// The settle records written for reservations that had none (settle_kind "recovered",
  /// actual = the reserved amount: conservative), with their assigned sequence numbers.
  std::vector<LedgerRecord> recovered;
  /// Per-scope spent totals over the whole ledger, after recovery, ordered by scope.
  /// Every window ever charged is listed; the caller keeps those still current.
  std::vector<ScopeSpend> spent;
  /// Highest reservation_id in the ledger (0 if empty); new reservations must use larger ids.
  std::uint64_t max_reservation_id = 0;
};

/// Filters for query_spend_logs; unset fields do not filter.
struct SpendLogFilter {
  std::optional<std::string> api_key;  ///< hashed key
  std::optional<std::string> user;
  std::optional<std::string> team_id;
  std::optional<std::string> request_id;
  std::optional<std::int64_t> start_ms;  ///< rows with start_ms >= this
  std::optional<std::int64_t> end_ms;    ///< rows with start_ms < this
  /// Rows whose model_group, requested_model or model equals this.
  std::optional<std::string> model;
  std::optional<std::string> status;     ///< "success" | "failure"
  /// Rows whose degradation mode equals this; "" = full answers only (no degradation).
  std::optional<std::string> degradation;
  bool degraded = false;                 ///< rows answered by any degradation mode (degradation != "")
  std::int64_t limit = 1000;             ///< newest first (start_ms descending)
  std::int64_t offset = 0;               ///< newest rows skipped first (pagination)
};

/// What query_spend_totals groups the matching rows by.
enum class SpendGroupBy {
  none,         ///< one group: the totals
  time_bucket,  ///< bucket = (start_ms - SpendTotalsQuery::origin_ms) / bucket_ms
  model_group,
  api_key,
  team_id,
  model,        ///< the served model
};

/// query_spend_totals: the matching rows' totals per group.
struct SpendTotalsQuery {
  SpendLogFilter filter;  ///< limit and offset are ignored
  SpendGroupBy by = SpendGroupBy::none;
  std::int64_t origin_ms = 0;  ///< time_bucket: the start of bucket 0
  std::int64_t bucket_ms = 0;  ///< time_bucket: > 0
  /// At most this many groups; time_bucket: buckets in order, others: the most spent first (ties
  /// by name). ≤ 0: every group.
  std::int64_t limit = 0;
};

/// One group of query_spend_totals.
struct SpendTotals {
  std::string name;             ///< the group's value (model group, key hash, team id, model); "" for none / time_bucket
  std::int64_t bucket = 0;      ///< time_bucket: the bucket's number from origin_ms
  std::int64_t spend_nanos = 0;
  std::int64_t requests = 0;
  std::int64_t errors = 0;      ///< rows with status "failure"
};

/// One line of a global spend breakdown.
struct SpendBucket {
  std::string name;  ///< model group, hashed key or team id
  std::int64_t spend_nanos = 0;
  std::int64_t requests = 0;
  std::int64_t total_tokens = 0;
};

/// `/global/spend`: totals over spend logs with start_ms in [start_ms, end_ms).
struct GlobalSpend {
  std::int64_t total_spend_nanos = 0;
  std::int64_t requests = 0;
  std::int64_t total_tokens = 0;
  std::vector<SpendBucket> by_model_group;  ///< spend descending
  std::vector<SpendBucket> by_key;          ///< by api_key (hash), spend descending
  std::vector<SpendBucket> by_team;         ///< by team_id, spend descending
  std::vector<SpendBucket> by_end_user;     ///< by end_user (the request's `user`), spend descending
};

/// Group-commit statistics of the background writer (latency: enqueue → durable, per ledger
/// record, over the most recent samples).
struct WriterStats {
  std::uint64_t batches = 0;          ///< committed or failed transactions
  std::uint64_t records = 0;          ///< ledger records + spend rows written (committed)
  std::uint64_t ledger_records = 0;   ///< ledger records committed
  std::uint64_t spend_rows = 0;       ///< spend log rows committed
  std::uint64_t failed_batches = 0;   ///< transactions that could not commit
  std::uint64_t failed_ledger_records = 0;  ///< ledger records reported with on_durable(false)
  std::uint64_t dropped_spend_rows = 0;     ///< spend rows lost (failed batch or full queue)
  std::uint64_t max_batch = 0;        ///< most records in one transaction
  std::int64_t p50_us = 0;            ///< median enqueue→durable latency, microseconds
  std::int64_t p99_us = 0;
  std::int64_t max_us = 0;
};

/// Whether the store can currently be written.
struct StoreHealth {
  bool writable = false;
  std::string last_error;  ///< last write error, empty when none
};

/// Called once per ledger record, on the store's writer thread, after its transaction
/// committed (`durable = true`) or failed (`false`). Must be quick and must not call back into
/// the store synchronously (post to an io_context instead). Exceptions are swallowed.
using DurableCallback = std::function<void(bool durable)>;

/// Calls `cb(durable)` when it is set, swallowing what it throws (a callback must not take a
/// writer down; the record's fate is decided). What every ledger writer fires callbacks with.
inline void fire_durable(DurableCallback& cb, bool durable) noexcept {
  if (!cb) return;
  try {
    cb(durable);
  } catch (...) {
  }
}

/// Abstract store. Implementations: sql_store.hpp (one for both engines) over sqlite/ (embedded
/// default) and postgres/ (shared by several instances); fakes in tests.
class Store {
 public:
  virtual ~Store() = default;

  // --- keys -------------------------------------------------------------------------------
  /// Inserts a key. conflict (field "token_hash" or "key_alias") if either already exists;
  /// invalid if token_hash is empty. Returns the stored record.
  virtual StoreResult<KeyRecord> create_key(const KeyRecord& key) = 0;
  /// The key with this hash, or not_found.
  virtual StoreResult<KeyRecord> get_key(const std::string& token_hash) = 0;
  /// Replaces every field of the key identified by key.token_hash. not_found if absent,
  /// conflict on a duplicate key_alias.
  virtual StoreResult<KeyRecord> update_key(const KeyRecord& key) = 0;
  /// Deletes the key; not_found if absent.
  virtual StoreResult<void> delete_key(const std::string& token_hash) = 0;
  /// Keys matching every set filter field.
  virtual StoreResult<std::vector<KeyRecord>> list_keys(const KeyFilter& filter) = 0;

  // --- users ------------------------------------------------------------------------------
  /// Same contract as the key functions, keyed by user_id.
  virtual StoreResult<UserRecord> create_user(const UserRecord& user) = 0;
  virtual StoreResult<UserRecord> get_user(const std::string& user_id) = 0;
  virtual StoreResult<UserRecord> update_user(const UserRecord& user) = 0;
  /// Deletes the user and their team memberships.
  virtual StoreResult<void> delete_user(const std::string& user_id) = 0;
  virtual StoreResult<std::vector<UserRecord>> list_users() = 0;

  // --- teams ------------------------------------------------------------------------------
  /// Same contract as the key functions, keyed by team_id.
  virtual StoreResult<TeamRecord> create_team(const TeamRecord& team) = 0;
  virtual StoreResult<TeamRecord> get_team(const std::string& team_id) = 0;
  virtual StoreResult<TeamRecord> update_team(const TeamRecord& team) = 0;
  /// Deletes the team and its memberships.
  virtual StoreResult<void> delete_team(const std::string& team_id) = 0;
  /// All teams, or those of one organization when organization_id is set.
  virtual StoreResult<std::vector<TeamRecord>> list_teams(
      const std::optional<std::string>& organization_id = std::nullopt) = 0;

  /// Adds (or replaces: member_add is idempotent) a membership. invalid if an id is empty.
  /// The store does not check that the team or user exists; the admin layer does.
  virtual StoreResult<TeamMemberRecord> upsert_team_member(const TeamMemberRecord& member) = 0;
  /// Removes a membership; not_found if absent.
  virtual StoreResult<void> remove_team_member(const std::string& team_id, const std::string& user_id) = 0;
  /// Members of a team (any order: user_id ascending).
  virtual StoreResult<std::vector<TeamMemberRecord>> list_team_members(const std::string& team_id) = 0;

  // --- organizations and customers (end users) -------------------------------------------
  virtual StoreResult<OrganizationRecord> create_organization(const OrganizationRecord& org) = 0;
  virtual StoreResult<OrganizationRecord> get_organization(const std::string& organization_id) = 0;
  virtual StoreResult<OrganizationRecord> update_organization(const OrganizationRecord& org) = 0;
  virtual StoreResult<void> delete_organization(const std::string& organization_id) = 0;
  virtual StoreResult<std::vector<OrganizationRecord>> list_organizations() = 0;

  virtual StoreResult<CustomerRecord> create_customer(const CustomerRecord& customer) = 0;
  virtual StoreResult<CustomerRecord> get_customer(const std::string& user_id) = 0;
  virtual StoreResult<CustomerRecord> update_customer(const CustomerRecord& customer) = 0;
  virtual StoreResult<void> delete_customer(const std::string& user_id) = 0;
  virtual StoreResult<std::vector<CustomerRecord>> list_customers() = 0;

  // --- tag budgets (`/tag/*`) ----------------------------------------------------------
  /// Same contract as the key functions, keyed by name (conflict field "name").
  virtual StoreResult<TagRecord> create_tag(const TagRecord& tag) = 0;
  virtual StoreResult<TagRecord> get_tag(const std::string& name) = 0;
  virtual StoreResult<TagRecord> update_tag(const TagRecord& tag) = 0;
  virtual StoreResult<void> delete_tag(const std::string& name) = 0;
  /// Every tag, by name.
  virtual StoreResult<std::vector<TagRecord>> list_tags() = 0;

  // --- budgets (`/budget/*`; linked by budget_id from keys, teams, customers) ----------------
  /// Same contract as the tag functions, keyed by budget_id (conflict field "budget_id").
  virtual StoreResult<BudgetRecord> create_budget(const BudgetRecord& budget) = 0;
  virtual StoreResult<BudgetRecord> get_budget(const std::string& budget_id) = 0;
  virtual StoreResult<BudgetRecord> update_budget(const BudgetRecord& budget) = 0;
  virtual StoreResult<void> delete_budget(const std::string& budget_id) = 0;
  /// Every budget, by budget_id.
  virtual StoreResult<std::vector<BudgetRecord>> list_budgets() = 0;

  /// Every identity, read in one consistent transaction.
  virtual StoreResult<IdentitySnapshot> load_all_identities() = 0;
  /// A counter that grows with every identity mutation (also by other processes sharing the
  /// database): reload the snapshot when it changed.
  virtual StoreResult<std::int64_t> identity_generation() = 0;

  // --- ledger -----------------------------------------------------------------------------
  /// Enqueues a ledger record; never blocks on disk. The record is written by the writer in
  /// the next group-commit transaction; `on_durable(true)` fires after that transaction
  /// committed, `on_durable(false)` if it failed (the record is then NOT in the ledger; the
  /// caller must fail closed). Fires exactly once: on the writer thread; with the embedded
  /// store's ledger journal, on the thread that wrote the record (store/journal/ledger_journal.hpp).
  virtual void append_ledger(LedgerRecord record, DurableCallback on_durable) = 0;

  /// Settles every reservation that has no settle record (settle_kind "recovered",
  /// actual = amount reserved, at_ms = now_ms) durably, then returns per-scope spent totals.
  /// Call at start, before any new reservation is appended (a reservation still in flight
  /// would otherwise be recovered). Idempotent: a second call recovers nothing.
  /// `roll`, when given, moves each recovered reservation's scope to the window that contains
  /// `now_ms` (its period is in LedgerScope::period): the recovered settle is charged there, as
  /// the in-memory ledger charges a late settle to the current window.
  virtual StoreResult<RecoveryResult> recover_ledger(std::int64_t now_ms, const ScopeRoller& roll = {}) = 0;

  /// Every ledger record in sequence order (audit, tests). Only durable records are visible.
  virtual StoreResult<std::vector<LedgerRecord>> read_ledger(std::int64_t after_sequence = 0,
                                                             std::int64_t limit = 100000) = 0;

  /// The durable settle record of one reservation, nullopt when it has none (yet). A shared
  /// ledger asks before it settles a dead instance's reservation: what that instance recorded
  /// wins over the conservative full amount. The record's `scopes` may be left empty. The default
  /// reads the whole ledger (read_ledger); the SQL store overrides it with an indexed lookup.
  virtual StoreResult<std::optional<LedgerRecord>> settle_record(std::uint64_t reservation_id);

  // --- spend logs -------------------------------------------------------------------------
  /// Enqueues a spend log row for the writer (same transactions as the ledger). Never blocks;
  /// a row is lost only if the process dies before its batch commits, the batch fails, or the
  /// queue is over its bound (counted in WriterStats::dropped_spend_rows).
  virtual void append_spend_log(SpendLogRow row) = 0;
  /// Rows matching the filter, newest first. Only committed rows are visible (see flush()).
  virtual StoreResult<std::vector<SpendLogRow>> query_spend_logs(const SpendLogFilter& filter) = 0;
  /// The spend log row of one request (`tollgate explain REQUEST_ID`): not_found if no
  /// committed row has this request_id (the newest when several do), invalid if it is empty.
  /// Equivalent to query_spend_logs({.request_id = id, .limit = 1}).
  virtual StoreResult<SpendLogRow> get_spend_log(const std::string& request_id) = 0;
  /// Totals of the rows matching `q.filter`, per group (one SQL aggregate, no row is loaded).
  /// time_bucket groups hold only the buckets that have rows, in order. invalid when a
  /// time_bucket query has bucket_ms ≤ 0. Only committed rows are visible.
  virtual StoreResult<std::vector<SpendTotals>> query_spend_totals(const SpendTotalsQuery& q) {
    (void)q;
    return std::unexpected(StoreError{StoreErrorCode::unavailable, "spend totals are not kept by this store", {}});
  }
  /// Spend totals and breakdowns over [start_ms, end_ms) (unset = unbounded).
  virtual StoreResult<GlobalSpend> global_spend(std::optional<std::int64_t> start_ms,
                                                std::optional<std::int64_t> end_ms) = 0;

  // --- deferred jobs (degradation mode `deferred`) -----------------------------------------
  // Synchronous, like identity CRUD: call them off the io_context threads. Durable once the
  // call returns (committed on the admin connection), so jobs survive a restart. Jobs are not
  // identities: these calls do not move identity_generation.

  /// Inserts a job. invalid if id is empty or status is not a JobRecord state; conflict
  /// (field "id") if the id exists. created_ms / updated_ms default to now when 0.
  /// Returns the stored record.
  virtual StoreResult<JobRecord> create_job(const JobRecord& job) = 0;
  /// The job with this id, or not_found.
  virtual StoreResult<JobRecord> get_job(const std::string& id) = 0;
  /// Replaces every field of the job identified by job.id (last writer wins; no status
  /// transition is enforced). not_found if absent, invalid on a bad status. created_ms = 0
  /// keeps the stored value; updated_ms = 0 becomes now. Returns the stored record.
  virtual StoreResult<JobRecord> update_job(const JobRecord& job) = 0;
  /// Jobs, oldest first (created_ms, then id), only those with this status when set;
  /// at most `limit` (≤ 0: none).
  virtual StoreResult<std::vector<JobRecord>> list_jobs(std::optional<std::string> status,
                                                        int limit) = 0;

  // Running a job when several instances share the store: a runner claims a job (compare-and-
  // set: exactly one caller wins), renews its claim while the job runs, and ends the run with
  // finish_job_run, which writes only while it still holds the claim. A claim not renewed
  // before it expires (its instance died) lets another runner claim the job again.

  /// Claims job `id` for `owner`: queued → running, or takes over a running job whose claim
  /// expired (claim_expires_ms ≤ now_ms); sets claimed_by = owner, claim_expires_ms = now_ms +
  /// lease_ms, updated_ms = now_ms and counts the run (attempts + 1), in one conditional UPDATE.
  /// Of several callers at once (any instances), exactly one gets the record; the others, and
  /// any caller when the job is finished, absent or under another live claim, get nullopt.
  virtual StoreResult<std::optional<JobRecord>> claim_job(const std::string& id, const std::string& owner,
                                                          std::int64_t now_ms, std::int64_t lease_ms) = 0;
  /// Extends `owner`'s claim on running job `id` to now_ms + lease_ms. false when `owner` no
  /// longer holds it (it expired and another runner claimed the job, or the job is gone).
  virtual StoreResult<bool> renew_job_claim(const std::string& id, const std::string& owner, std::int64_t now_ms,
                                            std::int64_t lease_ms) = 0;
  /// Ends `owner`'s run of job.id: writes job.status (queued again, succeeded or failed),
  /// result, error, request_id, attempts and updated_ms (0 = now) and clears the claim, only
  /// while `owner` holds it (status running, claimed_by = owner). false when it does not (the
  /// run's outcome is then dropped: another runner has the job). invalid on a bad status.
  virtual StoreResult<bool> finish_job_run(const JobRecord& job, const std::string& owner) = 0;
  /// How many jobs `api_key` (a token hash; "" = the master key / anonymous) has queued or
  /// running (index tollgate_jobs_key).
  virtual StoreResult<std::int64_t> count_active_jobs(const std::string& api_key) = 0;
  /// Deletes the finished jobs (succeeded or failed) last updated before `before_ms`; how many.
  virtual StoreResult<std::int64_t> delete_finished_jobs(std::int64_t before_ms) = 0;

  // --- models kept in the store (`/model/*` with general_settings.store_model_in_db) ------
  // Synchronous, like identity CRUD. Every mutation moves proxy_model_generation in the same
  // transaction (also seen by other processes on the database). Not identities: these calls do
  // not move identity_generation. The defaults (stores without models, test fakes) answer
  // invalid "this store keeps no models" and generation 0.

  /// Inserts a model. invalid if model_id is empty; conflict (field "model_id") if it exists.
  /// created_at_ms / updated_at_ms default to now when 0. Returns the stored record.
  virtual StoreResult<ProxyModelRecord> create_proxy_model(const ProxyModelRecord& model);
  /// Replaces model_name and entry of the model identified by model.model_id (created_at_ms
  /// kept, updated_at_ms = now); not_found if absent.
  virtual StoreResult<ProxyModelRecord> update_proxy_model(const ProxyModelRecord& model);
  /// Deletes the model; not_found if absent.
  virtual StoreResult<void> delete_proxy_model(const std::string& model_id);
  /// Every model, oldest first (created_at_ms, then model_id).
  virtual StoreResult<std::vector<ProxyModelRecord>> list_proxy_models();
  /// A counter that grows with every model mutation: reload the models when it changed.
  virtual StoreResult<std::int64_t> proxy_model_generation();

  // --- operations -------------------------------------------------------------------------
  /// Blocks until everything appended before the call was committed (or failed).
  /// Returns false if a write transaction failed while waiting, or the store is closed.
  virtual bool flush() = 0;
  /// Whether the store can be written. May perform a small probe write when nothing was
  /// written recently, so it can block for up to the store's busy timeout.
  virtual StoreHealth health() = 0;
  /// Group-commit statistics (cheap, lock-protected copy).
  virtual WriterStats writer_stats() const = 0;
};

}  // namespace tollgate::store
