#pragma once
/// Plain records persisted by a Store (no SQLite or other backend types).
///
/// Conventions for every record here:
///  - money is `int64` nano-dollars (1e-9 USD), fields end in `_nanos` (DESIGN.md "Money and units");
///  - times are milliseconds since the Unix epoch (UTC), fields end in `_ms`;
///  - an empty string id or alias means "not set" (stored as SQL NULL);
///  - `*_json` / JSON-text fields hold a JSON document as text; the store keeps them verbatim and
///    never parses them (the admin layer validates them). An empty string means "absent".
/// Field names follow the LiteLLM proxy admin API (REFERENCE.md "LiteLLM proxy shapes").
/// Records are values: copying and moving are safe; they carry no thread affinity.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tollgate::store {

/// A virtual key (`/key/generate`). Identified by the hash of its secret; the secret itself is
/// never stored.
struct KeyRecord {
  std::string token_hash;       ///< lowercase hex SHA-256 of the full `sk-...` key; primary key
  std::string key_alias;        ///< unique when set (duplicate → StoreErrorCode::conflict)
  std::string key_name;         ///< masked display form, e.g. "sk-...abcd"
  std::string user_id;          ///< owning user, or empty
  std::string team_id;          ///< owning team, or empty
  std::string organization_id;  ///< owning organization, or empty
  std::vector<std::string> models;  ///< allowed model groups / access groups; empty = all
  std::string metadata;             ///< JSON object text
  std::vector<std::string> tags;    ///< request tags attached to every request of this key
  std::optional<std::int64_t> max_budget_nanos;   ///< key budget; nullopt = none
  std::optional<std::string> budget_duration;     ///< e.g. "30s", "1h", "1d", "30d", "1mo"
  std::optional<std::int64_t> soft_budget_nanos;  ///< warn-only threshold
  std::string budget_limits;     ///< JSON text: [{"budget_duration": "1d", "max_budget": 1.5}, ...]
  std::string model_max_budget;  ///< JSON text: {"group": {"budget_duration"?: "1d", "max_budget": 2}}
  std::optional<std::int64_t> max_parallel_requests;
  std::optional<std::int64_t> rpm_limit;
  std::optional<std::int64_t> tpm_limit;
  bool blocked = false;
  /// LiteLLM's `allowed_model_region` ("eu", "us"): routed only to deployments of that region
  /// (routing/constraints.hpp); empty = any.
  std::string allowed_model_region;
  std::optional<std::int64_t> expires_at_ms;  ///< nullopt = never expires
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  /// A linked budget (`/budget/new`, LiteLLM budget_id): its limits apply where the key has none
  /// of its own (auth::Identities resolves them); empty = none.
  std::string budget_id;
  bool operator==(const KeyRecord&) const = default;
};

/// An internal user (`/user/new`).
struct UserRecord {
  std::string user_id;  ///< primary key
  std::string user_email;
  std::string user_alias;
  std::optional<std::int64_t> max_budget_nanos;
  std::optional<std::string> budget_duration;
  std::vector<std::string> models;
  std::string metadata;  ///< JSON object text
  std::optional<std::int64_t> rpm_limit;
  std::optional<std::int64_t> tpm_limit;
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  bool operator==(const UserRecord&) const = default;
};

/// A team (`/team/new`).
struct TeamRecord {
  std::string team_id;  ///< primary key
  std::string team_alias;
  std::string organization_id;
  std::optional<std::int64_t> max_budget_nanos;
  std::optional<std::string> budget_duration;
  std::vector<std::string> models;
  std::string metadata;  ///< JSON object text
  std::optional<std::int64_t> rpm_limit;
  std::optional<std::int64_t> tpm_limit;
  bool blocked = false;
  std::string allowed_model_region;  ///< as KeyRecord::allowed_model_region, for the team's keys
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  std::string budget_id;  ///< a linked budget (see KeyRecord::budget_id); empty = none
  bool operator==(const TeamRecord&) const = default;
};

/// Membership of a user in a team (`/team/member_add`); primary key (team_id, user_id).
struct TeamMemberRecord {
  std::string team_id;
  std::string user_id;
  std::string role = "user";  ///< "admin" or "user" (LiteLLM roles)
  std::optional<std::int64_t> max_budget_in_team_nanos;  ///< per-member budget inside the team
  std::optional<std::string> budget_duration;
  bool operator==(const TeamMemberRecord&) const = default;
};

/// An organization (`/organization/new`).
struct OrganizationRecord {
  std::string organization_id;  ///< primary key
  std::string organization_alias;
  std::optional<std::int64_t> max_budget_nanos;
  std::optional<std::string> budget_duration;
  std::vector<std::string> models;
  std::string metadata;  ///< JSON object text
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  bool operator==(const OrganizationRecord&) const = default;
};

