#pragma once
/// The simulator's stand-ins for the gateway's edges, all in memory:
///  - CapturingSink: the client; records the status, headers and body the attempt loop sends.
///  - RecordingStore: the store; keeps the spend log rows (their `decision` column is the full
///    decision trace `tollgate explain` prints) and counts ledger records, acknowledging each
///    at once. Identity, job and query calls answer `invalid` (the simulator never makes them).
///  - MemoryJobQueue: the `deferred` degradation mode's queue; jobs are kept, never run.
/// Single-threaded, like the simulator.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/jobs.hpp"
#include "pipeline/sink.hpp"
#include "store/store.hpp"

namespace tollgate::simulate {

class CapturingSink final : public pipeline::ResponseSink {
 public:
  int status = 0;                      ///< 0 until something was sent
  pipeline::Headers headers;
  std::string body;                    ///< completion JSON, error JSON (OpenAI shape) or the 202 body
  std::optional<core::Error> error;    ///< send_error's error
  bool streamed = false;
  std::size_t chunks = 0;              ///< stream chunks relayed
  std::optional<core::Error> stream_error;  ///< an error that ended a committed stream

  /// Header value (first match, case-insensitive) or empty.
  std::string header(std::string_view name) const;

  boost::asio::awaitable<bool> send_completion(const boost::json::object& completion, std::string raw,
                                               const pipeline::Headers& h) override;
  boost::asio::awaitable<bool> send_json(int st, std::string b, const pipeline::Headers& h) override;
  boost::asio::awaitable<bool> send_error(const core::Error& e, const pipeline::Headers& h) override;
  boost::asio::awaitable<bool> begin_stream(const pipeline::Headers& h) override;
  boost::asio::awaitable<bool> stream_chunks(const std::vector<std::string>& c, const providers::Usage& usage) override;
  boost::asio::awaitable<bool> end_stream(const std::optional<core::Error>& e) override;
  void on_client_gone(std::function<void()> fn) override { gone_ = std::move(fn); }
  bool client_gone() const override { return false; }

 private:
  std::function<void()> gone_;
};

/// The client-facing error body (OpenAI shape) of `e`: the upstream's own body when it is relayed.
std::string error_body(const core::Error& e);

class RecordingStore final : public store::Store {
 public:
  std::vector<store::SpendLogRow> rows;          ///< every spend log row, in order
  std::uint64_t ledger_reserves = 0;
  std::uint64_t ledger_settles = 0;

  // The ledger and spend logs: what the attempt loop writes.
  void append_ledger(store::LedgerRecord record, store::DurableCallback on_durable) override;
  void append_spend_log(store::SpendLogRow row) override { rows.push_back(std::move(row)); }
  store::StoreResult<store::SpendLogRow> get_spend_log(const std::string& request_id) override;
  store::StoreResult<std::vector<store::SpendLogRow>> query_spend_logs(const store::SpendLogFilter& filter) override;
  bool flush() override { return true; }
  store::StoreHealth health() override { return {true, ""}; }
  store::WriterStats writer_stats() const override { return {}; }
  store::StoreResult<store::RecoveryResult> recover_ledger(std::int64_t, const store::ScopeRoller&) override { return store::RecoveryResult{}; }
  store::StoreResult<std::vector<store::LedgerRecord>> read_ledger(std::int64_t, std::int64_t) override;

