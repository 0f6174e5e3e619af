#include "store/sqlite/sqlite_store.hpp"

#include "store/sqlite/process_lock.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <boost/json.hpp>

#include "store/sqlite/db.hpp"

namespace tollgate::store::sqlite {
namespace {

using Clock = std::chrono::steady_clock;

// Ordered migrations: index i brings the schema from version i to i + 1. Never edit a shipped
// entry; append a new one.
const std::vector<std::string>& migrations() {
  static const std::vector<std::string> m = {
      // 1: identities, ledger, spend logs.
      R"sql(
CREATE TABLE keys (
  token_hash TEXT PRIMARY KEY NOT NULL,
  key_alias TEXT UNIQUE,
  key_name TEXT NOT NULL DEFAULT '',
  user_id TEXT,
  team_id TEXT,
  organization_id TEXT,
  models TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '',
  tags TEXT NOT NULL DEFAULT '[]',
  max_budget_nanos INTEGER,
  budget_duration TEXT,
  soft_budget_nanos INTEGER,
  budget_limits TEXT NOT NULL DEFAULT '',
  model_max_budget TEXT NOT NULL DEFAULT '',
  max_parallel_requests INTEGER,
  rpm_limit INTEGER,
  tpm_limit INTEGER,
  blocked INTEGER NOT NULL DEFAULT 0,
  expires_at_ms INTEGER,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE INDEX keys_user ON keys(user_id);
CREATE INDEX keys_team ON keys(team_id);
CREATE INDEX keys_org ON keys(organization_id);
CREATE TABLE users (
  user_id TEXT PRIMARY KEY NOT NULL,
  user_email TEXT,
  user_alias TEXT,
  max_budget_nanos INTEGER,
  budget_duration TEXT,
  models TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '',
  rpm_limit INTEGER,
  tpm_limit INTEGER,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE TABLE teams (
  team_id TEXT PRIMARY KEY NOT NULL,
  team_alias TEXT,
  organization_id TEXT,
  max_budget_nanos INTEGER,
  budget_duration TEXT,
  models TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '',
  rpm_limit INTEGER,
  tpm_limit INTEGER,
  blocked INTEGER NOT NULL DEFAULT 0,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE INDEX teams_org ON teams(organization_id);
CREATE TABLE team_members (
  team_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  role TEXT NOT NULL DEFAULT 'user',
  max_budget_in_team_nanos INTEGER,
  budget_duration TEXT,
  PRIMARY KEY (team_id, user_id)
) WITHOUT ROWID;
CREATE INDEX team_members_user ON team_members(user_id);
CREATE TABLE organizations (
  organization_id TEXT PRIMARY KEY NOT NULL,
  organization_alias TEXT,
  max_budget_nanos INTEGER,
  budget_duration TEXT,
  models TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '',
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE TABLE customers (
  user_id TEXT PRIMARY KEY NOT NULL,
  alias TEXT,
  max_budget_nanos INTEGER,
  budget_duration TEXT,
  blocked INTEGER NOT NULL DEFAULT 0,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE TABLE identity_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL
);
INSERT INTO identity_generation (id, generation) VALUES (1, 0);
CREATE TABLE store_meta (
  name TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE ledger (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  reservation_id INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('reserve', 'settle')),
  amount_nanos INTEGER NOT NULL,
  actual_nanos INTEGER NOT NULL,
  settle_kind TEXT NOT NULL DEFAULT '',
  request_id TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  at_ms INTEGER NOT NULL
);
CREATE INDEX ledger_reservation ON ledger(reservation_id, kind, seq);
CREATE TABLE ledger_scope (
  seq INTEGER NOT NULL,
  scope_kind TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  window_start_ms INTEGER NOT NULL,
  PRIMARY KEY (seq, scope_kind, scope_id, window_start_ms)
) WITHOUT ROWID;
CREATE TABLE spend_logs (
  id INTEGER PRIMARY KEY,
  request_id TEXT NOT NULL,
  call_type TEXT NOT NULL,
  api_key TEXT NOT NULL,
  key_alias TEXT NOT NULL,
  "user" TEXT NOT NULL,
  team_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  end_user TEXT NOT NULL,
  request_tags TEXT NOT NULL,
  requested_model TEXT NOT NULL,
  model_group TEXT NOT NULL,
  model TEXT NOT NULL,
  model_id TEXT NOT NULL,
  custom_llm_provider TEXT NOT NULL,
  api_base TEXT NOT NULL,
  attempts TEXT NOT NULL,
  skipped_fallbacks TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  total_tokens INTEGER NOT NULL,
  spend_nanos INTEGER NOT NULL,
  priced INTEGER NOT NULL,
  unknown_outcome INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,
  end_ms INTEGER NOT NULL,
  request_duration_ms INTEGER NOT NULL,
  completion_start_ms INTEGER,
  status TEXT NOT NULL,
  error_status TEXT NOT NULL,
  metadata TEXT NOT NULL
);
CREATE INDEX spend_logs_request ON spend_logs(request_id);
CREATE INDEX spend_logs_start ON spend_logs(start_ms);
CREATE INDEX spend_logs_key ON spend_logs(api_key, start_ms);
CREATE INDEX spend_logs_user ON spend_logs("user", start_ms);
CREATE INDEX spend_logs_team ON spend_logs(team_id, start_ms);
)sql",
      // 2: tag budgets (/tag/*).
      R"sql(
CREATE TABLE tags (
  name TEXT PRIMARY KEY NOT NULL,
  description TEXT,
  max_budget_nanos INTEGER,
  budget_duration TEXT,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
)sql",
      // 3: deferred jobs (degradation mode `deferred`) and the spend log's degradation mode and
      // decision trace (issue 4).
      R"sql(
CREATE TABLE tollgate_jobs (
  id TEXT PRIMARY KEY NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
  model_group TEXT NOT NULL DEFAULT '',
  call_type TEXT NOT NULL DEFAULT '',
  api_key TEXT NOT NULL DEFAULT '',
  request_body TEXT NOT NULL DEFAULT '',
  result TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  attempts INTEGER NOT NULL DEFAULT 0,
  request_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX tollgate_jobs_status ON tollgate_jobs(status, created_ms, id);
CREATE INDEX tollgate_jobs_created ON tollgate_jobs(created_ms, id);
ALTER TABLE spend_logs ADD COLUMN degradation TEXT NOT NULL DEFAULT '';
ALTER TABLE spend_logs ADD COLUMN decision TEXT NOT NULL DEFAULT '';
)sql",
      // 4: each charged window with its end and period, so that restart recovery rebuilds exactly
      // the windows the in-memory ledger charged (issue 8 §5), and the spend log's line items.
      R"sql(
ALTER TABLE ledger_scope ADD COLUMN window_end_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ledger_scope ADD COLUMN period TEXT NOT NULL DEFAULT '';
ALTER TABLE spend_logs ADD COLUMN line_items TEXT NOT NULL DEFAULT '';
)sql",
  };
  return m;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

StoreError to_store_error(const DbError& e, std::string_view what) {
  StoreError out;
  out.message = std::string(what) + ": " + e.message;
  switch (e.code) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE: {
      out.code = StoreErrorCode::conflict;
      // "UNIQUE constraint failed: keys.key_alias" → key_alias (first column when composite).
      auto pos = e.message.find(": ");
      if (pos != std::string::npos) {
        std::string cols = e.message.substr(pos + 2);
        cols = cols.substr(0, cols.find(','));
        auto dot = cols.find('.');
        out.field = dot == std::string::npos ? cols : cols.substr(dot + 1);
      }
      out.message = std::string(what) + ": " + (out.field.empty() ? "duplicate" : out.field) +
                    " already exists";
      break;
    }
    case SQLITE_CONSTRAINT_NOTNULL:
    case SQLITE_CONSTRAINT_CHECK:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
      out.code = StoreErrorCode::invalid;
      break;
    default:
      out.code = StoreErrorCode::unavailable;
  }
  return out;
}

StoreError make_error(StoreErrorCode code, std::string message, std::string field = {}) {
  return StoreError{code, std::move(message), std::move(field)};
}

std::string to_json(const std::vector<std::string>& v) {
  boost::json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return boost::json::serialize(a);
}

std::vector<std::string> from_json_list(const std::string& text) {
  std::vector<std::string> out;
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec || !v.is_array()) return out;
  for (const auto& e : v.as_array())
    if (e.is_string()) out.emplace_back(e.as_string());
  return out;
}

// One SQLite connection and the mutex that serializes its users.
struct Conn {
  Db db;
  std::mutex mu;
};

// RAII transaction: rolls back unless committed.
class Txn {
 public:
  Txn(Db& db, bool write) : db_(db) {
    err_ = db_.exec(write ? "BEGIN IMMEDIATE" : "BEGIN");
    active_ = !err_;
  }
  ~Txn() {
    if (active_) (void)db_.exec("ROLLBACK");
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  const std::optional<DbError>& begin_error() const { return err_; }
  std::optional<DbError> commit() {
    auto e = db_.exec("COMMIT");
    if (!e) active_ = false;
    return e;
  }

 private:
  Db& db_;
  std::optional<DbError> err_;
  bool active_ = false;
};

// --- entity mapping ----------------------------------------------------------------------

template <class R>
struct Entity;

template <>
struct Entity<KeyRecord> {
  static constexpr const char* table = "keys";
  static constexpr const char* pk = "token_hash";
  static constexpr const char* what = "key";
  static constexpr const char* cols =
      "token_hash,key_alias,key_name,user_id,team_id,organization_id,models,metadata,tags,"
      "max_budget_nanos,budget_duration,soft_budget_nanos,budget_limits,model_max_budget,"
      "max_parallel_requests,rpm_limit,tpm_limit,blocked,expires_at_ms,created_at_ms,"
      "updated_at_ms";
  static constexpr int ncols = 21;
  static const std::string& id(const KeyRecord& r) { return r.token_hash; }
  static void bind(Stmt& s, const KeyRecord& r) {
    s.bind(1, r.token_hash);
    s.bind_or_null(2, r.key_alias);
    s.bind(3, r.key_name);
    s.bind_or_null(4, r.user_id);
    s.bind_or_null(5, r.team_id);
    s.bind_or_null(6, r.organization_id);
    s.bind(7, to_json(r.models));
    s.bind(8, r.metadata);
    s.bind(9, to_json(r.tags));
    s.bind(10, r.max_budget_nanos);
    s.bind(11, r.budget_duration);
    s.bind(12, r.soft_budget_nanos);
    s.bind(13, r.budget_limits);
    s.bind(14, r.model_max_budget);
    s.bind(15, r.max_parallel_requests);
    s.bind(16, r.rpm_limit);
    s.bind(17, r.tpm_limit);
    s.bind(18, r.blocked);
    s.bind(19, r.expires_at_ms);
    s.bind(20, r.created_at_ms);
    s.bind(21, r.updated_at_ms);
  }
  static KeyRecord read(const Stmt& s) {
    KeyRecord r;
    r.token_hash = s.text(0);
    r.key_alias = s.text(1);
    r.key_name = s.text(2);
    r.user_id = s.text(3);
    r.team_id = s.text(4);
    r.organization_id = s.text(5);
    r.models = from_json_list(s.text(6));
    r.metadata = s.text(7);
    r.tags = from_json_list(s.text(8));
    r.max_budget_nanos = s.opt_i64(9);
    r.budget_duration = s.opt_text(10);
    r.soft_budget_nanos = s.opt_i64(11);
    r.budget_limits = s.text(12);
    r.model_max_budget = s.text(13);
    r.max_parallel_requests = s.opt_i64(14);
    r.rpm_limit = s.opt_i64(15);
    r.tpm_limit = s.opt_i64(16);
    r.blocked = s.i64(17) != 0;
    r.expires_at_ms = s.opt_i64(18);
    r.created_at_ms = s.i64(19);
    r.updated_at_ms = s.i64(20);
    return r;
  }
};

template <>
struct Entity<UserRecord> {
  static constexpr const char* table = "users";
  static constexpr const char* pk = "user_id";
  static constexpr const char* what = "user";
  static constexpr const char* cols =
      "user_id,user_email,user_alias,max_budget_nanos,budget_duration,models,metadata,rpm_limit,"
      "tpm_limit,created_at_ms,updated_at_ms";
  static constexpr int ncols = 11;
  static const std::string& id(const UserRecord& r) { return r.user_id; }
  static void bind(Stmt& s, const UserRecord& r) {
    s.bind(1, r.user_id);
    s.bind_or_null(2, r.user_email);
    s.bind_or_null(3, r.user_alias);
    s.bind(4, r.max_budget_nanos);
    s.bind(5, r.budget_duration);
    s.bind(6, to_json(r.models));
    s.bind(7, r.metadata);
    s.bind(8, r.rpm_limit);
    s.bind(9, r.tpm_limit);
    s.bind(10, r.created_at_ms);
    s.bind(11, r.updated_at_ms);
  }
  static UserRecord read(const Stmt& s) {
    UserRecord r;
    r.user_id = s.text(0);
    r.user_email = s.text(1);
    r.user_alias = s.text(2);
    r.max_budget_nanos = s.opt_i64(3);
    r.budget_duration = s.opt_text(4);
    r.models = from_json_list(s.text(5));
    r.metadata = s.text(6);
    r.rpm_limit = s.opt_i64(7);
    r.tpm_limit = s.opt_i64(8);
    r.created_at_ms = s.i64(9);
    r.updated_at_ms = s.i64(10);
    return r;
  }
};

template <>
struct Entity<TeamRecord> {
  static constexpr const char* table = "teams";
  static constexpr const char* pk = "team_id";
  static constexpr const char* what = "team";
  static constexpr const char* cols =
      "team_id,team_alias,organization_id,max_budget_nanos,budget_duration,models,metadata,"
      "rpm_limit,tpm_limit,blocked,created_at_ms,updated_at_ms";
  static constexpr int ncols = 12;
  static const std::string& id(const TeamRecord& r) { return r.team_id; }
  static void bind(Stmt& s, const TeamRecord& r) {
    s.bind(1, r.team_id);
    s.bind_or_null(2, r.team_alias);
    s.bind_or_null(3, r.organization_id);
    s.bind(4, r.max_budget_nanos);
    s.bind(5, r.budget_duration);
    s.bind(6, to_json(r.models));
    s.bind(7, r.metadata);
    s.bind(8, r.rpm_limit);
    s.bind(9, r.tpm_limit);
    s.bind(10, r.blocked);
    s.bind(11, r.created_at_ms);
    s.bind(12, r.updated_at_ms);
  }
  static TeamRecord read(const Stmt& s) {
    TeamRecord r;
    r.team_id = s.text(0);
    r.team_alias = s.text(1);
    r.organization_id = s.text(2);
    r.max_budget_nanos = s.opt_i64(3);
    r.budget_duration = s.opt_text(4);
    r.models = from_json_list(s.text(5));
    r.metadata = s.text(6);
    r.rpm_limit = s.opt_i64(7);
    r.tpm_limit = s.opt_i64(8);
    r.blocked = s.i64(9) != 0;
    r.created_at_ms = s.i64(10);
    r.updated_at_ms = s.i64(11);
    return r;
  }
};

template <>
struct Entity<OrganizationRecord> {
  static constexpr const char* table = "organizations";
  static constexpr const char* pk = "organization_id";
  static constexpr const char* what = "organization";
  static constexpr const char* cols =
      "organization_id,organization_alias,max_budget_nanos,budget_duration,models,metadata,"
      "created_at_ms,updated_at_ms";
  static constexpr int ncols = 8;
  static const std::string& id(const OrganizationRecord& r) { return r.organization_id; }
  static void bind(Stmt& s, const OrganizationRecord& r) {
    s.bind(1, r.organization_id);
    s.bind_or_null(2, r.organization_alias);
    s.bind(3, r.max_budget_nanos);
    s.bind(4, r.budget_duration);
    s.bind(5, to_json(r.models));
    s.bind(6, r.metadata);
    s.bind(7, r.created_at_ms);
    s.bind(8, r.updated_at_ms);
  }
  static OrganizationRecord read(const Stmt& s) {
    OrganizationRecord r;
    r.organization_id = s.text(0);
    r.organization_alias = s.text(1);
    r.max_budget_nanos = s.opt_i64(2);
    r.budget_duration = s.opt_text(3);
    r.models = from_json_list(s.text(4));
    r.metadata = s.text(5);
    r.created_at_ms = s.i64(6);
    r.updated_at_ms = s.i64(7);
    return r;
  }
};

template <>
struct Entity<CustomerRecord> {
  static constexpr const char* table = "customers";
  static constexpr const char* pk = "user_id";
  static constexpr const char* what = "customer";
  static constexpr const char* cols =
      "user_id,alias,max_budget_nanos,budget_duration,blocked,created_at_ms,updated_at_ms";
  static constexpr int ncols = 7;
  static const std::string& id(const CustomerRecord& r) { return r.user_id; }
  static void bind(Stmt& s, const CustomerRecord& r) {
    s.bind(1, r.user_id);
    s.bind_or_null(2, r.alias);
    s.bind(3, r.max_budget_nanos);
    s.bind(4, r.budget_duration);
    s.bind(5, r.blocked);
    s.bind(6, r.created_at_ms);
    s.bind(7, r.updated_at_ms);
  }
  static CustomerRecord read(const Stmt& s) {
    CustomerRecord r;
    r.user_id = s.text(0);
    r.alias = s.text(1);
    r.max_budget_nanos = s.opt_i64(2);
    r.budget_duration = s.opt_text(3);
    r.blocked = s.i64(4) != 0;
    r.created_at_ms = s.i64(5);
    r.updated_at_ms = s.i64(6);
    return r;
  }
};

template <>
struct Entity<TagRecord> {
  static constexpr const char* table = "tags";
  static constexpr const char* pk = "name";
  static constexpr const char* what = "tag";
  static constexpr const char* cols = "name,description,max_budget_nanos,budget_duration,created_at_ms,updated_at_ms";
  static constexpr int ncols = 6;
  static const std::string& id(const TagRecord& r) { return r.name; }
  static void bind(Stmt& s, const TagRecord& r) {
    s.bind(1, r.name);
    s.bind_or_null(2, r.description);
    s.bind(3, r.max_budget_nanos);
    s.bind(4, r.budget_duration);
    s.bind(5, r.created_at_ms);
    s.bind(6, r.updated_at_ms);
  }
  static TagRecord read(const Stmt& s) {
    TagRecord r;
    r.name = s.text(0);
    r.description = s.text(1);
    r.max_budget_nanos = s.opt_i64(2);
    r.budget_duration = s.opt_text(3);
    r.created_at_ms = s.i64(4);
    r.updated_at_ms = s.i64(5);
    return r;
  }
};

template <>
struct Entity<JobRecord> {
  static constexpr const char* table = "tollgate_jobs";
  static constexpr const char* pk = "id";
  static constexpr const char* what = "job";
  static constexpr const char* cols =
      "id,created_ms,updated_ms,status,model_group,call_type,api_key,request_body,result,error,"
      "attempts,request_id";
  static constexpr int ncols = 12;
  static const std::string& id(const JobRecord& r) { return r.id; }
  static void bind(Stmt& s, const JobRecord& r) {
    s.bind(1, r.id);
    s.bind(2, r.created_ms);
    s.bind(3, r.updated_ms);
    s.bind(4, r.status);
    s.bind(5, r.model_group);
    s.bind(6, r.call_type);
    s.bind(7, r.api_key);
    s.bind(8, r.request_body);
    s.bind(9, r.result);
    s.bind(10, r.error);
    s.bind(11, r.attempts);
    s.bind(12, r.request_id);
  }
  static JobRecord read(const Stmt& s) {
    JobRecord r;
    r.id = s.text(0);
    r.created_ms = s.i64(1);
    r.updated_ms = s.i64(2);
    r.status = s.text(3);
    r.model_group = s.text(4);
    r.call_type = s.text(5);
    r.api_key = s.text(6);
    r.request_body = s.text(7);
    r.result = s.text(8);
    r.error = s.text(9);
    r.attempts = s.i64(10);
    r.request_id = s.text(11);
    return r;
  }
};

constexpr const char* kMemberCols = "team_id,user_id,role,max_budget_in_team_nanos,budget_duration";

TeamMemberRecord read_member(const Stmt& s) {
  TeamMemberRecord m;
  m.team_id = s.text(0);
  m.user_id = s.text(1);
  m.role = s.text(2);
  m.max_budget_in_team_nanos = s.opt_i64(3);
  m.budget_duration = s.opt_text(4);
  return m;
}

constexpr const char* kSpendCols =
    "request_id,call_type,api_key,key_alias,\"user\",team_id,organization_id,end_user,"
    "request_tags,requested_model,model_group,model,model_id,custom_llm_provider,api_base,"
    "attempts,skipped_fallbacks,prompt_tokens,completion_tokens,cached_tokens,total_tokens,"
    "spend_nanos,priced,unknown_outcome,start_ms,end_ms,request_duration_ms,"
    "completion_start_ms,status,error_status,metadata,degradation,decision,line_items";
constexpr int kSpendNcols = 34;

void bind_spend(Stmt& s, const SpendLogRow& r) {
  int i = 1;
  for (const std::string* f : {&r.request_id, &r.call_type, &r.api_key, &r.key_alias, &r.user,
                               &r.team_id, &r.organization_id, &r.end_user})
    s.bind(i++, *f);
  s.bind(i++, to_json(r.request_tags));
  for (const std::string* f : {&r.requested_model, &r.model_group, &r.model, &r.model_id,
                               &r.custom_llm_provider, &r.api_base, &r.attempts,
                               &r.skipped_fallbacks})
    s.bind(i++, *f);
  for (std::int64_t v : {r.prompt_tokens, r.completion_tokens, r.cached_tokens, r.total_tokens,
                         r.spend_nanos})
    s.bind(i++, v);
  s.bind(i++, r.priced);
  s.bind(i++, r.unknown_outcome);
  for (std::int64_t v : {r.start_ms, r.end_ms, r.request_duration_ms}) s.bind(i++, v);
  s.bind(i++, r.completion_start_ms);
  s.bind(i++, r.status);
  s.bind(i++, r.error_status);
  s.bind(i++, r.metadata);
  s.bind(i++, r.degradation);
  s.bind(i++, r.decision);
  s.bind(i++, r.line_items);
}

SpendLogRow read_spend(const Stmt& s) {
  SpendLogRow r;
  int i = 0;
  for (std::string* f : {&r.request_id, &r.call_type, &r.api_key, &r.key_alias, &r.user,
                         &r.team_id, &r.organization_id, &r.end_user})
    *f = s.text(i++);
  r.request_tags = from_json_list(s.text(i++));
  for (std::string* f : {&r.requested_model, &r.model_group, &r.model, &r.model_id,
                         &r.custom_llm_provider, &r.api_base, &r.attempts, &r.skipped_fallbacks})
    *f = s.text(i++);
  for (std::int64_t* f : {&r.prompt_tokens, &r.completion_tokens, &r.cached_tokens,
                          &r.total_tokens, &r.spend_nanos})
    *f = s.i64(i++);
  r.priced = s.i64(i++) != 0;
  r.unknown_outcome = s.i64(i++) != 0;
  for (std::int64_t* f : {&r.start_ms, &r.end_ms, &r.request_duration_ms}) *f = s.i64(i++);
  r.completion_start_ms = s.opt_i64(i++);
  r.status = s.text(i++);
  r.error_status = s.text(i++);
  r.metadata = s.text(i++);
  r.degradation = s.text(i++);
  r.decision = s.text(i++);
  r.line_items = s.text(i++);
  return r;
}

std::string placeholders(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

const char* kind_name(LedgerKind k) { return k == LedgerKind::reserve ? "reserve" : "settle"; }

// --- migrations --------------------------------------------------------------------------

std::optional<StoreError> migrate(Db& db) {
  if (auto e = db.exec("CREATE TABLE IF NOT EXISTS schema_version ("
                       "version INTEGER PRIMARY KEY, applied_at_ms INTEGER NOT NULL)"))
    return to_store_error(*e, "create schema_version");
  const auto& m = migrations();
  const int known = static_cast<int>(m.size());
  for (;;) {
    Txn txn(db, true);
    if (txn.begin_error()) return to_store_error(*txn.begin_error(), "migrate");
    Stmt q;
    if (auto e = Stmt::prepare(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version", q))
      return to_store_error(*e, "read schema_version");
    if (q.step() != SQLITE_ROW) return to_store_error(db.last_error(), "read schema_version");
    const int current = static_cast<int>(q.i64(0));
    q.reset();
    if (current > known)
      return make_error(StoreErrorCode::invalid,
                        "database schema version " + std::to_string(current) +
                            " is newer than this binary understands (" + std::to_string(known) +
                            "); upgrade tollgate");
    if (current == known) return std::nullopt;
    if (auto e = db.exec(m[static_cast<std::size_t>(current)]))
      return to_store_error(*e, "migration " + std::to_string(current + 1));
    Stmt ins;
    if (auto e = Stmt::prepare(db, "INSERT INTO schema_version (version, applied_at_ms) VALUES (?, ?)", ins))
      return to_store_error(*e, "record migration");
    ins.bind(1, static_cast<std::int64_t>(current + 1));
    ins.bind(2, now_ms());
    if (auto e = ins.run()) return to_store_error(*e, "record migration");
    if (auto e = txn.commit()) return to_store_error(*e, "commit migration");
  }
}

// --- the store ---------------------------------------------------------------------------

class SqliteStore final : public Store {
 public:
  SqliteStore(ProcessLock lock, std::shared_ptr<Conn> writer, std::shared_ptr<Conn> admin, SqliteOptions opts)
      : lock_(std::move(lock)), wconn_(std::move(writer)), aconn_(std::move(admin)), opts_(opts) {
    samples_.resize(kSampleRing);
  }

  std::optional<StoreError> start() {
    std::lock_guard lk(wconn_->mu);
    Db& db = wconn_->db;
    if (auto e = Stmt::prepare(db,
                               "INSERT INTO ledger (reservation_id, kind, amount_nanos, actual_nanos, "
                               "settle_kind, request_id, model, at_ms) VALUES (?,?,?,?,?,?,?,?)",
                               ins_ledger_))
      return to_store_error(*e, "prepare");
    if (auto e = Stmt::prepare(db,
                               "INSERT OR IGNORE INTO ledger_scope (seq, scope_kind, scope_id, "
                               "window_start_ms, window_end_ms, period) VALUES (?,?,?,?,?,?)",
                               ins_scope_))
      return to_store_error(*e, "prepare");
    if (auto e = Stmt::prepare(
            db,
            "INSERT OR IGNORE INTO ledger_scope (seq, scope_kind, scope_id, window_start_ms, window_end_ms, period) "
            "SELECT ?1, scope_kind, scope_id, window_start_ms, window_end_ms, period FROM ledger_scope WHERE seq = "
            "(SELECT MAX(seq) FROM ledger WHERE reservation_id = ?2 AND kind = 'reserve' AND seq < ?1)",
            copy_scope_))
      return to_store_error(*e, "prepare");
    if (auto e = Stmt::prepare(db,
                               std::string("INSERT INTO spend_logs (") + kSpendCols + ") VALUES (" +
                                   placeholders(kSpendNcols) + ")",
                               ins_spend_))
      return to_store_error(*e, "prepare");
    writable_ = true;
    last_write_ = Clock::now();
    thread_ = std::thread([this] { run(); });
    return std::nullopt;
  }

  ~SqliteStore() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    // Statements must be finalized before their connection closes.
    std::lock_guard lk(wconn_->mu);
    ins_ledger_ = Stmt();
    ins_scope_ = Stmt();
    copy_scope_ = Stmt();
    ins_spend_ = Stmt();
  }

  // --- generic identity operations -------------------------------------------------------

  template <class R>
  StoreResult<R> create(R r) {
    using E = Entity<R>;
    if (E::id(r).empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, std::string(E::pk) + " is required", E::pk));
    if (r.created_at_ms == 0) r.created_at_ms = now_ms();
    if (r.updated_at_ms == 0) r.updated_at_ms = r.created_at_ms;
    return mutate<R>(std::string("create ") + E::what, [&](Db& db) -> StoreResult<R> {
      Stmt s;
      if (auto e = Stmt::prepare(db, std::string("INSERT INTO ") + E::table + " (" + E::cols +
                                         ") VALUES (" + placeholders(E::ncols) + ")",
                                 s))
        return std::unexpected(to_store_error(*e, std::string("create ") + E::what));
      E::bind(s, r);
      if (auto e = s.run()) return std::unexpected(to_store_error(*e, std::string("create ") + E::what));
      return r;
    });
  }

  template <class R>
  StoreResult<R> get(const std::string& id) {
    using E = Entity<R>;
    std::lock_guard lk(aconn_->mu);
    Stmt s;
    if (auto e = Stmt::prepare(aconn_->db,
                               std::string("SELECT ") + E::cols + " FROM " + E::table + " WHERE " +
                                   E::pk + " = ?",
                               s))
      return std::unexpected(to_store_error(*e, std::string("get ") + E::what));
    s.bind(1, id);
    int rc = s.step();
    if (rc == SQLITE_ROW) return E::read(s);
    if (rc == SQLITE_DONE)
      return std::unexpected(make_error(StoreErrorCode::not_found,
                                        std::string(E::what) + " not found", E::pk));
    return std::unexpected(to_store_error(aconn_->db.last_error(), std::string("get ") + E::what));
  }

  template <class R>
  StoreResult<R> update(R r) {
    using E = Entity<R>;
    const std::string what = std::string("update ") + E::what;
    return mutate<R>(what, [&](Db& db) -> StoreResult<R> {
      Stmt q;
      if (auto e = Stmt::prepare(db, std::string("SELECT created_at_ms FROM ") + E::table +
                                         " WHERE " + E::pk + " = ?",
                                 q))
        return std::unexpected(to_store_error(*e, what));
      q.bind(1, E::id(r));
      int rc = q.step();
      if (rc == SQLITE_DONE)
        return std::unexpected(make_error(StoreErrorCode::not_found,
                                          std::string(E::what) + " not found", E::pk));
      if (rc != SQLITE_ROW) return std::unexpected(to_store_error(db.last_error(), what));
      if (r.created_at_ms == 0) r.created_at_ms = q.i64(0);
      q.reset();
      r.updated_at_ms = std::max(now_ms(), r.created_at_ms);
      Stmt s;
      if (auto e = Stmt::prepare(db, std::string("UPDATE ") + E::table + " SET (" + E::cols +
                                         ") = (" + placeholders(E::ncols) + ") WHERE " + E::pk +
                                         " = ?",
                                 s))
        return std::unexpected(to_store_error(*e, what));
      E::bind(s, r);
      s.bind(E::ncols + 1, E::id(r));
      if (auto e = s.run()) return std::unexpected(to_store_error(*e, what));
      return r;
    });
  }

  template <class R>
  StoreResult<void> remove(const std::string& id, std::vector<std::string> extra = {}) {
    using E = Entity<R>;
    const std::string what = std::string("delete ") + E::what;
    auto r = mutate<bool>(what, [&](Db& db) -> StoreResult<bool> {
      Stmt s;
      if (auto e = Stmt::prepare(db, std::string("DELETE FROM ") + E::table + " WHERE " + E::pk + " = ?", s))
        return std::unexpected(to_store_error(*e, what));
      s.bind(1, id);
      if (auto e = s.run()) return std::unexpected(to_store_error(*e, what));
      if (db.changes() == 0)
        return std::unexpected(make_error(StoreErrorCode::not_found,
                                          std::string(E::what) + " not found", E::pk));
      for (const auto& sql : extra) {
        Stmt x;
        if (auto e = Stmt::prepare(db, sql, x)) return std::unexpected(to_store_error(*e, what));
        x.bind(1, id);
        if (auto e = x.run()) return std::unexpected(to_store_error(*e, what));
      }
      return true;
    });
    if (!r) return std::unexpected(r.error());
    return {};
  }

  template <class R>
  StoreResult<std::vector<R>> list_where(Db& db, const std::string& where,
                                         const std::vector<std::string>& args,
                                         const std::string& tail = {}) {
    using E = Entity<R>;
    Stmt s;
    std::string sql = std::string("SELECT ") + E::cols + " FROM " + E::table;
    if (!where.empty()) sql += " WHERE " + where;
    sql += tail.empty() ? std::string(" ORDER BY ") + E::pk : tail;
    if (auto e = Stmt::prepare(db, sql, s))
      return std::unexpected(to_store_error(*e, std::string("list ") + E::what));
    for (std::size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i + 1), args[i]);
    std::vector<R> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back(E::read(s));
    if (rc != SQLITE_DONE)
      return std::unexpected(to_store_error(db.last_error(), std::string("list ") + E::what));
    return out;
  }

  template <class R>
  StoreResult<std::vector<R>> list_all() {
    std::lock_guard lk(aconn_->mu);
    return list_where<R>(aconn_->db, "", {});
  }

  // Runs `fn` in a write transaction on the admin connection; bumps identity_generation in
  // the same transaction when `bump_generation` (every identity mutation).
  template <class T, class F>
  StoreResult<T> admin_write(const std::string& what, F&& fn, bool bump_generation) {
    std::lock_guard lk(aconn_->mu);
    Db& db = aconn_->db;
    Txn txn(db, true);
    if (txn.begin_error()) return std::unexpected(to_store_error(*txn.begin_error(), what));
    StoreResult<T> r = fn(db);
    if (!r) return r;
    if (bump_generation)
      if (auto e = db.exec("UPDATE identity_generation SET generation = generation + 1 WHERE id = 1"))
        return std::unexpected(to_store_error(*e, what));
    if (auto e = txn.commit()) return std::unexpected(to_store_error(*e, what));
    return r;
  }

  // Runs `fn` in a write transaction on the admin connection and bumps identity_generation.
  template <class T, class F>
  StoreResult<T> mutate(const std::string& what, F&& fn) {
    return admin_write<T>(what, std::forward<F>(fn), true);
  }

  // --- Store: identities -------------------------------------------------------------------

  StoreResult<KeyRecord> create_key(const KeyRecord& k) override { return create(k); }
  StoreResult<KeyRecord> get_key(const std::string& h) override { return get<KeyRecord>(h); }
  StoreResult<KeyRecord> update_key(const KeyRecord& k) override { return update(k); }
  StoreResult<void> delete_key(const std::string& h) override { return remove<KeyRecord>(h); }
  StoreResult<std::vector<KeyRecord>> list_keys(const KeyFilter& f) override {
    std::string where;
    std::vector<std::string> args;
    auto add = [&](const char* col, const std::optional<std::string>& v) {
      if (!v) return;
      if (!where.empty()) where += " AND ";
      where += std::string(col) + " = ?";
      args.push_back(*v);
    };
    add("user_id", f.user_id);
    add("team_id", f.team_id);
    add("organization_id", f.organization_id);
    add("key_alias", f.key_alias);
    std::lock_guard lk(aconn_->mu);
    return list_where<KeyRecord>(aconn_->db, where, args,
                                 " ORDER BY created_at_ms, token_hash LIMIT " +
                                     std::to_string(std::max<std::int64_t>(f.limit, 0)) +
                                     " OFFSET " + std::to_string(std::max<std::int64_t>(f.offset, 0)));
  }

  StoreResult<UserRecord> create_user(const UserRecord& u) override { return create(u); }
  StoreResult<UserRecord> get_user(const std::string& id) override { return get<UserRecord>(id); }
  StoreResult<UserRecord> update_user(const UserRecord& u) override { return update(u); }
  StoreResult<void> delete_user(const std::string& id) override {
    return remove<UserRecord>(id, {"DELETE FROM team_members WHERE user_id = ?"});
  }
  StoreResult<std::vector<UserRecord>> list_users() override { return list_all<UserRecord>(); }

  StoreResult<TeamRecord> create_team(const TeamRecord& t) override { return create(t); }
  StoreResult<TeamRecord> get_team(const std::string& id) override { return get<TeamRecord>(id); }
  StoreResult<TeamRecord> update_team(const TeamRecord& t) override { return update(t); }
  StoreResult<void> delete_team(const std::string& id) override {
    return remove<TeamRecord>(id, {"DELETE FROM team_members WHERE team_id = ?"});
  }
  StoreResult<std::vector<TeamRecord>> list_teams(const std::optional<std::string>& org) override {
    std::lock_guard lk(aconn_->mu);
    if (org) return list_where<TeamRecord>(aconn_->db, "organization_id = ?", {*org});
    return list_where<TeamRecord>(aconn_->db, "", {});
  }

  StoreResult<TeamMemberRecord> upsert_team_member(const TeamMemberRecord& m) override {
    if (m.team_id.empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, "team_id is required", "team_id"));
    if (m.user_id.empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, "user_id is required", "user_id"));
    return mutate<TeamMemberRecord>("add team member", [&](Db& db) -> StoreResult<TeamMemberRecord> {
      Stmt s;
      if (auto e = Stmt::prepare(db,
                                 std::string("INSERT OR REPLACE INTO team_members (") + kMemberCols +
                                     ") VALUES (?,?,?,?,?)",
                                 s))
        return std::unexpected(to_store_error(*e, "add team member"));
      s.bind(1, m.team_id);
      s.bind(2, m.user_id);
      s.bind(3, m.role);
      s.bind(4, m.max_budget_in_team_nanos);
      s.bind(5, m.budget_duration);
      if (auto e = s.run()) return std::unexpected(to_store_error(*e, "add team member"));
      return m;
    });
  }

  StoreResult<void> remove_team_member(const std::string& team_id, const std::string& user_id) override {
    auto r = mutate<bool>("remove team member", [&](Db& db) -> StoreResult<bool> {
      Stmt s;
      if (auto e = Stmt::prepare(db, "DELETE FROM team_members WHERE team_id = ? AND user_id = ?", s))
        return std::unexpected(to_store_error(*e, "remove team member"));
      s.bind(1, team_id);
      s.bind(2, user_id);
      if (auto e = s.run()) return std::unexpected(to_store_error(*e, "remove team member"));
      if (db.changes() == 0)
        return std::unexpected(make_error(StoreErrorCode::not_found, "team member not found", "user_id"));
      return true;
    });
    if (!r) return std::unexpected(r.error());
    return {};
  }

  StoreResult<std::vector<TeamMemberRecord>> members_where(Db& db, const char* where,
                                                           const std::string* arg) {
    Stmt s;
    std::string sql = std::string("SELECT ") + kMemberCols + " FROM team_members";
    if (where) sql += std::string(" WHERE ") + where;
    sql += " ORDER BY team_id, user_id";
    if (auto e = Stmt::prepare(db, sql, s)) return std::unexpected(to_store_error(*e, "list team members"));
    if (arg) s.bind(1, *arg);
    std::vector<TeamMemberRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back(read_member(s));
    if (rc != SQLITE_DONE) return std::unexpected(to_store_error(db.last_error(), "list team members"));
    return out;
  }

  StoreResult<std::vector<TeamMemberRecord>> list_team_members(const std::string& team_id) override {
    std::lock_guard lk(aconn_->mu);
    return members_where(aconn_->db, "team_id = ?", &team_id);
  }

  StoreResult<OrganizationRecord> create_organization(const OrganizationRecord& o) override { return create(o); }
  StoreResult<OrganizationRecord> get_organization(const std::string& id) override {
    return get<OrganizationRecord>(id);
  }
  StoreResult<OrganizationRecord> update_organization(const OrganizationRecord& o) override { return update(o); }
  StoreResult<void> delete_organization(const std::string& id) override {
    return remove<OrganizationRecord>(id);
  }
  StoreResult<std::vector<OrganizationRecord>> list_organizations() override {
    return list_all<OrganizationRecord>();
  }

  StoreResult<CustomerRecord> create_customer(const CustomerRecord& c) override { return create(c); }
  StoreResult<CustomerRecord> get_customer(const std::string& id) override { return get<CustomerRecord>(id); }
  StoreResult<CustomerRecord> update_customer(const CustomerRecord& c) override { return update(c); }
  StoreResult<void> delete_customer(const std::string& id) override { return remove<CustomerRecord>(id); }
  StoreResult<std::vector<CustomerRecord>> list_customers() override { return list_all<CustomerRecord>(); }

  StoreResult<TagRecord> create_tag(const TagRecord& t) override { return create(t); }
  StoreResult<TagRecord> get_tag(const std::string& name) override { return get<TagRecord>(name); }
  StoreResult<TagRecord> update_tag(const TagRecord& t) override { return update(t); }
  StoreResult<void> delete_tag(const std::string& name) override { return remove<TagRecord>(name); }
  StoreResult<std::vector<TagRecord>> list_tags() override { return list_all<TagRecord>(); }

  StoreResult<std::int64_t> read_generation(Db& db) {
    Stmt s;
    if (auto e = Stmt::prepare(db, "SELECT generation FROM identity_generation WHERE id = 1", s))
      return std::unexpected(to_store_error(*e, "identity generation"));
    if (s.step() != SQLITE_ROW) return std::unexpected(to_store_error(db.last_error(), "identity generation"));
    return s.i64(0);
  }

  StoreResult<std::int64_t> identity_generation() override {
    std::lock_guard lk(aconn_->mu);
    return read_generation(aconn_->db);
  }

  StoreResult<IdentitySnapshot> load_all_identities() override {
    std::lock_guard lk(aconn_->mu);
    Db& db = aconn_->db;
    Txn txn(db, false);
    if (txn.begin_error()) return std::unexpected(to_store_error(*txn.begin_error(), "load identities"));
    IdentitySnapshot snap;
    auto gen = read_generation(db);
    if (!gen) return std::unexpected(gen.error());
    snap.generation = *gen;
#define TG_LOAD(field, T)                                   \
  {                                                         \
    auto r = list_where<T>(db, "", {});                     \
    if (!r) return std::unexpected(r.error());              \
    snap.field = std::move(*r);                             \
  }
    TG_LOAD(keys, KeyRecord)
    TG_LOAD(users, UserRecord)
    TG_LOAD(teams, TeamRecord)
    TG_LOAD(organizations, OrganizationRecord)
    TG_LOAD(customers, CustomerRecord)
    TG_LOAD(tags, TagRecord)
#undef TG_LOAD
    auto members = members_where(db, nullptr, nullptr);
    if (!members) return std::unexpected(members.error());
    snap.team_members = std::move(*members);
    (void)txn.commit();
    return snap;
  }

  // --- Store: ledger and spend logs -------------------------------------------------------

  void append_ledger(LedgerRecord record, DurableCallback on_durable) override {
    {
      std::lock_guard lk(mu_);
      if (!stop_) {
        queue_.push_back(LedgerItem{std::move(record), std::move(on_durable), Clock::now()});
        cv_.notify_one();
        return;
      }
    }
    fire(on_durable, false);
  }

  void append_spend_log(SpendLogRow row) override {
    std::lock_guard lk(mu_);
    if (stop_ || pending_spend_ >= opts_.max_pending_spend_rows) {
      std::lock_guard sl(stats_mu_);
      ++stats_.dropped_spend_rows;
      return;
    }
    ++pending_spend_;
    queue_.push_back(SpendItem{std::move(row)});
    cv_.notify_one();
  }

  StoreResult<RecoveryResult> recover_ledger(std::int64_t now, const ScopeRoller& roll) override {
    auto r = run_on_writer<StoreResult<RecoveryResult>>([this, now, &roll] { return recover_locked(now, roll); });
    if (!r) return std::unexpected(make_error(StoreErrorCode::unavailable, "store is closed"));
    return std::move(*r);
  }

  StoreResult<std::vector<LedgerRecord>> read_ledger(std::int64_t after, std::int64_t limit) override {
    std::lock_guard lk(aconn_->mu);
    Db& db = aconn_->db;
    Txn txn(db, false);
    if (txn.begin_error()) return std::unexpected(to_store_error(*txn.begin_error(), "read ledger"));
    Stmt s, sc;
    if (auto e = Stmt::prepare(db,
                               "SELECT seq, reservation_id, kind, amount_nanos, actual_nanos, "
                               "settle_kind, request_id, model, at_ms FROM ledger WHERE seq > ? "
                               "ORDER BY seq LIMIT ?",
                               s))
      return std::unexpected(to_store_error(*e, "read ledger"));
    if (auto e = Stmt::prepare(db,
                               "SELECT scope_kind, scope_id, window_start_ms, window_end_ms, period FROM ledger_scope "
                               "WHERE seq = ? ORDER BY scope_kind, scope_id, window_start_ms",
                               sc))
      return std::unexpected(to_store_error(*e, "read ledger"));
    s.bind(1, after);
    s.bind(2, limit);
    std::vector<LedgerRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      LedgerRecord r;
      r.sequence = s.i64(0);
      r.reservation_id = static_cast<std::uint64_t>(s.i64(1));
      r.kind = s.text(2) == "reserve" ? LedgerKind::reserve : LedgerKind::settle;
      r.amount_nanos = s.i64(3);
      r.actual_nanos = s.i64(4);
      r.settle_kind = s.text(5);
      r.request_id = s.text(6);
      r.model = s.text(7);
      r.at_ms = s.i64(8);
      sc.bind(1, r.sequence);
      while (sc.step() == SQLITE_ROW)
        r.scopes.push_back(LedgerScope{sc.text(0), sc.text(1), sc.i64(2), sc.i64(3), sc.text(4)});
      sc.reset();
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return std::unexpected(to_store_error(db.last_error(), "read ledger"));
    return out;
  }

  StoreResult<std::vector<SpendLogRow>> query_spend_logs(const SpendLogFilter& f) override {
    std::string sql = std::string("SELECT ") + kSpendCols + " FROM spend_logs";
    std::vector<std::variant<std::string, std::int64_t>> args;
    std::string where;
    auto cond = [&](const char* c) { where += where.empty() ? " WHERE " : " AND "; where += c; };
    if (f.api_key) { cond("api_key = ?"); args.emplace_back(*f.api_key); }
    if (f.user) { cond("\"user\" = ?"); args.emplace_back(*f.user); }
    if (f.team_id) { cond("team_id = ?"); args.emplace_back(*f.team_id); }
    if (f.request_id) { cond("request_id = ?"); args.emplace_back(*f.request_id); }
    if (f.start_ms) { cond("start_ms >= ?"); args.emplace_back(*f.start_ms); }
    if (f.end_ms) { cond("start_ms < ?"); args.emplace_back(*f.end_ms); }
    sql += where + " ORDER BY start_ms DESC, id DESC LIMIT ?";
    args.emplace_back(std::max<std::int64_t>(f.limit, 0));
    std::lock_guard lk(aconn_->mu);
    Db& db = aconn_->db;
    Stmt s;
    if (auto e = Stmt::prepare(db, sql, s)) return std::unexpected(to_store_error(*e, "query spend logs"));
    for (std::size_t i = 0; i < args.size(); ++i)
      std::visit([&](const auto& v) { s.bind(static_cast<int>(i + 1), v); }, args[i]);
    std::vector<SpendLogRow> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back(read_spend(s));
    if (rc != SQLITE_DONE) return std::unexpected(to_store_error(db.last_error(), "query spend logs"));
    return out;
  }

  StoreResult<SpendLogRow> get_spend_log(const std::string& request_id) override {
    if (request_id.empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, "request_id is required", "request_id"));
    auto rows = query_spend_logs({.request_id = request_id, .limit = 1});
    if (!rows) return std::unexpected(rows.error());
    if (rows->empty())
      return std::unexpected(make_error(StoreErrorCode::not_found, "spend log not found", "request_id"));
    return std::move(rows->front());
  }

