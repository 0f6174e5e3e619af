#include "store/sql_store.hpp"

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <boost/pfr.hpp>
#include <charconv>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/ids.hpp"
#include "store/group_commit.hpp"
#include "store/ledger_append.hpp"

namespace tollgate::store::sql {

std::int64_t Row::i64(std::size_t c) const {
  if (const auto* v = std::get_if<std::int64_t>(&cols[c])) return *v;
  if (const auto* s = std::get_if<std::string>(&cols[c])) {
    try {
      return std::stoll(*s);
    } catch (...) {
      return 0;
    }
  }
  return 0;
}

StoreResult<Result> Connection::run_atomic(std::string_view sql, const Params& params, std::string_view what) {
  Txn txn(*this, TxnMode::write, what);
  if (txn.begin_error()) return std::unexpected(*txn.begin_error());
  auto r = run(sql, params, what);
  if (!r) return r;
  if (auto c = txn.commit(what); !c) return std::unexpected(c.error());
  return r;
}

std::string Row::text(std::size_t c) const {
  if (const auto* s = std::get_if<std::string>(&cols[c])) return *s;
  if (const auto* v = std::get_if<std::int64_t>(&cols[c])) return std::to_string(*v);
  return {};
}

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
      // 5: deferred jobs shared by several instances (issue 9): the claim of the instance running
      // a job, and the per-key count of queued and running jobs. A job an older binary left
      // running has no claim (expired at 0): the first runner to look claims it again.
      R"sql(
ALTER TABLE tollgate_jobs ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tollgate_jobs ADD COLUMN claim_expires_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tollgate_jobs_key ON tollgate_jobs(api_key, status);
CREATE INDEX tollgate_jobs_finished ON tollgate_jobs(status, updated_ms);
)sql",
      // 6: LiteLLM's allowed_model_region on keys, teams and end users (issue 11 §3): requests
      // are routed only to deployments of that region.
      R"sql(
ALTER TABLE keys ADD COLUMN allowed_model_region TEXT NOT NULL DEFAULT '';
ALTER TABLE teams ADD COLUMN allowed_model_region TEXT NOT NULL DEFAULT '';
ALTER TABLE customers ADD COLUMN allowed_model_region TEXT NOT NULL DEFAULT '';
)sql",
      // 7: deployments added through /model/new (general_settings.store_model_in_db, issue 11 §5) and
      // the counter every instance polls to pick them up without a restart.
      R"sql(
CREATE TABLE proxy_models (
  model_id TEXT PRIMARY KEY NOT NULL,
  model_name TEXT NOT NULL,
  entry TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
CREATE TABLE proxy_model_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL
);
INSERT INTO proxy_model_generation (id, generation) VALUES (1, 0);
)sql",
      // 8: the response cache (issue 11 §4) in the spend log: whether the answer came from the
      // cache, the request's cache key, and what a hit saved (the stored answer's cost).
      R"sql(
ALTER TABLE spend_logs ADD COLUMN cache_hit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE spend_logs ADD COLUMN cache_key TEXT NOT NULL DEFAULT '';
ALTER TABLE spend_logs ADD COLUMN cache_saved_nanos INTEGER NOT NULL DEFAULT 0;
)sql",
      // 9: reusable budgets (/budget/*, LiteLLM's LiteLLM_BudgetTable) linked by budget_id from
      // keys, teams and customers; the spend log's requester_ip_address and session_id (issue 11).
      R"sql(
CREATE TABLE budgets (
  budget_id TEXT PRIMARY KEY NOT NULL,
  max_budget_nanos INTEGER,
  soft_budget_nanos INTEGER,
  max_parallel_requests INTEGER,
  tpm_limit INTEGER,
  rpm_limit INTEGER,
  budget_duration TEXT,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
);
ALTER TABLE keys ADD COLUMN budget_id TEXT NOT NULL DEFAULT '';
ALTER TABLE teams ADD COLUMN budget_id TEXT NOT NULL DEFAULT '';
ALTER TABLE customers ADD COLUMN budget_id TEXT NOT NULL DEFAULT '';
ALTER TABLE spend_logs ADD COLUMN requester_ip_address TEXT NOT NULL DEFAULT '';
ALTER TABLE spend_logs ADD COLUMN session_id TEXT NOT NULL DEFAULT '';
)sql",
      // 10: the spend log's user and team indexes hold only rows that name one (issue 16): a row
      // without them (a key of no user or team, the master key) no longer pays two index inserts.
      // A query by user or team says `<> ''` too (spend_where), so that both engines use them.
      R"sql(
DROP INDEX spend_logs_user;
CREATE INDEX spend_logs_user ON spend_logs("user", start_ms) WHERE "user" <> '';
DROP INDEX spend_logs_team;
CREATE INDEX spend_logs_team ON spend_logs(team_id, start_ms) WHERE team_id <> '';
)sql",
  };
  return m;
}

int schema_version() noexcept { return static_cast<int>(migrations().size()); }

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

StoreError make_error(StoreErrorCode code, std::string message, std::string field = {}) {
  return StoreError{code, std::move(message), std::move(field)};
}

// --- values --------------------------------------------------------------------------------

Value val(std::int64_t v) { return v; }
Value val(bool v) { return std::int64_t{v ? 1 : 0}; }
Value val(const std::optional<std::int64_t>& v) { return v ? Value(*v) : Value(); }
Value val(const std::optional<std::string>& v) { return v ? Value(*v) : Value(); }

// Lists of names (models, tags) are JSON arrays in a TEXT column.
Value json_list(const std::vector<std::string>& v) {
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

std::string placeholders(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

// --- record mapping ------------------------------------------------------------------------

// A record's table: the record's fields, in declaration order (Boost.PFR), are its columns. The
// column list names them, space-separated; a trailing `?` stores an empty string as NULL (an unset
// id or alias: UNIQUE allows many NULLs). Booleans are 0/1, lists of names JSON arrays.
template <class R>
class Table {
 public:
  Table(const char* name, const char* pk, const char* what, std::string_view columns) : name(name), pk(pk), what(what) {
    std::size_t i = 0;
    while (i < columns.size()) {
      const auto end = std::min(columns.find(' ', i), columns.size());
      std::string_view col = columns.substr(i, end - i);
      i = end + 1;
      if (col.empty()) continue;
      const bool nullable = col.ends_with('?');
      if (nullable) col.remove_suffix(1);
      if (col == pk) pk_index_ = null_if_empty_.size();
      null_if_empty_.push_back(nullable);
      names_ += (names_.empty() ? "" : ",") + std::string(col);
    }
    // A field added to a record without its column (or the reverse) is caught at the first start.
    if (null_if_empty_.size() != boost::pfr::tuple_size_v<R>)
      throw std::logic_error(std::string("store: the column list of table ") + name + " does not match its record");
  }

  const char* name;
  const char* pk;    ///< primary key column
  const char* what;  ///< the record's noun in messages

  const std::string& names() const { return names_; }
  int count() const { return static_cast<int>(null_if_empty_.size()); }

  /// The primary key's value.
  const std::string& id(const R& r) const {
    const std::string* out = nullptr;
    boost::pfr::for_each_field(r, [&](const auto& v, std::size_t i) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
        if (i == pk_index_) out = &v;
    });
    return *out;
  }

  Params params(const R& r) const {
    Params out;
    out.reserve(null_if_empty_.size());
    append_params(r, out, false);
    return out;
  }

  /// The record's columns as parameters, added to `out`. `borrow`: text is bound as a view of
  /// `r`'s own strings, so `r` must outlive the statement's run (lists are still made).
  void append_params(const R& r, Params& out, bool borrow) const {
    boost::pfr::for_each_field(r, [&](const auto& v, std::size_t i) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, std::vector<std::string>>)
        out.push_back(json_list(v));
      else if constexpr (std::is_same_v<V, std::string>) {
        if (null_if_empty_[i] && v.empty()) out.emplace_back();  // an unset id: NULL, so UNIQUE allows many
        else if (borrow) out.emplace_back(std::string_view(v));
        else out.emplace_back(v);
      } else if constexpr (std::is_same_v<V, std::optional<std::string>>) {
        if (!v) out.emplace_back();
        else if (borrow) out.emplace_back(std::string_view(*v));
        else out.emplace_back(*v);
      } else {
        out.push_back(val(v));
      }
    });
  }

  R read(const Row& row) const {
    R r;
    boost::pfr::for_each_field(r, [&](auto& v, std::size_t i) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, std::vector<std::string>>)
        v = from_json_list(row.text(i));
      else if constexpr (std::is_same_v<V, std::string>)
        v = row.text(i);
      else if constexpr (std::is_same_v<V, std::optional<std::string>>)
        v = row.opt_text(i);
      else if constexpr (std::is_same_v<V, std::optional<std::int64_t>>)
        v = row.opt_i64(i);
      else if constexpr (std::is_same_v<V, bool>)
        v = row.i64(i) != 0;
      else
        v = row.i64(i);
    });
    return r;
  }

 private:
  std::vector<bool> null_if_empty_;
  std::string names_;
  std::size_t pk_index_ = 0;
};

