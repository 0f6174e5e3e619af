#include "api/admin_json.hpp"

#include <boost/json.hpp>

#include "api/admin_fields.hpp"
#include "auth/identities.hpp"

namespace tollgate::api::admin {
namespace json = boost::json;

json::array string_array(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

json::value opt_string(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }
namespace {
template <class T>
json::value opt_value(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
}  // namespace

json::value opt_time(const std::optional<std::int64_t>& ms) {
  return ms ? json::value(auth::iso8601_utc(*ms)) : json::value(nullptr);
}

// --- record → JSON (LiteLLM field names) ------------------------------------------------------

json::object key_object(const store::KeyRecord& k) {
  json::object o;
  o["token"] = k.token_hash;
  o["key_name"] = opt_string(k.key_name);
  o["key_alias"] = opt_string(k.key_alias);
  o["spend"] = 0;
  o["max_budget"] = dollars_json(k.max_budget_nanos);
  o["soft_budget"] = dollars_json(k.soft_budget_nanos);
  o["budget_duration"] = opt_value(k.budget_duration);
  o["budget_reset_at"] = nullptr;
  o["budget_limits"] = json_text(k.budget_limits, json::array());
  o["model_max_budget"] = json_text(k.model_max_budget, json::object());
  o["expires"] = opt_time(k.expires_at_ms);
  o["models"] = string_array(k.models);
  o["user_id"] = opt_string(k.user_id);
  o["team_id"] = opt_string(k.team_id);
  o["organization_id"] = opt_string(k.organization_id);
  o["metadata"] = json_text(k.metadata, json::object());
  o["tags"] = string_array(k.tags);
  o["max_parallel_requests"] = opt_value(k.max_parallel_requests);
  o["rpm_limit"] = opt_value(k.rpm_limit);
  o["tpm_limit"] = opt_value(k.tpm_limit);
  o["blocked"] = k.blocked;
  o["allowed_model_region"] = opt_string(k.allowed_model_region);
  o["budget_id"] = opt_string(k.budget_id);
  o["created_at"] = auth::iso8601_utc(k.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(k.updated_at_ms);
  return o;
}

json::object user_object(const store::UserRecord& u) {
  json::object o;
  o["user_id"] = u.user_id;
  o["user_email"] = opt_string(u.user_email);
  o["user_alias"] = opt_string(u.user_alias);
  o["max_budget"] = dollars_json(u.max_budget_nanos);
  o["budget_duration"] = opt_value(u.budget_duration);
  o["models"] = string_array(u.models);
  o["metadata"] = json_text(u.metadata, json::object());
  o["rpm_limit"] = opt_value(u.rpm_limit);
  o["tpm_limit"] = opt_value(u.tpm_limit);
  o["created_at"] = auth::iso8601_utc(u.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(u.updated_at_ms);
  return o;
}

json::object member_object(const store::TeamMemberRecord& m) {
  json::object o;
  o["user_id"] = m.user_id;
  o["role"] = m.role;
  o["max_budget_in_team"] = dollars_json(m.max_budget_in_team_nanos);
  o["budget_duration"] = opt_value(m.budget_duration);
  return o;
}

json::object team_object(const store::TeamRecord& t, const std::vector<store::TeamMemberRecord>& members) {
  json::object o;
  o["team_id"] = t.team_id;
  o["team_alias"] = opt_string(t.team_alias);
  o["organization_id"] = opt_string(t.organization_id);
  o["max_budget"] = dollars_json(t.max_budget_nanos);
  o["budget_duration"] = opt_value(t.budget_duration);
  o["models"] = string_array(t.models);
  o["metadata"] = json_text(t.metadata, json::object());
  o["rpm_limit"] = opt_value(t.rpm_limit);
  o["tpm_limit"] = opt_value(t.tpm_limit);
  o["blocked"] = t.blocked;
  o["allowed_model_region"] = opt_string(t.allowed_model_region);
  json::array ms;
  for (const auto& m : members) ms.push_back(member_object(m));
  o["members_with_roles"] = std::move(ms);
  o["budget_id"] = opt_string(t.budget_id);
  o["created_at"] = auth::iso8601_utc(t.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(t.updated_at_ms);
  return o;
}

json::object org_object(const store::OrganizationRecord& r) {
  json::object o;
  o["organization_id"] = r.organization_id;
  o["organization_alias"] = opt_string(r.organization_alias);
  o["max_budget"] = dollars_json(r.max_budget_nanos);
  o["budget_duration"] = opt_value(r.budget_duration);
  o["models"] = string_array(r.models);
  o["metadata"] = json_text(r.metadata, json::object());
  o["created_at"] = auth::iso8601_utc(r.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(r.updated_at_ms);
  return o;
}

json::object customer_object(const store::CustomerRecord& c) {
  json::object o;
  o["user_id"] = c.user_id;
  o["alias"] = opt_string(c.alias);
  o["blocked"] = c.blocked;
  o["allowed_model_region"] = opt_string(c.allowed_model_region);
  o["max_budget"] = dollars_json(c.max_budget_nanos);
  o["budget_duration"] = opt_value(c.budget_duration);
  json::object bt;
  bt["max_budget"] = dollars_json(c.max_budget_nanos);
  bt["budget_duration"] = opt_value(c.budget_duration);
  bt["budget_id"] = opt_string(c.budget_id);
  o["litellm_budget_table"] = std::move(bt);
  o["budget_id"] = opt_string(c.budget_id);
  o["created_at"] = auth::iso8601_utc(c.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(c.updated_at_ms);
  return o;
}

json::object tag_object(const store::TagRecord& t) {
  json::object o;
  o["name"] = t.name;
  o["description"] = opt_string(t.description);
  o["models"] = json::array();
  o["max_budget"] = dollars_json(t.max_budget_nanos);
  o["budget_duration"] = opt_value(t.budget_duration);
  json::object bt;
  bt["max_budget"] = dollars_json(t.max_budget_nanos);
  bt["budget_duration"] = opt_value(t.budget_duration);
  o["litellm_budget_table"] = std::move(bt);
  o["created_at"] = auth::iso8601_utc(t.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(t.updated_at_ms);
  return o;
}

json::object budget_object(const store::BudgetRecord& b) {
  json::object o;
  o["budget_id"] = b.budget_id;
  o["max_budget"] = dollars_json(b.max_budget_nanos);
  o["soft_budget"] = dollars_json(b.soft_budget_nanos);
  o["max_parallel_requests"] = opt_value(b.max_parallel_requests);
  o["tpm_limit"] = opt_value(b.tpm_limit);
  o["rpm_limit"] = opt_value(b.rpm_limit);
  o["model_max_budget"] = nullptr;
  o["budget_duration"] = opt_value(b.budget_duration);
  o["budget_reset_at"] = nullptr;
  o["created_at"] = auth::iso8601_utc(b.created_at_ms);
  o["updated_at"] = auth::iso8601_utc(b.updated_at_ms);
  return o;
}

json::object spend_log_object(const store::SpendLogRow& r) {
  json::object o;
  o["request_id"] = r.request_id;
  o["call_type"] = r.call_type;
  o["api_key"] = r.api_key;
  o["key_alias"] = opt_string(r.key_alias);
  o["spend"] = dollars_json(r.spend_nanos);
  o["total_tokens"] = r.total_tokens;
  o["prompt_tokens"] = r.prompt_tokens;
  o["completion_tokens"] = r.completion_tokens;
  o["cached_tokens"] = r.cached_tokens;
  o["startTime"] = auth::iso8601_utc(r.start_ms);
  o["endTime"] = auth::iso8601_utc(r.end_ms);
  o["request_duration_ms"] = r.request_duration_ms;
  o["completionStartTime"] = opt_time(r.completion_start_ms);
  o["model"] = r.model;
  o["model_id"] = r.model_id;
  o["model_group"] = r.model_group;
  o["requested_model"] = r.requested_model;
  o["custom_llm_provider"] = r.custom_llm_provider;
  o["api_base"] = r.api_base;
  o["user"] = r.user;
  o["metadata"] = json_text(r.metadata, json::object());
  o["cache_hit"] = r.cache_hit ? "True" : "False";  // LiteLLM writes the Python bool as a string
  o["cache_key"] = r.cache_key;
  o["cache_saved_cost"] = admin::dollars_json(r.cache_saved_nanos);
  o["request_tags"] = string_array(r.request_tags);
  o["team_id"] = opt_string(r.team_id);
  o["organization_id"] = opt_string(r.organization_id);
  o["end_user"] = r.end_user;
  o["status"] = r.status;
  o["error_status"] = opt_string(r.error_status);
  o["priced"] = r.priced;
  o["unknown_outcome"] = r.unknown_outcome;
  o["attempts"] = json_text(r.attempts, json::array());
  o["skipped_fallbacks"] = json_text(r.skipped_fallbacks, json::array());
  o["degradation"] = opt_string(r.degradation);
  o["decision"] = r.decision.empty() ? json::value(nullptr) : json_text(r.decision, json::object());
  o["line_items"] = json_text(r.line_items, json::array());
  o["requester_ip_address"] = opt_string(r.requester_ip_address);
  o["session_id"] = opt_string(r.session_id);
  return o;
}

}  // namespace tollgate::api::admin