  // Not used by a simulation.
  store::StoreResult<store::KeyRecord> create_key(const store::KeyRecord&) override;
  store::StoreResult<store::KeyRecord> get_key(const std::string&) override;
  store::StoreResult<store::KeyRecord> update_key(const store::KeyRecord&) override;
  store::StoreResult<void> delete_key(const std::string&) override;
  store::StoreResult<std::vector<store::KeyRecord>> list_keys(const store::KeyFilter&) override;
  store::StoreResult<store::UserRecord> create_user(const store::UserRecord&) override;
  store::StoreResult<store::UserRecord> get_user(const std::string&) override;
  store::StoreResult<store::UserRecord> update_user(const store::UserRecord&) override;
  store::StoreResult<void> delete_user(const std::string&) override;
  store::StoreResult<std::vector<store::UserRecord>> list_users() override;
  store::StoreResult<store::TeamRecord> create_team(const store::TeamRecord&) override;
  store::StoreResult<store::TeamRecord> get_team(const std::string&) override;
  store::StoreResult<store::TeamRecord> update_team(const store::TeamRecord&) override;
  store::StoreResult<void> delete_team(const std::string&) override;
  store::StoreResult<std::vector<store::TeamRecord>> list_teams(const std::optional<std::string>&) override;
  store::StoreResult<store::TeamMemberRecord> upsert_team_member(const store::TeamMemberRecord&) override;
  store::StoreResult<void> remove_team_member(const std::string&, const std::string&) override;
  store::StoreResult<std::vector<store::TeamMemberRecord>> list_team_members(const std::string&) override;
  store::StoreResult<store::OrganizationRecord> create_organization(const store::OrganizationRecord&) override;
  store::StoreResult<store::OrganizationRecord> get_organization(const std::string&) override;
  store::StoreResult<store::OrganizationRecord> update_organization(const store::OrganizationRecord&) override;
  store::StoreResult<void> delete_organization(const std::string&) override;
  store::StoreResult<std::vector<store::OrganizationRecord>> list_organizations() override;
  store::StoreResult<store::CustomerRecord> create_customer(const store::CustomerRecord&) override;
  store::StoreResult<store::CustomerRecord> get_customer(const std::string&) override;
  store::StoreResult<store::CustomerRecord> update_customer(const store::CustomerRecord&) override;
  store::StoreResult<void> delete_customer(const std::string&) override;
  store::StoreResult<std::vector<store::CustomerRecord>> list_customers() override;
  store::StoreResult<store::TagRecord> create_tag(const store::TagRecord&) override;
  store::StoreResult<store::TagRecord> get_tag(const std::string&) override;
  store::StoreResult<store::TagRecord> update_tag(const store::TagRecord&) override;
  store::StoreResult<void> delete_tag(const std::string&) override;
  store::StoreResult<std::vector<store::TagRecord>> list_tags() override;
  store::StoreResult<store::BudgetRecord> create_budget(const store::BudgetRecord&) override;
  store::StoreResult<store::BudgetRecord> get_budget(const std::string&) override;
  store::StoreResult<store::BudgetRecord> update_budget(const store::BudgetRecord&) override;
  store::StoreResult<void> delete_budget(const std::string&) override;
  store::StoreResult<std::vector<store::BudgetRecord>> list_budgets() override;
  store::StoreResult<store::IdentitySnapshot> load_all_identities() override;
  store::StoreResult<std::int64_t> identity_generation() override { return 0; }
  store::StoreResult<store::GlobalSpend> global_spend(std::optional<std::int64_t>, std::optional<std::int64_t>) override;
  store::StoreResult<store::JobRecord> create_job(const store::JobRecord&) override;
  store::StoreResult<store::JobRecord> get_job(const std::string&) override;
  store::StoreResult<store::JobRecord> update_job(const store::JobRecord&) override;
  store::StoreResult<std::vector<store::JobRecord>> list_jobs(std::optional<std::string>, int) override;
  store::StoreResult<std::optional<store::JobRecord>> claim_job(const std::string&, const std::string&, std::int64_t,
                                                                std::int64_t) override;
  store::StoreResult<bool> renew_job_claim(const std::string&, const std::string&, std::int64_t, std::int64_t) override;
  store::StoreResult<bool> finish_job_run(const store::JobRecord&, const std::string&) override;
  store::StoreResult<std::int64_t> count_active_jobs(const std::string&) override;
  store::StoreResult<std::int64_t> delete_finished_jobs(std::int64_t) override;
};

class MemoryJobQueue final : public pipeline::JobQueue {
 public:
  std::vector<store::JobRecord> jobs;
  boost::asio::awaitable<std::expected<store::JobRecord, pipeline::DeferRefused>> defer(store::JobRecord job,
                                                                           core::SteadyTime deadline) override;
};

}  // namespace tollgate::simulate
