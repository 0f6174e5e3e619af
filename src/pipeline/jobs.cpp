#include "pipeline/jobs.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

namespace tollgate::pipeline {
namespace json = boost::json;

namespace {

json::value parsed_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  boost::system::error_code ec;
  auto v = core::parse_json(text, ec);
  return ec ? json::value(text) : v;
}

}  // namespace

std::string job_json(const store::JobRecord& job, std::string_view reason) {
  json::object o;
  o["id"] = job.id;
  o["object"] = "tollgate.job";
  o["status"] = job.status;
  o["model"] = job.model_group;
  o["created"] = job.created_ms / 1000;
  o["updated"] = job.updated_ms / 1000;
  o["attempts"] = job.attempts;
  json::value err = parsed_or_null(job.error);
  if (err.is_object())
    if (auto* inner = err.as_object().if_contains("error")) err = *inner;
  o["result"] = parsed_or_null(job.result);
  o["error"] = std::move(err);
  o["request_id"] = job.request_id.empty() ? json::value(nullptr) : json::value(job.request_id);
  o["url"] = "/v1/tollgate/jobs/" + job.id;
  if (!reason.empty()) {
    o["degradation"] = "deferred";
    o["reason"] = reason;
  }
  return json::serialize(o);
}

}  // namespace tollgate::pipeline
