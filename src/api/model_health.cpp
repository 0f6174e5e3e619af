#include "api/model_health.hpp"

#include "api/admin_fields.hpp"
#include "api/errors.hpp"
#include "api/sinks.hpp"

namespace tollgate::api {
namespace net = boost::asio;

net::awaitable<void> model_health(std::shared_ptr<pipeline::Services> services, const http::Request& req,
                                  http::ResponseWriter& w, const auth::Principal& principal,
                                  std::shared_ptr<pipeline::HealthMonitor> monitor) {
  const auto& cfg = *services->config;
  if (!principal.is_master && !cfg.general_settings.master_key.empty()) {
    auto e = core::Error::caller(401, "auth_error", "GET /health needs the master key", {}, "not_master_key");
    co_await w.send(json_response(401, openai_error_json(e)));
    co_return;
  }
  const std::string_view target(req.target().data(), req.target().size());
  std::string group = admin::query_param(target, "model").value_or("");
  if (!group.empty()) {
    group = services->groups->resolve_alias(group);
    if (!services->groups->contains(group)) {
      auto e = core::Error::caller(400, "invalid_request_error", "unknown model group '" + group + "'", "model",
                                   "model_not_found");
      co_await w.send(json_response(400, openai_error_json(e)));
      co_return;
    }
  }
  if (monitor && cfg.general_settings.background_health_checks) {
    if (auto last = monitor->last()) {
      co_await w.send(json_response(200, pipeline::health_report_json(*last, group)));
      co_return;
    }
  }
  auto control = std::make_shared<pipeline::HealthRoundControl>();
  w.on_shutdown([control] { control->cut(); });
  auto report = co_await pipeline::run_health_round(services, group, control);
  w.on_shutdown(nullptr);
  co_await w.send(json_response(200, pipeline::health_report_json(report, group)));
}

}  // namespace tollgate::api