  // --- Store: deferred jobs --------------------------------------------------------------

  static std::optional<StoreError> check_job(const JobRecord& j) {
    if (j.id.empty()) return make_error(StoreErrorCode::invalid, "id is required", "id");
    if (!is_job_status(j.status))
      return make_error(StoreErrorCode::invalid,
                        "status must be queued, running, succeeded or failed (got \"" + j.status + "\")",
                        "status");
    return std::nullopt;
  }

  StoreResult<JobRecord> create_job(const JobRecord& job) override {
    using E = Entity<JobRecord>;
    if (auto e = check_job(job)) return std::unexpected(*e);
    JobRecord r = job;
    if (r.created_ms == 0) r.created_ms = now_ms();
    if (r.updated_ms == 0) r.updated_ms = r.created_ms;
    return admin_write<JobRecord>(
        "create job",
        [&](Db& db) -> StoreResult<JobRecord> {
          Stmt s;
          if (auto e = Stmt::prepare(db, std::string("INSERT INTO ") + E::table + " (" + E::cols +
                                             ") VALUES (" + placeholders(E::ncols) + ")",
                                     s))
            return std::unexpected(to_store_error(*e, "create job"));
          E::bind(s, r);
          if (auto e = s.run()) return std::unexpected(to_store_error(*e, "create job"));
          return r;
        },
        false);
  }