/// An end user / customer (`/customer/new`): the request body's `user` field.
struct CustomerRecord {
  std::string user_id;  ///< primary key: the end-user id as sent in requests
  std::string alias;
  std::optional<std::int64_t> max_budget_nanos;
  std::optional<std::string> budget_duration;
  bool blocked = false;
  std::string allowed_model_region;  ///< as KeyRecord::allowed_model_region, for this end user's requests
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  std::string budget_id;  ///< a linked budget (see KeyRecord::budget_id); empty = none
  bool operator==(const CustomerRecord&) const = default;
};

/// A reusable budget (LiteLLM's LiteLLM_BudgetTable, `/budget/new`), linked by `budget_id` from
/// keys, teams and customers (end users). Its limits apply to each linked entity as that
/// entity's own (each entity keeps its own spend); an entity's own field wins over the budget's.
struct BudgetRecord {
  std::string budget_id;  ///< primary key
  std::optional<std::int64_t> max_budget_nanos;
  std::optional<std::int64_t> soft_budget_nanos;
  std::optional<std::int64_t> max_parallel_requests;
  std::optional<std::int64_t> tpm_limit;
  std::optional<std::int64_t> rpm_limit;
  std::optional<std::string> budget_duration;  ///< e.g. "1d", "30d", "1mo"
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  bool operator==(const BudgetRecord&) const = default;
};

/// A tag budget (`/tag/new`): requests carrying this tag (key tags + the request's
/// `metadata.tags` / `tags`) are charged to the `tag` scope whose id is the name.
struct TagRecord {
  std::string name;  ///< primary key: the tag as sent in requests
  std::string description;
  std::optional<std::int64_t> max_budget_nanos;  ///< nullopt = spend tracked, never refused
  std::optional<std::string> budget_duration;
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  bool operator==(const TagRecord&) const = default;
};

/// A deployment added through `/model/new` (general_settings.store_model_in_db), table
/// proxy_models: the entry as a `model_list` item in JSON ({model_name, litellm_params,
/// model_info}), loaded by the config loader like the file's entries (config::ExtraModel).
struct ProxyModelRecord {
  std::string model_id;    ///< primary key: the entry's model_info.id
  std::string model_name;  ///< the model group (for listing; the entry holds it too)
  std::string entry;       ///< the JSON object, as validated; litellm_params.api_key as given
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  bool operator==(const ProxyModelRecord&) const = default;
};

/// One budget scope a reservation was admitted against (DESIGN.md "Budget admission").
struct LedgerScope {
  std::string kind;                 ///< "key", "user", "team", "team_member", "organization",
                                    ///< "end_user", "tag", "global", "key_model", "key_window", ...
  std::string id;                   ///< scope id within its kind (e.g. key hash, "team:user")
  std::int64_t window_start_ms = 0;  ///< start of the budget window; 0 = lifetime (no window)
  std::int64_t window_end_ms = 0;    ///< end of that window (exclusive); 0 = lifetime or unknown (rows before migration 4)
  std::string period;                ///< the window's budget_duration ("1d", "30s", "1mo"); empty = lifetime or unknown
  bool operator==(const LedgerScope&) const = default;
  auto operator<=>(const LedgerScope&) const = default;
};

/// Kind of a ledger record.
enum class LedgerKind { reserve, settle };

/// One entry of the durable spend ledger. A reservation is written as a `reserve` record
/// before the upstream request is sent; exactly one `settle` record follows it.
struct LedgerRecord {
  /// Assigned by the store when the record is written (monotonic); ignored on append.
  std::int64_t sequence = 0;
  /// Identifies the reservation; the reserve and its settle share it. Must be unique among
  /// reservations of one store (continue from RecoveryResult::max_reservation_id after restart).
  std::uint64_t reservation_id = 0;
  LedgerKind kind = LedgerKind::reserve;
  /// Scopes charged. For a settle, may be left empty: the store then copies the scopes of the
  /// matching reserve record.
  std::vector<LedgerScope> scopes;
  std::int64_t amount_nanos = 0;  ///< reserve: worst-case amount reserved; settle: the reserved amount released
  std::int64_t actual_nanos = 0;  ///< settle: actual cost moved to spent (0 for reserve)
  std::string settle_kind;  ///< settle only: "actual" | "no_usage" | "unknown" | "recovered"
  std::string request_id;
  std::string model;  ///< model group or served model, for audit
  std::int64_t at_ms = 0;
  bool operator==(const LedgerRecord&) const = default;
};

