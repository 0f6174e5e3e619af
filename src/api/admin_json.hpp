#pragma once
/// Stored records as the admin API's JSON objects, with LiteLLM's field names (docs.litellm.ai
/// proxy/virtual_keys, proxy/users, proxy/team_budgets, proxy/customers; docs/admin_api.md has
/// the field-by-field comparison). Money as JSON numbers of dollars, times as ISO 8601 UTC.
/// Pure functions; thread-safe.

#include <optional>
#include <string>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "store/records.hpp"

namespace tollgate::api::admin {

/// The strings as a JSON array.
boost::json::array string_array(const std::vector<std::string>& v);
/// `s`, or null when empty.
boost::json::value opt_string(const std::string& s);
/// Milliseconds since the epoch as ISO 8601 UTC, or null.
boost::json::value opt_time(const std::optional<std::int64_t>& ms);
/// A `/key/*` object (LiteLLM's key fields; `spend` 0 until merged with the ledger's figures).
boost::json::object key_object(const store::KeyRecord& k);
/// A `/user/*` object.
boost::json::object user_object(const store::UserRecord& u);
/// One entry of a team's `members_with_roles`.
boost::json::object member_object(const store::TeamMemberRecord& m);
/// A `/team/*` object with its members.
boost::json::object team_object(const store::TeamRecord& t, const std::vector<store::TeamMemberRecord>& members);
/// An `/organization/*` object.
boost::json::object org_object(const store::OrganizationRecord& r);
/// A `/customer/*` (end user) object.
boost::json::object customer_object(const store::CustomerRecord& c);
/// A `/tag/*` object.
boost::json::object tag_object(const store::TagRecord& t);
/// A `/budget/*` object (LiteLLM_BudgetTable; budget_reset_at is null: each linked entity has
/// its own window, shown in its own `/…/info`).
boost::json::object budget_object(const store::BudgetRecord& b);
/// One `/spend/logs` row.
boost::json::object spend_log_object(const store::SpendLogRow& r);

}  // namespace tollgate::api::admin