  StoreResult<JobRecord> get_job(const std::string& id) override { return get<JobRecord>(id); }

  StoreResult<JobRecord> update_job(const JobRecord& job) override {
    using E = Entity<JobRecord>;
    if (auto e = check_job(job)) return std::unexpected(*e);
    JobRecord r = job;
    return admin_write<JobRecord>(
        "update job",
        [&](Db& db) -> StoreResult<JobRecord> {
          Stmt q;
          if (auto e = Stmt::prepare(db, "SELECT created_ms FROM tollgate_jobs WHERE id = ?", q))
            return std::unexpected(to_store_error(*e, "update job"));
          q.bind(1, r.id);
          const int rc = q.step();
          if (rc == SQLITE_DONE)
            return std::unexpected(make_error(StoreErrorCode::not_found, "job not found", "id"));
          if (rc != SQLITE_ROW) return std::unexpected(to_store_error(db.last_error(), "update job"));
          if (r.created_ms == 0) r.created_ms = q.i64(0);
          q.reset();
          if (r.updated_ms == 0) r.updated_ms = std::max(now_ms(), r.created_ms);
          Stmt s;
          if (auto e = Stmt::prepare(db, std::string("UPDATE ") + E::table + " SET (" + E::cols +
                                             ") = (" + placeholders(E::ncols) + ") WHERE id = ?",
                                     s))
            return std::unexpected(to_store_error(*e, "update job"));
          E::bind(s, r);
          s.bind(E::ncols + 1, r.id);
          if (auto e = s.run()) return std::unexpected(to_store_error(*e, "update job"));
          return r;
        },
        false);
  }

