#include "simulate/recording.hpp"

#include "api/errors.hpp"

#include <algorithm>
#include <cctype>

#include <boost/json.hpp>

namespace tollgate::simulate {

namespace net = boost::asio;
namespace json = boost::json;
using store::StoreError;
using store::StoreErrorCode;
using store::StoreResult;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::unexpected<StoreError> unused() {
  return std::unexpected(StoreError{StoreErrorCode::invalid, "not available in tollgate simulate", ""});
}

}  // namespace

std::string CapturingSink::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

std::string error_body(const core::Error& e) { return api::openai_error_json(e); }

net::awaitable<bool> CapturingSink::send_completion(const json::object& completion, std::string raw,
                                                    const pipeline::Headers& h) {
  status = 200;
  headers = h;
  body = raw.empty() ? json::serialize(completion) : std::move(raw);
  co_return true;
}

net::awaitable<bool> CapturingSink::send_json(int st, std::string b, const pipeline::Headers& h) {
  status = st;
  headers = h;
  body = std::move(b);
  co_return true;
}

net::awaitable<bool> CapturingSink::send_error(const core::Error& e, const pipeline::Headers& h) {
  status = e.status;
  headers = h;
  error = e;
  body = error_body(e);
  co_return true;
}

net::awaitable<bool> CapturingSink::begin_stream(const pipeline::Headers& h) {
  status = 200;
  headers = h;
  streamed = true;
  co_return true;
}

net::awaitable<bool> CapturingSink::stream_chunks(const std::vector<std::string>& c, const providers::Usage&) {
  chunks += c.size();
  for (const auto& x : c) body += "data: " + x + "\n\n";
  co_return true;
}

net::awaitable<bool> CapturingSink::end_stream(const std::optional<core::Error>& e) {
  stream_error = e;
  body += "data: [DONE]\n\n";
  co_return true;
}

void RecordingStore::append_ledger(store::LedgerRecord record, store::DurableCallback on_durable) {
  if (record.kind == store::LedgerKind::reserve) ++ledger_reserves;
  else ++ledger_settles;
  if (on_durable) on_durable(true);
}

StoreResult<store::SpendLogRow> RecordingStore::get_spend_log(const std::string& request_id) {
  for (auto it = rows.rbegin(); it != rows.rend(); ++it)
    if (it->request_id == request_id) return *it;
  return std::unexpected(StoreError{StoreErrorCode::not_found, "spend log not found", "request_id"});
}

StoreResult<std::vector<store::SpendLogRow>> RecordingStore::query_spend_logs(const store::SpendLogFilter& f) {
  std::vector<store::SpendLogRow> out;
  for (auto it = rows.rbegin(); it != rows.rend() && static_cast<std::int64_t>(out.size()) < f.limit; ++it)
    if (!f.request_id || it->request_id == *f.request_id) out.push_back(*it);
  return out;
}