template <class R>
extern const Table<R> kTable;

template <>
const Table<KeyRecord> kTable<KeyRecord>{
    "keys", "token_hash", "key",
    "token_hash key_alias? key_name user_id? team_id? organization_id? models metadata tags max_budget_nanos "
    "budget_duration soft_budget_nanos budget_limits model_max_budget max_parallel_requests rpm_limit tpm_limit "
    "blocked allowed_model_region expires_at_ms created_at_ms updated_at_ms budget_id"};
template <>
const Table<UserRecord> kTable<UserRecord>{"users", "user_id", "user",
                                           "user_id user_email? user_alias? max_budget_nanos budget_duration models "
                                           "metadata rpm_limit tpm_limit created_at_ms updated_at_ms"};
template <>
const Table<TeamRecord> kTable<TeamRecord>{
    "teams", "team_id", "team",
    "team_id team_alias? organization_id? max_budget_nanos budget_duration models metadata rpm_limit tpm_limit "
    "blocked allowed_model_region created_at_ms updated_at_ms budget_id"};
template <>
const Table<OrganizationRecord> kTable<OrganizationRecord>{
    "organizations", "organization_id", "organization",
    "organization_id organization_alias? max_budget_nanos "
    "budget_duration models metadata created_at_ms updated_at_ms"};
template <>
const Table<CustomerRecord> kTable<CustomerRecord>{
    "customers", "user_id", "customer",
    "user_id alias? max_budget_nanos budget_duration blocked allowed_model_region created_at_ms updated_at_ms budget_id"};
template <>
const Table<BudgetRecord> kTable<BudgetRecord>{
    "budgets", "budget_id", "budget",
    "budget_id max_budget_nanos soft_budget_nanos max_parallel_requests tpm_limit rpm_limit budget_duration "
    "created_at_ms updated_at_ms"};
template <>
const Table<TagRecord> kTable<TagRecord>{
    "tags", "name", "tag", "name description? max_budget_nanos budget_duration created_at_ms updated_at_ms"};
template <>
const Table<JobRecord> kTable<JobRecord>{"tollgate_jobs", "id", "job",
                                         "id created_ms updated_ms status model_group call_type api_key request_body "
                                         "result error attempts request_id claimed_by claim_expires_ms"};
template <>
const Table<TeamMemberRecord> kTable<TeamMemberRecord>{"team_members", "team_id", "team member",
                                                       "team_id user_id role max_budget_in_team_nanos budget_duration"};
template <>
const Table<SpendLogRow> kTable<SpendLogRow>{
    "spend_logs", "request_id", "spend log",
    "request_id call_type api_key key_alias \"user\" team_id organization_id end_user request_tags requested_model "
    "model_group model model_id custom_llm_provider api_base attempts skipped_fallbacks prompt_tokens "
    "completion_tokens cached_tokens total_tokens spend_nanos priced unknown_outcome start_ms end_ms "
    "request_duration_ms completion_start_ms status error_status metadata degradation decision line_items "
    "cache_hit cache_key cache_saved_nanos requester_ip_address session_id"};

template <>
const Table<ProxyModelRecord> kTable<ProxyModelRecord>{"proxy_models", "model_id", "model",
                                                       "model_id model_name entry created_at_ms updated_at_ms"};

const Table<TeamMemberRecord>& member_columns() { return kTable<TeamMemberRecord>; }
const Table<SpendLogRow>& spend_columns() { return kTable<SpendLogRow>; }

/// The WHERE clause of a spend log filter ("" when it filters nothing); its values appended to
/// `args` in placeholder order.
std::string spend_where(const SpendLogFilter& f, Params& args) {
  std::string where;
  auto cond = [&](const char* c) { where += (where.empty() ? " WHERE " : " AND ") + std::string(c); };
  auto eq = [&](const char* c, Value v) {
    cond(c);
    args.push_back(std::move(v));
  };
  if (f.api_key) eq("api_key = ?", *f.api_key);
  // The user and team indexes hold the rows that name one (migration 10): the query repeats
  // their condition so that the planner can use them.
  if (f.user) eq(f.user->empty() ? "\"user\" = ?" : "\"user\" = ? AND \"user\" <> ''", *f.user);
  if (f.team_id) eq(f.team_id->empty() ? "team_id = ?" : "team_id = ? AND team_id <> ''", *f.team_id);
  if (f.request_id) eq("request_id = ?", *f.request_id);
  if (f.start_ms) eq("start_ms >= ?", *f.start_ms);
  if (f.end_ms) eq("start_ms < ?", *f.end_ms);
  if (f.model) {
    cond("(model_group = ? OR requested_model = ? OR model = ?)");
    for (int i = 0; i < 3; ++i) args.emplace_back(*f.model);
  }
  if (f.status) eq("status = ?", *f.status);
  if (f.degradation) eq("degradation = ?", *f.degradation);
  if (f.degraded) cond("degradation <> ''");
  return where;
}

LedgerScope read_scope(const Row& s, std::size_t first) {
  return LedgerScope{s.text(first), s.text(first + 1), s.i64(first + 2), s.i64(first + 3), s.text(first + 4)};
}

/// A ledger row's columns in read_ledger_row's order (its scopes are in ledger_scope).
constexpr const char* kLedgerCols =
    "seq, reservation_id, kind, amount_nanos, actual_nanos, settle_kind, request_id, model, at_ms";
LedgerRecord read_ledger_row(const Row& row) {
  LedgerRecord r;
  r.sequence = row.i64(0);
  r.reservation_id = static_cast<std::uint64_t>(row.i64(1));
  r.kind = row.text(2) == "reserve" ? LedgerKind::reserve : LedgerKind::settle;
  r.amount_nanos = row.i64(3);
  r.actual_nanos = row.i64(4);
  r.settle_kind = row.text(5);
  r.request_id = row.text(6);
  r.model = row.text(7);
  r.at_ms = row.i64(8);
  return r;
}

std::optional<StoreError> check_job(const JobRecord& j) {
  if (j.id.empty()) return make_error(StoreErrorCode::invalid, "id is required", "id");
  if (!is_job_status(j.status))
    return make_error(StoreErrorCode::invalid,
                      "status must be queued, running, succeeded or failed (got \"" + j.status + "\")", "status");
  return std::nullopt;
}

// --- migrations ----------------------------------------------------------------------------

std::optional<StoreError> migrate(Connection& db, const Backend& backend) {
  const auto& m = migrations();
  const int known = static_cast<int>(m.size());
  for (;;) {
    Txn txn(db, TxnMode::migrate, "migrate");
    if (txn.begin_error()) return txn.begin_error();
    // Inside the migration lock: two processes starting on an empty database do not race here.
    if (auto r = db.script(backend.translate_ddl("CREATE TABLE IF NOT EXISTS schema_version ("
                                                 "version INTEGER PRIMARY KEY, applied_at_ms INTEGER NOT NULL)"),
                           "create schema_version");
        !r)
      return r.error();
    auto q = db.run("SELECT COALESCE(MAX(version), 0) FROM schema_version", {}, "read schema_version");
    if (!q) return q.error();
    const int current = static_cast<int>(q->rows.at(0).i64(0));
    if (current > known)
      return make_error(StoreErrorCode::invalid, "database schema version " + std::to_string(current) +
                                                     " is newer than this binary understands (" +
                                                     std::to_string(known) + "); upgrade tollgate");
    if (current == known) return std::nullopt;
    const std::string what = "migration " + std::to_string(current + 1);
    if (auto r = db.script(backend.translate_ddl(m[static_cast<std::size_t>(current)]), what); !r) return r.error();
    if (auto r = db.run("INSERT INTO schema_version (version, applied_at_ms) VALUES (?, ?)",
                        {std::int64_t{current + 1}, now_ms()}, "record migration");
        !r)
      return r.error();
    if (auto r = txn.commit("commit migration"); !r) return r.error();
  }
}