  StoreResult<std::vector<JobRecord>> list_jobs(std::optional<std::string> status, int limit) override {
    const std::string tail = " ORDER BY created_ms, id LIMIT " + std::to_string(std::max(limit, 0));
    std::lock_guard lk(aconn_->mu);
    if (status) return list_where<JobRecord>(aconn_->db, "status = ?", {*status}, tail);
    return list_where<JobRecord>(aconn_->db, "", {}, tail);
  }

  StoreResult<GlobalSpend> global_spend(std::optional<std::int64_t> start,
                                        std::optional<std::int64_t> end) override {
    std::lock_guard lk(aconn_->mu);
    Db& db = aconn_->db;
    Txn txn(db, false);
    if (txn.begin_error()) return std::unexpected(to_store_error(*txn.begin_error(), "global spend"));
    const std::string where = " WHERE start_ms >= ? AND start_ms < ?";
    auto query = [&](const std::string& sql, auto&& on_row) -> std::optional<StoreError> {
      Stmt s;
      if (auto e = Stmt::prepare(db, sql, s)) return to_store_error(*e, "global spend");
      s.bind(1, start.value_or(std::numeric_limits<std::int64_t>::min()));
      s.bind(2, end.value_or(std::numeric_limits<std::int64_t>::max()));
      int rc;
      while ((rc = s.step()) == SQLITE_ROW) on_row(s);
      if (rc != SQLITE_DONE) return to_store_error(db.last_error(), "global spend");
      return std::nullopt;
    };
    GlobalSpend g;
    if (auto e = query("SELECT COALESCE(SUM(spend_nanos),0), COUNT(*), COALESCE(SUM(total_tokens),0) "
                       "FROM spend_logs" + where,
                       [&](const Stmt& s) {
                         g.total_spend_nanos = s.i64(0);
                         g.requests = s.i64(1);
                         g.total_tokens = s.i64(2);
                       }))
      return std::unexpected(*e);
    auto by = [&](const char* col, std::vector<SpendBucket>& out) {
      return query(std::string("SELECT ") + col + ", SUM(spend_nanos), COUNT(*), SUM(total_tokens) "
                   "FROM spend_logs" + where + " GROUP BY " + col +
                   " ORDER BY SUM(spend_nanos) DESC, " + col,
                   [&](const Stmt& s) { out.push_back(SpendBucket{s.text(0), s.i64(1), s.i64(2), s.i64(3)}); });
    };
    if (auto e = by("model_group", g.by_model_group)) return std::unexpected(*e);
    if (auto e = by("api_key", g.by_key)) return std::unexpected(*e);
    if (auto e = by("team_id", g.by_team)) return std::unexpected(*e);
    return g;
  }