StoreResult<std::vector<store::LedgerRecord>> RecordingStore::read_ledger(std::int64_t, std::int64_t) { return unused(); }
StoreResult<store::KeyRecord> RecordingStore::create_key(const store::KeyRecord&) { return unused(); }
StoreResult<store::KeyRecord> RecordingStore::get_key(const std::string&) { return unused(); }
StoreResult<store::KeyRecord> RecordingStore::update_key(const store::KeyRecord&) { return unused(); }
StoreResult<void> RecordingStore::delete_key(const std::string&) { return unused(); }
StoreResult<std::vector<store::KeyRecord>> RecordingStore::list_keys(const store::KeyFilter&) { return unused(); }
StoreResult<store::UserRecord> RecordingStore::create_user(const store::UserRecord&) { return unused(); }
StoreResult<store::UserRecord> RecordingStore::get_user(const std::string&) { return unused(); }
StoreResult<store::UserRecord> RecordingStore::update_user(const store::UserRecord&) { return unused(); }
StoreResult<void> RecordingStore::delete_user(const std::string&) { return unused(); }
StoreResult<std::vector<store::UserRecord>> RecordingStore::list_users() { return unused(); }
StoreResult<store::TeamRecord> RecordingStore::create_team(const store::TeamRecord&) { return unused(); }
StoreResult<store::TeamRecord> RecordingStore::get_team(const std::string&) { return unused(); }
StoreResult<store::TeamRecord> RecordingStore::update_team(const store::TeamRecord&) { return unused(); }
StoreResult<void> RecordingStore::delete_team(const std::string&) { return unused(); }
StoreResult<std::vector<store::TeamRecord>> RecordingStore::list_teams(const std::optional<std::string>&) { return unused(); }
StoreResult<store::TeamMemberRecord> RecordingStore::upsert_team_member(const store::TeamMemberRecord&) { return unused(); }
StoreResult<void> RecordingStore::remove_team_member(const std::string&, const std::string&) { return unused(); }
StoreResult<std::vector<store::TeamMemberRecord>> RecordingStore::list_team_members(const std::string&) { return unused(); }
StoreResult<store::OrganizationRecord> RecordingStore::create_organization(const store::OrganizationRecord&) { return unused(); }
StoreResult<store::OrganizationRecord> RecordingStore::get_organization(const std::string&) { return unused(); }
StoreResult<store::OrganizationRecord> RecordingStore::update_organization(const store::OrganizationRecord&) { return unused(); }
StoreResult<void> RecordingStore::delete_organization(const std::string&) { return unused(); }
StoreResult<std::vector<store::OrganizationRecord>> RecordingStore::list_organizations() { return unused(); }
StoreResult<store::CustomerRecord> RecordingStore::create_customer(const store::CustomerRecord&) { return unused(); }
StoreResult<store::CustomerRecord> RecordingStore::get_customer(const std::string&) { return unused(); }
StoreResult<store::CustomerRecord> RecordingStore::update_customer(const store::CustomerRecord&) { return unused(); }
StoreResult<void> RecordingStore::delete_customer(const std::string&) { return unused(); }
StoreResult<std::vector<store::CustomerRecord>> RecordingStore::list_customers() { return unused(); }
StoreResult<store::TagRecord> RecordingStore::create_tag(const store::TagRecord&) { return unused(); }
StoreResult<store::TagRecord> RecordingStore::get_tag(const std::string&) { return unused(); }
StoreResult<store::TagRecord> RecordingStore::update_tag(const store::TagRecord&) { return unused(); }
StoreResult<void> RecordingStore::delete_tag(const std::string&) { return unused(); }
StoreResult<std::vector<store::TagRecord>> RecordingStore::list_tags() { return unused(); }
StoreResult<store::BudgetRecord> RecordingStore::create_budget(const store::BudgetRecord&) { return unused(); }
StoreResult<store::BudgetRecord> RecordingStore::get_budget(const std::string&) { return unused(); }
StoreResult<store::BudgetRecord> RecordingStore::update_budget(const store::BudgetRecord&) { return unused(); }
StoreResult<void> RecordingStore::delete_budget(const std::string&) { return unused(); }
StoreResult<std::vector<store::BudgetRecord>> RecordingStore::list_budgets() { return unused(); }
StoreResult<store::IdentitySnapshot> RecordingStore::load_all_identities() { return store::IdentitySnapshot{}; }
StoreResult<store::GlobalSpend> RecordingStore::global_spend(std::optional<std::int64_t>, std::optional<std::int64_t>) {
  return unused();
}
StoreResult<store::JobRecord> RecordingStore::create_job(const store::JobRecord&) { return unused(); }
StoreResult<store::JobRecord> RecordingStore::get_job(const std::string&) { return unused(); }
StoreResult<store::JobRecord> RecordingStore::update_job(const store::JobRecord&) { return unused(); }
StoreResult<std::vector<store::JobRecord>> RecordingStore::list_jobs(std::optional<std::string>, int) { return unused(); }
StoreResult<std::optional<store::JobRecord>> RecordingStore::claim_job(const std::string&, const std::string&,
                                                                       std::int64_t, std::int64_t) {
  return unused();
}
StoreResult<bool> RecordingStore::renew_job_claim(const std::string&, const std::string&, std::int64_t, std::int64_t) {
  return unused();
}
StoreResult<bool> RecordingStore::finish_job_run(const store::JobRecord&, const std::string&) { return unused(); }
StoreResult<std::int64_t> RecordingStore::count_active_jobs(const std::string&) { return unused(); }
StoreResult<std::int64_t> RecordingStore::delete_finished_jobs(std::int64_t) { return unused(); }

net::awaitable<std::expected<store::JobRecord, pipeline::DeferRefused>> MemoryJobQueue::defer(store::JobRecord job, core::SteadyTime) {
  job.id = "job-sim-" + std::to_string(jobs.size() + 1);
  job.status = "queued";
  jobs.push_back(job);
  co_return job;
}

}  // namespace tollgate::simulate