// --- the store -----------------------------------------------------------------------------

class SqlStore final : public Store {
 public:
  SqlStore(std::unique_ptr<Backend> backend, const SqlStoreOptions& opts)
      : backend_(std::move(backend)),
        writer_({.max_pending_spend_rows = opts.max_pending_spend_rows,
                 .spend_batch_rows = opts.spend_batch_rows,
                 .spend_linger = opts.spend_linger,
                 .on_folded = [this](std::uint64_t jseq) { if (journal_) journal_->folded(jseq); }},
                [this](const std::vector<GroupCommitWriter::Item>& batch) { return commit_batch(batch); }) {}

  ~SqlStore() override {
    // The journal's last records reach the writer, the writer folds them, then the segments
    // wholly folded go (all of them after a clean stop). Before the backend's connections close.
    if (journal_) journal_->stop();
    writer_.stop();
    if (journal_) journal_->drop_folded_segments();
  }

  void start() {
    writer_.start();
    if (journal_) journal_->start([this](std::vector<journal::JournalEntry> e) { writer_.append_journaled(std::move(e)); });
  }

  // Opens the ledger journal and folds the records the database does not hold yet (before
  // start(): on this thread, on the writer connection).
  std::optional<StoreError> open_journal(journal::JournalOptions opts, bool fold_only) {
    std::uint64_t mark = 0;
    std::optional<StoreError> err;
    if (auto e = backend_->with_writer([&](Connection& db) {
          auto r = db.run("SELECT value FROM store_meta WHERE name = ?", {std::string(kFoldedMark)}, "read the journal mark");
          if (!r) err = r.error();
          else if (!r->rows.empty()) {
            const std::string v = r->rows.front().text(0);
            if (std::from_chars(v.data(), v.data() + v.size(), mark).ec != std::errc())
              err = make_error(StoreErrorCode::unavailable, "the ledger journal mark in store_meta is not a number: " + v);
          }
          if (err) return;
          // The database's id, which its journal carries (made once, kept for its life).
          auto id = db.run("SELECT value FROM store_meta WHERE name = 'database_id'", {}, "read the database id");
          if (!id) {
            err = id.error();
          } else if (!id->rows.empty()) {
            opts.database_id = id->rows.front().text(0);
          } else {
            opts.database_id = core::new_uuid();
            if (auto w = db.run("INSERT INTO store_meta (name, value) VALUES ('database_id', ?)", {opts.database_id},
                                "record the database id");
                !w)
              err = w.error();
          }
        }))
      return e;
    if (err) return err;
    auto opened = journal::LedgerJournal::open(opts, mark);
    if (!opened) return opened.error();
    if (opened->torn_bytes != 0)
      spdlog::warn("ledger journal: cut {} byte(s) of a write the last run did not finish", opened->torn_bytes);
    const std::size_t n = opened->unfolded.size();
    constexpr std::size_t kChunk = 4096;
    for (std::size_t i = 0; i < n; i += kChunk) {
      std::vector<GroupCommitWriter::Item> items;
      for (std::size_t j = i; j < std::min(n, i + kChunk); ++j) {
        auto& e = opened->unfolded[j];
        items.push_back(GroupCommitWriter::LedgerItem{std::move(e.record), {}, {}, e.jseq});
      }
      if (auto e = commit_batch(items))
        return make_error(StoreErrorCode::unavailable, "cannot fold the ledger journal into the database: " + *e);
    }
    if (n != 0) {
      spdlog::info("ledger journal: folded {} record(s) the last run left in {}", n, opts.dir.string());
      opened->journal->folded(opened->unfolded.back().jseq);
    }
    if (fold_only) {  // nothing is written to it: its segments, all folded, go
      opened->journal->stop();
      opened->journal->drop_folded_segments();
      return std::nullopt;
    }
    journal_ = std::move(opened->journal);
    journal_->drop_folded_segments();
    return std::nullopt;
  }

  // --- connections -----------------------------------------------------------------------

  // Runs fn(Connection&) -> StoreResult<T> on an admin connection.
  template <class T, class F>
  StoreResult<T> on_admin(F&& fn) {
    std::optional<StoreResult<T>> out;
    if (auto e = backend_->with_admin([&](Connection& c) { out.emplace(fn(c)); })) return std::unexpected(*e);
    return std::move(*out);
  }

  // Runs `fn` in a write transaction on an admin connection; bumps identity_generation in the
  // same transaction when `bump_generation` (every identity mutation).
  template <class T, class F>
  StoreResult<T> admin_write(const std::string& what, F&& fn, bool bump_generation) {
    return on_admin<T>([&](Connection& db) -> StoreResult<T> {
      Txn txn(db, TxnMode::write, what);
      if (txn.begin_error()) return std::unexpected(*txn.begin_error());
      StoreResult<T> r = fn(db);
      if (!r) return r;
      if (bump_generation)
        if (auto g = db.run("UPDATE identity_generation SET generation = generation + 1 WHERE id = 1", {}, what); !g)
          return std::unexpected(g.error());
      if (auto c = txn.commit(what); !c) return std::unexpected(c.error());
      return r;
    });
  }

  template <class T, class F>
  StoreResult<T> mutate(const std::string& what, F&& fn) {
    return admin_write<T>(what, std::forward<F>(fn), true);
  }

  // One conditional UPDATE in a write transaction: whether it changed a row.
  StoreResult<bool> changed_one(const std::string& what, const std::string& sql, const Params& args) {
    return admin_write<bool>(
        what,
        [&](Connection& db) -> StoreResult<bool> {
          auto s = db.run(sql, args, what);
          if (!s) return std::unexpected(s.error());
          return s->changes > 0;
        },
        false);
  }

  // --- generic identity operations -------------------------------------------------------

  template <class R>
  StoreResult<R> insert(R r, const std::string& what, bool bump_generation) {
    const Table<R>& E = kTable<R>;
    return admin_write<R>(
        what,
        [&](Connection& db) {
          return stored(r, db.run(std::string("INSERT INTO ") + E.name + " (" + E.names() + ") VALUES (" +
                                      placeholders(E.count()) + ")",
                                  E.params(r), what));
        },
        bump_generation);
  }

  // `r` when its statement succeeded, else the statement's error.
  template <class R>
  static StoreResult<R> stored(const R& r, const StoreResult<Result>& statement) {
    if (!statement) return std::unexpected(statement.error());
    return r;
  }