  bool flush() override {
    std::uint64_t before;
    {
      std::lock_guard sl(stats_mu_);
      before = stats_.failed_batches;
    }
    auto r = run_on_writer<bool>([] { return true; });
    if (!r) return false;
    std::lock_guard sl(stats_mu_);
    return stats_.failed_batches == before;
  }

  StoreHealth health() override {
    bool stale;
    {
      std::lock_guard sl(stats_mu_);
      stale = Clock::now() - last_write_ > std::chrono::seconds(1);
    }
    if (stale) {
      // Nothing written recently: prove the database is still writable with a tiny transaction.
      auto r = run_on_writer<bool>([this] {
        auto err = write_txn([&](Db& db) -> std::optional<DbError> {
          Stmt s;
          if (auto e = Stmt::prepare(db, "INSERT OR REPLACE INTO store_meta (name, value) VALUES ('health_probe_ms', ?)", s))
            return e;
          s.bind(1, std::to_string(now_ms()));
          return s.run();
        });
        note_write(err);
        return !err;
      });
      if (!r) return StoreHealth{false, "store is closed"};
    }
    std::lock_guard sl(stats_mu_);
    return StoreHealth{writable_, last_error_};
  }

  WriterStats writer_stats() const override {
    std::lock_guard sl(stats_mu_);
    WriterStats s = stats_;
    std::size_t n = std::min<std::size_t>(sample_count_, kSampleRing);
    if (n > 0) {
      std::vector<std::int64_t> v(samples_.begin(), samples_.begin() + static_cast<std::ptrdiff_t>(n));
      auto pct = [&](double p) {
        std::size_t k = std::min(n - 1, static_cast<std::size_t>(p * static_cast<double>(n - 1) + 0.5));
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
        return v[k];
      };
      s.p50_us = pct(0.50);
      s.p99_us = pct(0.99);
      s.max_us = *std::max_element(v.begin(), v.end());
    }
    return s;
  }

