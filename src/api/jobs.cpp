#include "api/jobs.hpp"

#include <boost/json.hpp>

#include "api/caller.hpp"
#include "api/errors.hpp"
#include "api/sinks.hpp"
#include "auth/credentials.hpp"

namespace tollgate::api {
namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

http::Response not_found(std::string_view id) {
  return json_response(404, openai_error_json(core::Error::caller(404, "invalid_request_error",
                                                                  "no job with id '" + std::string(id) + "'", "id",
                                                                  "job_not_found")));
}

}  // namespace

http::Response job_response(const http::Request& req, std::string_view id, const pipeline::Services& s,
                            const auth::IdentityIndex& ids) {
  if (req.method() != bhttp::verb::get) {
    auto res = json_response(405, openai_error_json(core::Error::caller(405, "invalid_request_error",
                                                                        "method not allowed on /v1/tollgate/jobs/{id}")));
    res.set(bhttp::field::allow, "GET");
    return res;
  }
  auto p = authenticate(req, s.config->general_settings.master_key, ids);
  if (!p) return json_response(p.error().status, openai_error_json(p.error()));
  if (!s.store || id.empty() || id.find('/') != std::string_view::npos) return not_found(id);
  auto job = s.store->get_job(std::string(id));
  if (!job) {
    if (job.error().code == store::StoreErrorCode::not_found) return not_found(id);
    return json_response(503, openai_error_json(core::Error::gateway(503, "api_error",
                                                                     "the job store cannot be read: " + job.error().message,
                                                                     "store_unavailable")));
  }
  const auto& principal = **p;
  const bool owner = principal.is_master || (principal.key && principal.key->token_hash == job->api_key) ||
                     (job->api_key.empty() && s.config->general_settings.master_key.empty());
  if (!owner) return not_found(id);
  return json_response(200, pipeline::job_json(*job));
}

}  // namespace tollgate::api