  template <class R>
  StoreResult<R> create(R r) {
    const Table<R>& E = kTable<R>;
    if (E.id(r).empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, std::string(E.pk) + " is required", E.pk));
    if (r.created_at_ms == 0) r.created_at_ms = now_ms();
    if (r.updated_at_ms == 0) r.updated_at_ms = r.created_at_ms;
    return insert(std::move(r), std::string("create ") + E.what, true);
  }

  template <class R>
  StoreResult<R> get(const std::string& id) {
    const Table<R>& E = kTable<R>;
    const std::string what = std::string("get ") + E.what;
    return on_admin<R>([&](Connection& db) -> StoreResult<R> {
      auto s = db.run(std::string("SELECT ") + E.names() + " FROM " + E.name + " WHERE " + E.pk + " = ?", {id}, what);
      if (!s) return std::unexpected(s.error());
      if (s->rows.empty())
        return std::unexpected(make_error(StoreErrorCode::not_found, std::string(E.what) + " not found", E.pk));
      return E.read(s->rows.front());
    });
  }

  // Replaces every column of the row `r` names. `created` is the stored row's created time
  // (column `created_col`); `stamp` fills the times in from it before the write.
  template <class R, class Stamp>
  StoreResult<R> replace(R r, const std::string& what, const char* created_col, Stamp&& stamp, bool bump_generation) {
    const Table<R>& E = kTable<R>;
    return admin_write<R>(
        what,
        [&](Connection& db) -> StoreResult<R> {
          auto q = db.run(std::string("SELECT ") + created_col + " FROM " + E.name + " WHERE " + E.pk + " = ?",
                          {E.id(r)}, what);
          if (!q) return std::unexpected(q.error());
          if (q->rows.empty())
            return std::unexpected(make_error(StoreErrorCode::not_found, std::string(E.what) + " not found", E.pk));
          stamp(r, q->rows.front().i64(0));
          Params p = E.params(r);
          p.push_back(E.id(r));
          return stored(r, db.run(std::string("UPDATE ") + E.name + " SET (" + E.names() + ") = (" +
                                      placeholders(E.count()) + ") WHERE " + E.pk + " = ?",
                                  p, what));
        },
        bump_generation);
  }

  template <class R>
  StoreResult<R> update(R r) {
    const Table<R>& E = kTable<R>;
    return replace(
        std::move(r), std::string("update ") + E.what, "created_at_ms",
        [](R& rec, std::int64_t created) {
          if (rec.created_at_ms == 0) rec.created_at_ms = created;
          rec.updated_at_ms = std::max(now_ms(), rec.created_at_ms);
        },
        true);
  }

  // Deletes the row; `extra` statements (one `?` = the id) run in the same transaction.
  template <class R>
  StoreResult<void> remove(const std::string& id, std::vector<std::string> extra = {}) {
    const Table<R>& E = kTable<R>;
    const std::string what = std::string("delete ") + E.what;
    auto r = mutate<bool>(what, [&](Connection& db) -> StoreResult<bool> {
      auto s = db.run(std::string("DELETE FROM ") + E.name + " WHERE " + E.pk + " = ?", {id}, what);
      if (!s) return std::unexpected(s.error());
      if (s->changes == 0)
        return std::unexpected(make_error(StoreErrorCode::not_found, std::string(E.what) + " not found", E.pk));
      for (const auto& sql : extra)
        if (auto x = db.run(sql, {id}, what); !x) return std::unexpected(x.error());
      return true;
    });
    if (!r) return std::unexpected(r.error());
    return {};
  }

  template <class R>
  static StoreResult<std::vector<R>> list_where(Connection& db, const std::string& where, const Params& args,
                                                const std::string& tail = {}) {
    const Table<R>& E = kTable<R>;
    std::string sql = std::string("SELECT ") + E.names() + " FROM " + E.name;
    if (!where.empty()) sql += " WHERE " + where;
    sql += tail.empty() ? std::string(" ORDER BY ") + E.pk : tail;
    auto s = db.run(sql, args, std::string("list ") + E.what);
    if (!s) return std::unexpected(s.error());
    std::vector<R> out;
    out.reserve(s->rows.size());
    for (const auto& row : s->rows) out.push_back(E.read(row));
    return out;
  }

  template <class R>
  StoreResult<std::vector<R>> list(const std::string& where = {}, const Params& args = {},
                                   const std::string& tail = {}) {
    return on_admin<std::vector<R>>([&](Connection& db) { return list_where<R>(db, where, args, tail); });
  }

  // --- Store: identities -------------------------------------------------------------------

  StoreResult<KeyRecord> create_key(const KeyRecord& k) override { return create(k); }
  StoreResult<KeyRecord> get_key(const std::string& h) override { return get<KeyRecord>(h); }
  StoreResult<KeyRecord> update_key(const KeyRecord& k) override { return update(k); }
  StoreResult<void> delete_key(const std::string& h) override { return remove<KeyRecord>(h); }
  StoreResult<std::vector<KeyRecord>> list_keys(const KeyFilter& f) override {
    std::string where;
    Params args;
    auto add = [&](const char* col, const std::optional<std::string>& v) {
      if (!v) return;
      if (!where.empty()) where += " AND ";
      where += std::string(col) + " = ?";
      args.emplace_back(*v);
    };
    add("user_id", f.user_id);
    add("team_id", f.team_id);
    add("organization_id", f.organization_id);
    add("key_alias", f.key_alias);
    args.emplace_back(std::max<std::int64_t>(f.limit, 0));
    args.emplace_back(std::max<std::int64_t>(f.offset, 0));
    return list<KeyRecord>(where, args, " ORDER BY created_at_ms, token_hash LIMIT ? OFFSET ?");
  }

  StoreResult<UserRecord> create_user(const UserRecord& u) override { return create(u); }
  StoreResult<UserRecord> get_user(const std::string& id) override { return get<UserRecord>(id); }
  StoreResult<UserRecord> update_user(const UserRecord& u) override { return update(u); }
  StoreResult<void> delete_user(const std::string& id) override {
    return remove<UserRecord>(id, {"DELETE FROM team_members WHERE user_id = ?"});
  }
  StoreResult<std::vector<UserRecord>> list_users() override { return list<UserRecord>(); }

  StoreResult<TeamRecord> create_team(const TeamRecord& t) override { return create(t); }
  StoreResult<TeamRecord> get_team(const std::string& id) override { return get<TeamRecord>(id); }
  StoreResult<TeamRecord> update_team(const TeamRecord& t) override { return update(t); }
  StoreResult<void> delete_team(const std::string& id) override {
    return remove<TeamRecord>(id, {"DELETE FROM team_members WHERE team_id = ?"});
  }
  StoreResult<std::vector<TeamRecord>> list_teams(const std::optional<std::string>& org) override {
    if (org) return list<TeamRecord>("organization_id = ?", {*org});
    return list<TeamRecord>();
  }

  StoreResult<TeamMemberRecord> upsert_team_member(const TeamMemberRecord& m) override {
    if (m.team_id.empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, "team_id is required", "team_id"));
    if (m.user_id.empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, "user_id is required", "user_id"));
    return mutate<TeamMemberRecord>("add team member", [&](Connection& db) -> StoreResult<TeamMemberRecord> {
      auto s = db.run(std::string("INSERT INTO team_members (") + member_columns().names() +
                          ") VALUES (?,?,?,?,?) ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role, "
                          "max_budget_in_team_nanos = excluded.max_budget_in_team_nanos, "
                          "budget_duration = excluded.budget_duration",
                      {m.team_id, m.user_id, m.role, val(m.max_budget_in_team_nanos), val(m.budget_duration)},
                      "add team member");
      if (!s) return std::unexpected(s.error());
      return m;
    });
  }

  StoreResult<void> remove_team_member(const std::string& team_id, const std::string& user_id) override {
    auto r = mutate<bool>("remove team member", [&](Connection& db) -> StoreResult<bool> {
      auto s = db.run("DELETE FROM team_members WHERE team_id = ? AND user_id = ?", {team_id, user_id},
                      "remove team member");
      if (!s) return std::unexpected(s.error());
      if (s->changes == 0)
        return std::unexpected(make_error(StoreErrorCode::not_found, "team member not found", "user_id"));
      return true;
    });
    if (!r) return std::unexpected(r.error());
    return {};
  }

  static StoreResult<std::vector<TeamMemberRecord>> members_where(Connection& db, const char* where,
                                                                  const Params& args) {
    std::string sql = std::string("SELECT ") + member_columns().names() + " FROM team_members";
    if (where) sql += std::string(" WHERE ") + where;
    sql += " ORDER BY team_id, user_id";
    auto s = db.run(sql, args, "list team members");
    if (!s) return std::unexpected(s.error());
    std::vector<TeamMemberRecord> out;
    for (const auto& row : s->rows) out.push_back(member_columns().read(row));
    return out;
  }

  StoreResult<std::vector<TeamMemberRecord>> list_team_members(const std::string& team_id) override {
    return on_admin<std::vector<TeamMemberRecord>>(
        [&](Connection& db) { return members_where(db, "team_id = ?", {team_id}); });
  }

  StoreResult<OrganizationRecord> create_organization(const OrganizationRecord& o) override { return create(o); }
  StoreResult<OrganizationRecord> get_organization(const std::string& id) override {
    return get<OrganizationRecord>(id);
  }
  StoreResult<OrganizationRecord> update_organization(const OrganizationRecord& o) override { return update(o); }
  StoreResult<void> delete_organization(const std::string& id) override { return remove<OrganizationRecord>(id); }
  StoreResult<std::vector<OrganizationRecord>> list_organizations() override { return list<OrganizationRecord>(); }

  StoreResult<CustomerRecord> create_customer(const CustomerRecord& c) override { return create(c); }
  StoreResult<CustomerRecord> get_customer(const std::string& id) override { return get<CustomerRecord>(id); }
  StoreResult<CustomerRecord> update_customer(const CustomerRecord& c) override { return update(c); }
  StoreResult<void> delete_customer(const std::string& id) override { return remove<CustomerRecord>(id); }
  StoreResult<std::vector<CustomerRecord>> list_customers() override { return list<CustomerRecord>(); }

  StoreResult<TagRecord> create_tag(const TagRecord& t) override { return create(t); }
  StoreResult<TagRecord> get_tag(const std::string& name) override { return get<TagRecord>(name); }
  StoreResult<TagRecord> update_tag(const TagRecord& t) override { return update(t); }
  StoreResult<void> delete_tag(const std::string& name) override { return remove<TagRecord>(name); }
  StoreResult<std::vector<TagRecord>> list_tags() override { return list<TagRecord>(); }
  StoreResult<BudgetRecord> create_budget(const BudgetRecord& b) override { return create(b); }
  StoreResult<BudgetRecord> get_budget(const std::string& id) override { return get<BudgetRecord>(id); }
  StoreResult<BudgetRecord> update_budget(const BudgetRecord& b) override { return update(b); }
  StoreResult<void> delete_budget(const std::string& id) override { return remove<BudgetRecord>(id); }
  StoreResult<std::vector<BudgetRecord>> list_budgets() override { return list<BudgetRecord>(); }

  static StoreResult<std::int64_t> read_generation(Connection& db) {
    auto s = db.run("SELECT generation FROM identity_generation WHERE id = 1", {}, "identity generation");
    if (!s) return std::unexpected(s.error());
    if (s->rows.empty()) return std::unexpected(make_error(StoreErrorCode::unavailable, "identity generation: no row"));
    return s->rows.front().i64(0);
  }

  StoreResult<std::int64_t> identity_generation() override { return on_admin<std::int64_t>(read_generation); }

  StoreResult<IdentitySnapshot> load_all_identities() override {
    return on_admin<IdentitySnapshot>([&](Connection& db) -> StoreResult<IdentitySnapshot> {
      Txn txn(db, TxnMode::read, "load identities");
      if (txn.begin_error()) return std::unexpected(*txn.begin_error());
      IdentitySnapshot snap;
      auto gen = read_generation(db);
      if (!gen) return std::unexpected(gen.error());
      snap.generation = *gen;
      if (auto e = load_into(db, snap.keys)) return std::unexpected(*e);
      if (auto e = load_into(db, snap.users)) return std::unexpected(*e);
      if (auto e = load_into(db, snap.teams)) return std::unexpected(*e);
      if (auto e = load_into(db, snap.organizations)) return std::unexpected(*e);
      if (auto e = load_into(db, snap.customers)) return std::unexpected(*e);
      if (auto e = load_into(db, snap.tags)) return std::unexpected(*e);
      if (auto e = load_into(db, snap.budgets)) return std::unexpected(*e);
      auto members = members_where(db, nullptr, {});
      if (!members) return std::unexpected(members.error());
      snap.team_members = std::move(*members);
      (void)txn.commit("load identities");
      return snap;
    });
  }

  // --- Store: models (/model/*) --------------------------------------------------------------

  // Runs `fn` in a write transaction that also moves proxy_model_generation.
  template <class T, class F>
  StoreResult<T> model_write(const std::string& what, F&& fn) {
    return admin_write<T>(
        what,
        [&](Connection& db) -> StoreResult<T> {
          StoreResult<T> r = fn(db);
          if (!r) return r;
          if (auto g = db.run("UPDATE proxy_model_generation SET generation = generation + 1 WHERE id = 1", {}, what); !g)
            return std::unexpected(g.error());
          return r;
        },
        false);
  }

  StoreResult<ProxyModelRecord> create_proxy_model(const ProxyModelRecord& m) override {
    const auto& E = kTable<ProxyModelRecord>;
    if (m.model_id.empty()) return std::unexpected(make_error(StoreErrorCode::invalid, "model_id is required", "model_id"));
    ProxyModelRecord r = m;
    if (r.created_at_ms == 0) r.created_at_ms = now_ms();
    if (r.updated_at_ms == 0) r.updated_at_ms = r.created_at_ms;
    return model_write<ProxyModelRecord>("create model", [&](Connection& db) {
      return stored(r, db.run(std::string("INSERT INTO ") + E.name + " (" + E.names() + ") VALUES (" +
                                  placeholders(E.count()) + ")",
                              E.params(r), "create model"));
    });
  }

  StoreResult<ProxyModelRecord> update_proxy_model(const ProxyModelRecord& m) override {
    return model_write<ProxyModelRecord>("update model", [&](Connection& db) -> StoreResult<ProxyModelRecord> {
      auto q = db.run("SELECT created_at_ms FROM proxy_models WHERE model_id = ?", {m.model_id}, "update model");
      if (!q) return std::unexpected(q.error());
      if (q->rows.empty()) return std::unexpected(make_error(StoreErrorCode::not_found, "model not found", "model_id"));
      ProxyModelRecord r = m;
      r.created_at_ms = q->rows.front().i64(0);
      r.updated_at_ms = std::max(now_ms(), r.created_at_ms);
      return stored(r, db.run("UPDATE proxy_models SET (model_name, entry, updated_at_ms) = (?, ?, ?) WHERE model_id = ?",
                              {r.model_name, r.entry, r.updated_at_ms, r.model_id}, "update model"));
    });
  }

  StoreResult<void> delete_proxy_model(const std::string& id) override {
    auto r = model_write<bool>("delete model", [&](Connection& db) -> StoreResult<bool> {
      auto s = db.run("DELETE FROM proxy_models WHERE model_id = ?", {id}, "delete model");
      if (!s) return std::unexpected(s.error());
      if (s->changes == 0) return std::unexpected(make_error(StoreErrorCode::not_found, "model not found", "model_id"));
      return true;
    });
    if (!r) return std::unexpected(r.error());
    return {};
  }

  StoreResult<std::vector<ProxyModelRecord>> list_proxy_models() override {
    return list<ProxyModelRecord>({}, {}, " ORDER BY created_at_ms, model_id");
  }

  StoreResult<std::int64_t> proxy_model_generation() override {
    return on_admin<std::int64_t>([](Connection& db) -> StoreResult<std::int64_t> {
      auto s = db.run("SELECT generation FROM proxy_model_generation WHERE id = 1", {}, "model generation");
      if (!s) return std::unexpected(s.error());
      if (s->rows.empty()) return std::unexpected(make_error(StoreErrorCode::unavailable, "model generation: no row"));
      return s->rows.front().i64(0);
    });
  }

  template <class R>
  static std::optional<StoreError> load_into(Connection& db, std::vector<R>& out) {
    auto r = list_where<R>(db, "", {});
    if (!r) return r.error();
    out = std::move(*r);
    return std::nullopt;
  }

  // --- Store: ledger and spend logs -------------------------------------------------------

  void append_ledger(LedgerRecord record, DurableCallback on_durable) override {
    if (journal_) journal_->append(std::move(record), std::move(on_durable));
    else writer_.append_ledger(std::move(record), std::move(on_durable));
  }

  void append_spend_log(SpendLogRow row) override { writer_.append_spend_log(std::move(row)); }

  StoreResult<RecoveryResult> recover_ledger(std::int64_t now, const ScopeRoller& roll) override {
    auto r = writer_.run<StoreResult<RecoveryResult>>([this, now, &roll] { return recover_on_writer(now, roll); });
    if (!r) return std::unexpected(make_error(StoreErrorCode::unavailable, "store is closed"));
    return std::move(*r);
  }

  StoreResult<std::vector<LedgerRecord>> read_ledger(std::int64_t after, std::int64_t limit) override {
    writer_.commit_held_now();  // journaled records not folded yet
    return on_admin<std::vector<LedgerRecord>>([&](Connection& db) -> StoreResult<std::vector<LedgerRecord>> {
      Txn txn(db, TxnMode::read, "read ledger");
      if (txn.begin_error()) return std::unexpected(*txn.begin_error());
      auto s = db.run(
          std::string("SELECT ") + kLedgerCols + " FROM ledger WHERE seq > ? ORDER BY seq LIMIT ?",
          {after, limit}, "read ledger");
      if (!s) return std::unexpected(s.error());
      std::vector<LedgerRecord> out;
      out.reserve(s->rows.size());
      for (const auto& row : s->rows) out.push_back(read_ledger_row(row));
      if (!out.empty()) {
        // Every listed record's scopes in one statement, in (seq, scope) order.
        auto sc = db.run(std::string("SELECT seq, ") + kScopeCols +
                             " FROM ledger_scope WHERE seq >= ? AND seq <= ? "
                             "ORDER BY seq, scope_kind, scope_id, window_start_ms",
                         {out.front().sequence, out.back().sequence}, "read ledger");
        if (!sc) return std::unexpected(sc.error());
        std::size_t i = 0;
        for (const auto& row : sc->rows) {
          const std::int64_t seq = row.i64(0);
          while (i < out.size() && out[i].sequence < seq) ++i;
          if (i == out.size()) break;
          if (out[i].sequence == seq) out[i].scopes.push_back(read_scope(row, 1));
        }
      }
      return out;
    });
  }

  StoreResult<std::optional<LedgerRecord>> settle_record(std::uint64_t reservation_id) override {
    using Result = StoreResult<std::optional<LedgerRecord>>;
    writer_.commit_held_now();  // journaled records not folded yet
    return on_admin<std::optional<LedgerRecord>>([&](Connection& db) -> Result {
      // Served by the ledger_reservation index (reservation_id, kind, seq).
      auto s = db.run(std::string("SELECT ") + kLedgerCols +
                          " FROM ledger WHERE reservation_id = ? AND kind = 'settle' ORDER BY seq LIMIT 1",
                      {static_cast<std::int64_t>(reservation_id)}, "read a settle record");
      if (!s) return std::unexpected(s.error());
      if (s->rows.empty()) return std::optional<LedgerRecord>();
      return std::optional<LedgerRecord>(read_ledger_row(s->rows.front()));
    });
  }

  StoreResult<std::vector<SpendLogRow>> query_spend_logs(const SpendLogFilter& f) override {
    writer_.commit_held_now();  // the rows still held for their batch
    Params args;
    const std::string where = spend_where(f, args);
    args.emplace_back(std::max<std::int64_t>(f.limit, 0));
    args.emplace_back(std::max<std::int64_t>(f.offset, 0));
    const std::string sql = std::string("SELECT ") + spend_columns().names() + " FROM spend_logs" + where +
                            " ORDER BY start_ms DESC, id DESC LIMIT ? OFFSET ?";
    return on_admin<std::vector<SpendLogRow>>([&](Connection& db) -> StoreResult<std::vector<SpendLogRow>> {
      auto s = db.run(sql, args, "query spend logs");
      if (!s) return std::unexpected(s.error());
      std::vector<SpendLogRow> out;
      out.reserve(s->rows.size());
      for (const auto& row : s->rows) out.push_back(spend_columns().read(row));
      return out;
    });
  }

  StoreResult<std::vector<SpendTotals>> query_spend_totals(const SpendTotalsQuery& q) override {
    writer_.commit_held_now();  // the rows still held for their batch
    Params args;
    std::string key;  // the grouping expression
    switch (q.by) {
      case SpendGroupBy::none: break;
      case SpendGroupBy::time_bucket:
        if (q.bucket_ms <= 0)
          return std::unexpected(make_error(StoreErrorCode::invalid, "bucket_ms must be positive", "bucket_ms"));
        // Integer division in both dialects (bigint / bigint); rows before origin_ms are filtered.
        key = "(start_ms - ?) / ?";
        args.emplace_back(q.origin_ms);
        args.emplace_back(q.bucket_ms);
        break;
      case SpendGroupBy::model_group: key = "model_group"; break;
      case SpendGroupBy::api_key: key = "api_key"; break;
      case SpendGroupBy::team_id: key = "team_id"; break;
      case SpendGroupBy::model: key = "model"; break;
    }
    auto f = q.filter;
    if (q.by == SpendGroupBy::time_bucket && (!f.start_ms || *f.start_ms < q.origin_ms)) f.start_ms = q.origin_ms;
    const std::string where = spend_where(f, args);
    std::string sql = "SELECT " + (key.empty() ? std::string("0") : key) + ", COALESCE(" +
                      backend_->saturating_sum("spend_nanos") + ", 0), COUNT(*), "
                      "CAST(COALESCE(SUM(CASE WHEN status = 'failure' THEN 1 ELSE 0 END), 0) AS BIGINT)"
                      " FROM spend_logs" + where;
    if (!key.empty()) {
      sql += " GROUP BY 1";
      sql += q.by == SpendGroupBy::time_bucket ? " ORDER BY 1" : " ORDER BY 2 DESC, 1";
    }
    if (q.limit > 0) {
      sql += " LIMIT ?";
      args.emplace_back(q.limit);
    }
    const bool bucketed = q.by == SpendGroupBy::time_bucket;
    return on_admin<std::vector<SpendTotals>>([&](Connection& db) -> StoreResult<std::vector<SpendTotals>> {
      auto s = db.run(sql, args, "spend totals");
      if (!s) return std::unexpected(s.error());
      std::vector<SpendTotals> out;
      out.reserve(s->rows.size());
      for (const auto& row : s->rows) {
        SpendTotals t;
        if (bucketed) t.bucket = row.i64(0);
        else if (!key.empty()) t.name = row.text(0);
        t.spend_nanos = row.i64(1);
        t.requests = row.i64(2);
        t.errors = row.i64(3);
        out.push_back(std::move(t));
      }
      return out;
    });
  }

  StoreResult<SpendLogRow> get_spend_log(const std::string& request_id) override {
    writer_.commit_held_now();  // the rows still held for their batch
    if (request_id.empty())
      return std::unexpected(make_error(StoreErrorCode::invalid, "request_id is required", "request_id"));
    auto rows = query_spend_logs({.request_id = request_id, .limit = 1});
    if (!rows) return std::unexpected(rows.error());
    if (rows->empty())
      return std::unexpected(make_error(StoreErrorCode::not_found, "spend log not found", "request_id"));
    return std::move(rows->front());
  }

  StoreResult<GlobalSpend> global_spend(std::optional<std::int64_t> start, std::optional<std::int64_t> end) override {
    writer_.commit_held_now();  // the rows still held for their batch
    const Params range{start.value_or(std::numeric_limits<std::int64_t>::min()),
                       end.value_or(std::numeric_limits<std::int64_t>::max())};
    const std::string where = " FROM spend_logs WHERE start_ms >= ? AND start_ms < ?";
    const std::string spend = backend_->saturating_sum("spend_nanos");
    const std::string tokens = backend_->saturating_sum("total_tokens");
    return on_admin<GlobalSpend>([&](Connection& db) -> StoreResult<GlobalSpend> {
      Txn txn(db, TxnMode::read, "global spend");
      if (txn.begin_error()) return std::unexpected(*txn.begin_error());
      GlobalSpend g;
      auto total = db.run("SELECT COALESCE(" + spend + ", 0), COUNT(*), COALESCE(" + tokens + ", 0)" + where, range,
                          "global spend");
      if (!total) return std::unexpected(total.error());
      g.total_spend_nanos = total->rows.at(0).i64(0);
      g.requests = total->rows.at(0).i64(1);
      g.total_tokens = total->rows.at(0).i64(2);
      auto by = [&](const char* col, std::vector<SpendBucket>& out) -> std::optional<StoreError> {
        auto s = db.run(std::string("SELECT ") + col + ", " + spend + ", COUNT(*), " + tokens + where + " GROUP BY " +
                            col + " ORDER BY 2 DESC, 1",
                        range, "global spend");
        if (!s) return s.error();
        for (const auto& row : s->rows) out.push_back(SpendBucket{row.text(0), row.i64(1), row.i64(2), row.i64(3)});
        return std::nullopt;
      };
      if (auto e = by("model_group", g.by_model_group)) return std::unexpected(*e);
      if (auto e = by("api_key", g.by_key)) return std::unexpected(*e);
      if (auto e = by("team_id", g.by_team)) return std::unexpected(*e);
      if (auto e = by("end_user", g.by_end_user)) return std::unexpected(*e);
      return g;
    });
  }

  // --- Store: deferred jobs --------------------------------------------------------------

  StoreResult<JobRecord> create_job(const JobRecord& job) override {
    if (auto e = check_job(job)) return std::unexpected(*e);
    JobRecord r = job;
    if (r.created_ms == 0) r.created_ms = now_ms();
    if (r.updated_ms == 0) r.updated_ms = r.created_ms;
    return insert(std::move(r), "create job", false);
  }

  StoreResult<JobRecord> get_job(const std::string& id) override { return get<JobRecord>(id); }

  StoreResult<JobRecord> update_job(const JobRecord& job) override {
    if (auto e = check_job(job)) return std::unexpected(*e);
    return replace(
        job, "update job", "created_ms",
        [](JobRecord& rec, std::int64_t created) {
          if (rec.created_ms == 0) rec.created_ms = created;
          if (rec.updated_ms == 0) rec.updated_ms = std::max(now_ms(), rec.created_ms);
        },
        false);
  }

  StoreResult<std::vector<JobRecord>> list_jobs(std::optional<std::string> status, int limit) override {
    const std::string tail = " ORDER BY created_ms, id LIMIT ?";
    const std::int64_t n = std::max(limit, 0);
    if (status) return list<JobRecord>("status = ?", {*status, n}, tail);
    return list<JobRecord>("", {n}, tail);
  }

  StoreResult<std::optional<JobRecord>> claim_job(const std::string& id, const std::string& owner,
                                                  std::int64_t now, std::int64_t lease_ms) override {
    if (owner.empty()) return std::unexpected(make_error(StoreErrorCode::invalid, "owner is required", "owner"));
    const auto& E = kTable<JobRecord>;
    // One statement: the row lock (Postgres re-checks the WHERE on the row a concurrent claimer
    // just updated; SQLite serialises writers) makes exactly one of several claimers win.
    return admin_write<std::optional<JobRecord>>(
        "claim job",
        [&](Connection& db) -> StoreResult<std::optional<JobRecord>> {
          auto s = db.run(std::string("UPDATE tollgate_jobs SET status = 'running', claimed_by = ?, "
                                      "claim_expires_ms = ?, updated_ms = ?, attempts = attempts + 1 "
                                      "WHERE id = ? AND (status = 'queued' OR (status = 'running' AND "
                                      "claim_expires_ms <= ?)) RETURNING ") +
                              E.names(),
                          {owner, now + lease_ms, now, id, now}, "claim job");
          if (!s) return std::unexpected(s.error());
          if (s->rows.empty()) return std::optional<JobRecord>();
          return std::optional<JobRecord>(E.read(s->rows.front()));
        },
        false);
  }

  StoreResult<bool> renew_job_claim(const std::string& id, const std::string& owner, std::int64_t now,
                                    std::int64_t lease_ms) override {
    return changed_one("renew job claim",
                       "UPDATE tollgate_jobs SET claim_expires_ms = ? WHERE id = ? AND status = 'running' AND "
                       "claimed_by = ?",
                       {now + lease_ms, id, owner});
  }

  StoreResult<bool> finish_job_run(const JobRecord& job, const std::string& owner) override {
    if (auto e = check_job(job)) return std::unexpected(*e);
    return changed_one("finish job run",
                       "UPDATE tollgate_jobs SET (status, result, error, request_id, attempts, updated_ms, "
                       "claimed_by, claim_expires_ms) = (?, ?, ?, ?, ?, ?, '', 0) "
                       "WHERE id = ? AND status = 'running' AND claimed_by = ?",
                       {job.status, job.result, job.error, job.request_id, job.attempts,
                        job.updated_ms ? job.updated_ms : now_ms(), job.id, owner});
  }

  StoreResult<std::int64_t> count_active_jobs(const std::string& api_key) override {
    return on_admin<std::int64_t>([&](Connection& db) -> StoreResult<std::int64_t> {
      auto s = db.run("SELECT COUNT(*) FROM tollgate_jobs WHERE api_key = ? AND status IN ('queued', 'running')",
                      {api_key}, "count jobs");
      if (!s) return std::unexpected(s.error());
      return s->rows.at(0).i64(0);
    });
  }

  StoreResult<std::int64_t> delete_finished_jobs(std::int64_t before_ms) override {
    return admin_write<std::int64_t>(
        "delete finished jobs",
        [&](Connection& db) -> StoreResult<std::int64_t> {
          auto s = db.run("DELETE FROM tollgate_jobs WHERE status IN ('succeeded', 'failed') AND updated_ms < ?",
                          {before_ms}, "delete finished jobs");
          if (!s) return std::unexpected(s.error());
          return s->changes;
        },
        false);
  }

  // --- operations -------------------------------------------------------------------------

  bool flush() override {
    const bool journaled = !journal_ || journal_->flush();
    return writer_.flush() && journaled;
  }

  StoreHealth health() override {
    if (journal_)
      if (auto h = journal_->health(); !h.writable) return h;
    if (writer_.idle_for(std::chrono::seconds(1)) && !probing_.exchange(true)) {
      // Nothing written recently: a tiny transaction proves the database still writable. It runs
      // on the writer, behind what waits there, and this call does not wait for it (a locked
      // database would hold the caller, an io thread, for the busy timeout): the answer is the
      // latest write's, and the probe's once it ran.
      const bool posted = writer_.post([this] {
        auto err = write_on_writer("health probe", [&](Connection& db) -> std::optional<StoreError> {
          auto s = db.run(
              "INSERT INTO store_meta (name, value) VALUES ('health_probe_ms', ?) "
              "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
              {std::to_string(now_ms())}, "health probe");
          if (!s) return s.error();
          return std::nullopt;
        });
        writer_.note_write(err ? std::optional<std::string>(err->message) : std::nullopt);
        probing_ = false;
      });
      if (!posted) return StoreHealth{false, "store is closed"};
    }
    return writer_.health();
  }

  WriterStats writer_stats() const override {
    WriterStats s = writer_.stats();
    if (!journal_) return s;
    // Ledger records: what the journal wrote, refused and waited for; batches: both writers'.
    const WriterStats j = journal_->stats();
    s.batches += j.batches;
    s.failed_batches += j.failed_batches;
    s.ledger_records = j.ledger_records;
    s.failed_ledger_records = j.failed_ledger_records;
    s.records = j.ledger_records + s.spend_rows;
    s.max_batch = std::max(s.max_batch, j.max_batch);
    s.p50_us = j.p50_us;
    s.p99_us = j.p99_us;
    s.max_us = j.max_us;
    return s;
  }

 private:
  // Writer thread only: one write transaction on the writer connection.
  template <class F>
  std::optional<StoreError> write_on_writer(const std::string& what, F&& body) {
    std::optional<StoreError> out;
    auto conn_err = backend_->with_writer([&](Connection& db) {
      Txn txn(db, TxnMode::write, what);
      if (txn.begin_error()) {
        out = txn.begin_error();
        return;
      }
      if ((out = body(db))) return;
      if (auto c = txn.commit(what); !c) out = c.error();
    });
    return conn_err ? conn_err : out;
  }

  // Inserts one ledger record and its scopes (a settle without scopes copies its reserve's).
  static StoreResult<std::int64_t> insert_ledger(Connection& db, const LedgerRecord& r) {
    auto seqs = insert_ledger_rows(db, {&r});
    if (!seqs) return std::unexpected(seqs.error());
    return seqs->at(0);
  }

  // A group commit: its ledger records and spend rows in one transaction. Where the engine can
  // (Backend::one_statement_writes), a batch of ordinary size is one statement in autocommit (one
  // round trip to a server, which is what a request waits for before its upstream call);
  // otherwise multi-row INSERTs in a write transaction.
  std::optional<std::string> commit_batch(const std::vector<GroupCommitWriter::Item>& batch) {
    // Statements stay well under both engines' bound on parameters (SQLite 32766, libpq 65535).
    constexpr std::size_t kLedgerChunk = 256, kParamBudget = 30000;
    std::vector<const LedgerRecord*> records;
    std::vector<const SpendLogRow*> rows;
    std::uint64_t folded = 0;  // the highest journal record in the batch: the mark moves with it
    for (const auto& item : batch) {
      if (const auto* l = std::get_if<GroupCommitWriter::LedgerItem>(&item)) {
        records.push_back(&l->record);
        folded = std::max(folded, l->journal_seq);
      } else {
        rows.push_back(std::get<GroupCommitWriter::SpendItem>(item).row.get());
      }
    }
    const std::size_t per_row = static_cast<std::size_t>(spend_columns().count());
    // A server engine takes many rows per statement (one round trip); an embedded one takes 16, 4
    // or 1 (statements it parses once and keeps: 16 rows' text is within its cache's bound).
    const bool server = backend_->one_statement_writes();
    const std::size_t chunk_rows = std::max<std::size_t>(1, kParamBudget / per_row);
    const std::string one = "(" + placeholders(spend_columns().count()) + ")";
    // `insert`: "INSERT INTO " in one autocommit statement, else the connection's verb for a
    // multi-row INSERT in a transaction.
    auto spend_inserts = [&](std::string_view insert) {
      std::vector<Statement> spend;
      for (std::size_t i = 0, n = 0; i < rows.size(); i += n) {
        n = rows_for_statement(rows.size() - i, server ? RowsPerStatement::any : RowsPerStatement::fixed,
                               server ? chunk_rows : 16);
        Statement st{std::string(insert) + "spend_logs (" + spend_columns().names() + ") VALUES ", {}};
        st.params.reserve(n * per_row);
        for (std::size_t j = i; j < i + n; ++j) {
          st.sql += j == i ? one : "," + one;
          spend_columns().append_params(*rows[j], st.params, true);  // the batch outlives its statements
        }
        spend.push_back(std::move(st));
      }
      return spend;
    };
    if (backend_->one_statement_writes() && records.size() <= kLedgerChunk && folded == 0)
      if (auto st = one_statement_append(records, spend_inserts("INSERT INTO "), kParamBudget)) {
        std::optional<StoreError> out;
        auto conn_err = backend_->with_writer([&](Connection& db) {
          auto r = db.run_atomic(st->sql, st->params, "group commit");
          if (!r) out = r.error();
          else if (auto seqs = check_returned(std::move(r->rows), records); !seqs) out = seqs.error();
        });
        if (auto e = conn_err ? conn_err : out) return e->message;
        return std::nullopt;
      }
    auto err = write_on_writer("group commit", [&](Connection& db) -> std::optional<StoreError> {
      for (std::size_t i = 0; i < records.size(); i += kLedgerChunk) {
        std::vector<const LedgerRecord*> chunk(records.begin() + static_cast<std::ptrdiff_t>(i),
                                               records.begin() + static_cast<std::ptrdiff_t>(std::min(records.size(), i + kLedgerChunk)));
        std::size_t scopes = 0;
        for (const auto* r : chunk) scopes += r->scopes.size();
        if (scopes * 6 > kParamBudget) {  // absurdly many scopes: one record at a time
          for (const auto* r : chunk)
            if (auto s = insert_ledger(db, *r); !s) return s.error();
          continue;
        }
        // An embedded engine keeps its statements: rows go in the few sizes it then has parsed.
        const auto per = backend_->one_statement_writes() ? RowsPerStatement::any : RowsPerStatement::fixed;
        if (auto seqs = insert_ledger_rows(db, chunk, per); !seqs) return seqs.error();
      }
      for (const auto& st : spend_inserts(db.insert_in_transaction()))
        if (auto s = db.run(st.sql, st.params, "append spend log"); !s) return s.error();
      if (folded != 0)
        if (auto s = db.run("INSERT INTO store_meta (name, value) VALUES (?, ?) "
                            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                            {std::string(kFoldedMark), std::to_string(folded)}, "move the journal mark");
            !s)
          return s.error();
      return std::nullopt;
    });
    if (err) return err->message;
    return std::nullopt;
  }

  StoreResult<RecoveryResult> recover_on_writer(std::int64_t now, const ScopeRoller& roll) {
    RecoveryResult result;
    auto err = write_on_writer("recover ledger", [&](Connection& db) -> std::optional<StoreError> {
      result = RecoveryResult{};
      auto open = db.run(
          "SELECT r.seq, r.reservation_id, r.amount_nanos, r.request_id, r.model "
          "FROM ledger r WHERE r.kind = 'reserve' AND NOT EXISTS ("
          "SELECT 1 FROM ledger s WHERE s.reservation_id = r.reservation_id "
          "AND s.kind = 'settle' AND s.seq > r.seq) ORDER BY r.seq",
          {}, "recover ledger");
      if (!open) return open.error();
      for (const auto& row : open->rows) {
        LedgerRecord rec;
        rec.reservation_id = static_cast<std::uint64_t>(row.i64(1));
        rec.kind = LedgerKind::settle;
        rec.amount_nanos = row.i64(2);
        rec.actual_nanos = row.i64(2);
        rec.settle_kind = "recovered";
        rec.request_id = row.text(3);
        rec.model = row.text(4);
        rec.at_ms = now;
        // The reserve's exact scopes, each in the window that contains `now` (the window the
        // in-memory ledger would have charged had the settle happened now).
        auto scopes = db.run(std::string("SELECT ") + kScopeCols +
                                 " FROM ledger_scope WHERE seq = ? ORDER BY scope_kind, scope_id, window_start_ms",
                             {row.i64(0)}, "recover ledger");
        if (!scopes) return scopes.error();
        for (const auto& s : scopes->rows) {
          LedgerScope sc = read_scope(s, 0);
          rec.scopes.push_back(roll ? roll(sc, now) : std::move(sc));
        }
        auto seq = insert_ledger(db, rec);
        if (!seq) return seq.error();
        rec.sequence = *seq;
        result.recovered.push_back(std::move(rec));
      }
      auto totals = db.run(
          "SELECT sc.scope_kind, sc.scope_id, sc.window_start_ms, MAX(sc.window_end_ms), "
          "MAX(sc.period), " + backend_->saturating_sum("l.actual_nanos") + " "
          "FROM ledger l JOIN ledger_scope sc ON sc.seq = l.seq "
          "WHERE l.kind = 'settle' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
          {}, "recover ledger");
      if (!totals) return totals.error();
      for (const auto& row : totals->rows) result.spent.push_back(ScopeSpend{read_scope(row, 0), row.i64(5)});
      auto mx = db.run("SELECT COALESCE(MAX(reservation_id), 0) FROM ledger", {}, "recover ledger");
      if (!mx) return mx.error();
      result.max_reservation_id = static_cast<std::uint64_t>(mx->rows.at(0).i64(0));
      return std::nullopt;
    });
    writer_.note_write(err ? std::optional<std::string>(err->message) : std::nullopt);
    if (err) return std::unexpected(*err);
    return result;
  }

  /// store_meta's row naming the highest ledger journal record the database holds.
  static constexpr std::string_view kFoldedMark = "ledger_journal_folded";

  std::unique_ptr<Backend> backend_;
  GroupCommitWriter writer_;
  std::unique_ptr<journal::LedgerJournal> journal_;  ///< set before start() when journaled
  std::atomic<bool> probing_{false};                 ///< a health probe is queued or running
};

}  // namespace

StoreResult<std::unique_ptr<Store>> open_sql_store(std::unique_ptr<Backend> backend, const SqlStoreOptions& options) {
  std::optional<StoreError> migrated;
  if (auto e = backend->with_writer([&](Connection& db) { migrated = migrate(db, *backend); }))
    return std::unexpected(*e);
  if (migrated) return std::unexpected(*migrated);
  auto store = std::make_unique<SqlStore>(std::move(backend), options);
  if (options.journal)
    if (auto e = store->open_journal(*options.journal, options.journal_fold_only)) return std::unexpected(*e);
  store->start();
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace tollgate::store::sql