 private:
  struct LedgerItem {
    LedgerRecord record;
    DurableCallback cb;
    Clock::time_point enqueued;
  };
  struct SpendItem {
    SpendLogRow row;
  };
  using Item = std::variant<LedgerItem, SpendItem>;

  static constexpr std::size_t kSampleRing = 1 << 16;

  static void fire(DurableCallback& cb, bool ok) {
    if (!cb) return;
    try {
      cb(ok);
    } catch (...) {
      // A callback must not take the writer down; the record's fate is already decided.
    }
  }

  // Runs fn on the writer thread after everything queued before it; nullopt if closed.
  template <class T, class F>
  std::optional<T> run_on_writer(F fn) {
    auto task = std::make_shared<std::packaged_task<T()>>(std::move(fn));
    auto fut = task->get_future();
    {
      std::lock_guard lk(mu_);
      if (stop_) return std::nullopt;
      tasks_.push_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return fut.get();
  }

  // Writer thread only: BEGIN IMMEDIATE; body; COMMIT under the write connection's mutex.
  template <class F>
  std::optional<DbError> write_txn(F&& body) {
    std::lock_guard lk(wconn_->mu);
    Db& db = wconn_->db;
    Txn txn(db, true);
    if (txn.begin_error()) return txn.begin_error();
    if (auto e = body(db)) return e;
    return txn.commit();
  }

  void note_write(const std::optional<DbError>& err) {
    std::lock_guard sl(stats_mu_);
    last_write_ = Clock::now();
    writable_ = !err;
    if (err) last_error_ = err->message;
  }

  std::optional<DbError> insert_ledger(Db& db, const LedgerRecord& r, std::int64_t* seq_out) {
    ins_ledger_.reset();
    ins_ledger_.bind(1, static_cast<std::int64_t>(r.reservation_id));
    ins_ledger_.bind(2, kind_name(r.kind));
    ins_ledger_.bind(3, r.amount_nanos);
    ins_ledger_.bind(4, r.actual_nanos);
    ins_ledger_.bind(5, r.settle_kind);
    ins_ledger_.bind(6, r.request_id);
    ins_ledger_.bind(7, r.model);
    ins_ledger_.bind(8, r.at_ms);
    if (auto e = ins_ledger_.run()) return e;
    const std::int64_t seq = db.last_insert_rowid();
    if (seq_out) *seq_out = seq;
    if (!r.scopes.empty()) {
      for (const auto& sc : r.scopes) {
        ins_scope_.reset();
        ins_scope_.bind(1, seq);
        ins_scope_.bind(2, sc.kind);
        ins_scope_.bind(3, sc.id);
        ins_scope_.bind(4, sc.window_start_ms);
        ins_scope_.bind(5, sc.window_end_ms);
        ins_scope_.bind(6, sc.period);
        if (auto e = ins_scope_.run()) return e;
      }
    } else if (r.kind == LedgerKind::settle) {
      copy_scope_.reset();
      copy_scope_.bind(1, seq);
      copy_scope_.bind(2, static_cast<std::int64_t>(r.reservation_id));
      if (auto e = copy_scope_.run()) return e;
    }
    return std::nullopt;
  }

  void run() {
    std::vector<Item> batch;
    std::vector<std::function<void()>> tasks;
    for (;;) {
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !queue_.empty() || !tasks_.empty(); });
        if (queue_.empty() && tasks_.empty()) break;  // stop_ and drained
        batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
        queue_.clear();
        pending_spend_ = 0;
        tasks.swap(tasks_);
      }
      if (!batch.empty()) commit_batch(batch);
      batch.clear();
      for (auto& t : tasks) t();
      tasks.clear();
    }
  }

  void commit_batch(std::vector<Item>& batch) {
    auto err = write_txn([&](Db& db) -> std::optional<DbError> {
      for (auto& item : batch) {
        if (auto* l = std::get_if<LedgerItem>(&item)) {
          if (auto e = insert_ledger(db, l->record, nullptr)) return e;
        } else {
          ins_spend_.reset();
          bind_spend(ins_spend_, std::get<SpendItem>(item).row);
          if (auto e = ins_spend_.run()) return e;
        }
      }
      return std::nullopt;
    });
    const auto done = Clock::now();
    std::uint64_t nledger = 0, nspend = 0;
    {
      std::lock_guard sl(stats_mu_);
      last_write_ = done;
      writable_ = !err;
      if (err) last_error_ = err->message;
      ++stats_.batches;
      for (auto& item : batch) {
        if (auto* l = std::get_if<LedgerItem>(&item)) {
          ++nledger;
          if (!err) {
            samples_[sample_count_++ % kSampleRing] =
                std::chrono::duration_cast<std::chrono::microseconds>(done - l->enqueued).count();
          }
        } else {
          ++nspend;
        }
      }
      if (err) {
        ++stats_.failed_batches;
        stats_.failed_ledger_records += nledger;
        stats_.dropped_spend_rows += nspend;
      } else {
        stats_.ledger_records += nledger;
        stats_.spend_rows += nspend;
        stats_.records += nledger + nspend;
        stats_.max_batch = std::max<std::uint64_t>(stats_.max_batch, nledger + nspend);
      }
    }
    for (auto& item : batch)
      if (auto* l = std::get_if<LedgerItem>(&item)) fire(l->cb, !err);
  }

  StoreResult<RecoveryResult> recover_locked(std::int64_t now, const ScopeRoller& roll) {
    RecoveryResult result;
    auto err = write_txn([&](Db& db) -> std::optional<DbError> {
      result = RecoveryResult{};
      Stmt open;
      if (auto e = Stmt::prepare(db,
                                 "SELECT r.seq, r.reservation_id, r.amount_nanos, r.request_id, r.model "
                                 "FROM ledger r WHERE r.kind = 'reserve' AND NOT EXISTS ("
                                 "SELECT 1 FROM ledger s WHERE s.reservation_id = r.reservation_id "
                                 "AND s.kind = 'settle' AND s.seq > r.seq) ORDER BY r.seq",
                                 open))
        return e;
      std::vector<std::pair<std::int64_t, LedgerRecord>> open_reservations;
      int rc;
      while ((rc = open.step()) == SQLITE_ROW) {
        LedgerRecord s;
        s.reservation_id = static_cast<std::uint64_t>(open.i64(1));
        s.kind = LedgerKind::settle;
        s.amount_nanos = open.i64(2);
        s.actual_nanos = open.i64(2);
        s.settle_kind = "recovered";
        s.request_id = open.text(3);
        s.model = open.text(4);
        s.at_ms = now;
        open_reservations.emplace_back(open.i64(0), std::move(s));
      }
      if (rc != SQLITE_DONE) return db.last_error();
      Stmt scopes;
      if (auto e = Stmt::prepare(db,
                                 "SELECT scope_kind, scope_id, window_start_ms, window_end_ms, period FROM ledger_scope "
                                 "WHERE seq = ? ORDER BY scope_kind, scope_id, window_start_ms",
                                 scopes))
        return e;
      for (auto& [reserve_seq, rec] : open_reservations) {
        // The reserve's exact scopes, each in the window that contains `now` (the window the
        // in-memory ledger would have charged had the settle happened now).
        scopes.reset();
        scopes.bind(1, reserve_seq);
        while (scopes.step() == SQLITE_ROW) {
          LedgerScope sc{scopes.text(0), scopes.text(1), scopes.i64(2), scopes.i64(3), scopes.text(4)};
          rec.scopes.push_back(roll ? roll(sc, now) : std::move(sc));
        }
        if (auto e = insert_ledger(db, rec, &rec.sequence)) return e;
        result.recovered.push_back(rec);
      }
      Stmt totals;
      if (auto e = Stmt::prepare(db,
                                 "SELECT sc.scope_kind, sc.scope_id, sc.window_start_ms, MAX(sc.window_end_ms), "
                                 "MAX(sc.period), SUM(l.actual_nanos) "
                                 "FROM ledger l JOIN ledger_scope sc ON sc.seq = l.seq "
                                 "WHERE l.kind = 'settle' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                                 totals))
        return e;
      while ((rc = totals.step()) == SQLITE_ROW)
        result.spent.push_back(ScopeSpend{
            LedgerScope{totals.text(0), totals.text(1), totals.i64(2), totals.i64(3), totals.text(4)}, totals.i64(5)});
      if (rc != SQLITE_DONE) return db.last_error();
      Stmt mx;
      if (auto e = Stmt::prepare(db, "SELECT COALESCE(MAX(reservation_id), 0) FROM ledger", mx)) return e;
      if (mx.step() != SQLITE_ROW) return db.last_error();
      result.max_reservation_id = static_cast<std::uint64_t>(mx.i64(0));
      return std::nullopt;
    });
    note_write(err);
    if (err) return std::unexpected(to_store_error(*err, "recover ledger"));
    return result;
  }

  ProcessLock lock_;  // first member: released after the connections close
  std::shared_ptr<Conn> wconn_;
  std::shared_ptr<Conn> aconn_;
  SqliteOptions opts_;

  // Writer-thread statements (on wconn_->db).
  Stmt ins_ledger_, ins_scope_, copy_scope_, ins_spend_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::vector<std::function<void()>> tasks_;
  std::size_t pending_spend_ = 0;
  bool stop_ = false;
  std::thread thread_;

  mutable std::mutex stats_mu_;
  WriterStats stats_;
  std::vector<std::int64_t> samples_;
  std::size_t sample_count_ = 0;
  bool writable_ = false;
  std::string last_error_;
  Clock::time_point last_write_{};
};

std::optional<DbError> configure(Db& db, const SqliteOptions& o, bool writer, bool memory) {
  if (auto e = db.exec("PRAGMA busy_timeout = " + std::to_string(o.busy_timeout_ms))) return e;
  if (!memory) {
    if (auto e = db.exec("PRAGMA journal_mode = WAL")) return e;
  }
  const bool full = writer && o.synchronous_full;
  if (auto e = db.exec(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")) return e;
  if (o.max_page_count)
    if (auto e = db.exec("PRAGMA max_page_count = " + std::to_string(*o.max_page_count))) return e;
  return std::nullopt;
}

}  // namespace

StoreResult<std::string> sqlite_path_from_url(const std::string& url) {
  std::string path = url;
  constexpr std::string_view scheme = "sqlite://";
  if (url.starts_with(scheme)) {
    path = url.substr(scheme.size());  // "/abs" (from sqlite:///abs) or "relative"
  } else if (url.find("://") != std::string::npos) {
    return std::unexpected(make_error(StoreErrorCode::invalid,
                                      "unsupported database_url scheme (only sqlite:// is built in)",
                                      "database_url"));
  }
  if (path.empty())
    return std::unexpected(make_error(StoreErrorCode::invalid, "database path is empty", "database_url"));
  return path;
}

int sqlite_schema_version() noexcept { return static_cast<int>(migrations().size()); }

StoreResult<std::unique_ptr<Store>> open_sqlite_store(const std::string& url, const SqliteOptions& opts) {
  auto path = sqlite_path_from_url(url);
  if (!path) return std::unexpected(path.error());
  const bool memory = *path == ":memory:";
  if (!memory) {
    std::error_code ec;
    auto parent = std::filesystem::path(*path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec)
      return std::unexpected(make_error(StoreErrorCode::unavailable,
                                        "cannot create directory " + parent.string() + ": " + ec.message(),
                                        "database_url"));
  }
  ProcessLock lock;
  if (!memory && opts.exclusive_process) {
    auto held = ProcessLock::acquire(*path);
    if (!held) return std::unexpected(held.error());
    lock = std::move(*held);
  }
  auto writer = std::make_shared<Conn>();
  if (auto e = Db::open(*path, writer->db)) return std::unexpected(to_store_error(*e, "open " + *path));
  if (auto e = configure(writer->db, opts, true, memory))
    return std::unexpected(to_store_error(*e, "configure " + *path));
  if (auto e = migrate(writer->db)) return std::unexpected(*e);
  std::shared_ptr<Conn> admin = writer;  // :memory: is per connection: share it
  if (!memory) {
    admin = std::make_shared<Conn>();
    if (auto e = Db::open(*path, admin->db)) return std::unexpected(to_store_error(*e, "open " + *path));
    if (auto e = configure(admin->db, opts, false, memory))
      return std::unexpected(to_store_error(*e, "configure " + *path));
  }
  auto store = std::make_unique<SqliteStore>(std::move(lock), writer, admin, opts);
  if (auto e = store->start()) return std::unexpected(*e);
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace tollgate::store::sqlite