/// One row per client request (LiteLLM spend log fields + Tollgate's attempt detail).
struct SpendLogRow {
  std::string request_id;
  std::string call_type;        ///< e.g. "acompletion", "aembedding", "anthropic_messages"
  std::string api_key;          ///< hashed key (token_hash), never the secret
  std::string key_alias;
  std::string user;             ///< internal user id
  std::string team_id;
  std::string organization_id;
  std::string end_user;         ///< request body's `user`
  std::vector<std::string> request_tags;
  std::string requested_model;  ///< model as sent by the client
  std::string model_group;
  std::string model;            ///< model actually served (provider model name)
  std::string model_id;         ///< deployment id (model_info.id)
  std::string custom_llm_provider;
  std::string api_base;
  std::string attempts;           ///< JSON text: [{deployment, outcome, status, ...}, ...]
  std::string skipped_fallbacks;  ///< JSON text: [{target, reason}, ...]
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t total_tokens = 0;
  std::int64_t spend_nanos = 0;
  bool priced = true;            ///< false = served by an unpriced model (spend is not a real $0)
  bool unknown_outcome = false;  ///< an attempt's outcome was unknown; spend is the reservation
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  std::int64_t request_duration_ms = 0;
  std::optional<std::int64_t> completion_start_ms;  ///< first token (TTFT); nullopt if none
  std::string status = "success";  ///< "success" | "failure"
  std::string error_status;        ///< HTTP status / error type on failure, else empty
  std::string metadata;            ///< JSON object text
  /// Degradation mode that produced the answer ("reduced", "stale_cache", "deferred",
  /// "fail_fast", ...); empty = a full answer (issue 4, `x-tollgate-degradation`).
  std::string degradation;
  /// JSON text: the request's whole decision trace (attempts with failure class and action,
  /// skipped targets with reasons, circuit states, budgets consumed), read by
  /// `tollgate explain REQUEST_ID`. Empty = none recorded.
  std::string decision;
  /// JSON text: the served attempt's bill line by line, `[{"kind","count","price","cost"}]` with
  /// kind one of budget::LineKind's names and price/cost as decimal dollar strings (per token or
  /// call, and exact). Empty = not priced line by line (unpriced, free, or unknown outcome).
  std::string line_items;
  /// Response cache (issue 11 §4): answered from the cache (no upstream call, spend $0), the
  /// request's cache key ("" = not cached), and on a hit what the stored answer cost when it was
  /// made (what the hit saved), nano-dollars.
  bool cache_hit = false;
  std::string cache_key;
  std::int64_t cache_saved_nanos = 0;
  /// The client's address (the TCP peer; LiteLLM's `requester_ip_address`); empty if unknown.
  std::string requester_ip_address;
  /// The caller's session (LiteLLM reads `litellm_session_id` from the body or its `metadata`,
  /// else `session_id` in metadata); empty = none.
  std::string session_id;
  bool operator==(const SpendLogRow&) const = default;
};

/// A deferred request (degradation mode `deferred`, issue 4): accepted with 202 and a job id,
/// run later (when the model group's circuit closes), its state and result served by
/// `GET /v1/tollgate/jobs/{id}`. Jobs are plain rows, so they survive a restart.
struct JobRecord {
  std::string id;              ///< primary key (e.g. "job-..."); required
  std::int64_t created_ms = 0;  ///< set by create_job when 0
  std::int64_t updated_ms = 0;  ///< set by create_job / update_job when 0
  /// "queued" | "running" | "succeeded" | "failed" (anything else → StoreErrorCode::invalid).
  std::string status = "queued";
  std::string model_group;
  std::string call_type;     ///< e.g. "acompletion", "anthropic_messages"
  std::string api_key;       ///< hashed key (token_hash) of the caller, never the secret
  std::string request_body;  ///< JSON text: the client's request body, replayed when the job runs
  std::string result;        ///< JSON text: the completion on success, else empty
  std::string error;         ///< JSON text: the error body on failure, else empty
  std::int64_t attempts = 0;  ///< times the job was run
  std::string request_id;     ///< spend-log request_id of the run that completed it, else empty
  /// The instance running the job (Store::claim_job), else empty. Several instances share one
  /// store: exactly one holds a running job's claim.
  std::string claimed_by;
  /// Wall-clock ms until which `claimed_by`'s claim holds unless renewed; past it (the instance
  /// died or stalled) the job may be claimed again. 0 when unclaimed.
  std::int64_t claim_expires_ms = 0;
  bool operator==(const JobRecord&) const = default;
};

/// Whether `status` is one of JobRecord's four states.
inline bool is_job_status(const std::string& status) {
  return status == "queued" || status == "running" || status == "succeeded" || status == "failed";
}

}  // namespace tollgate::store
