// One round of LiteLLM's health checks (pipeline/health_checks.hpp): each deployment's cheap
// request as a pinned run of the attempt loop, all of them concurrently, then LiteLLM's shape.

#include "pipeline/health_checks.hpp"

#include <chrono>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "config/wildcard.hpp"
#include "core/ids.hpp"
#include "pipeline/capture_sink.hpp"

namespace tollgate::pipeline {
namespace net = boost::asio;
namespace json = boost::json;

namespace {

/// Why `d` is not called, or empty when it is.
std::string skip_reason(const config::Deployment& d) {
  if (config::is_wildcard(d.model_name)) return "wildcard deployment: no concrete model to call";
  if (!d.mode.empty() && d.mode != "chat" && d.mode != "completion")
    return "model_info.mode '" + d.mode + "' has no health request in tollgate";
  return {};
}

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// One deployment's check: a run pinned to it, answered into a CaptureSink.
net::awaitable<void> check_one(std::shared_ptr<Services> s, std::size_t dep, EndpointHealth& out,
                               std::function<void()>* cut_slot) {
  const auto& d = s->config->model_list[dep];
  ChatCall call;
  call.model = d.model_name;
  call.call_id = core::new_uuid();
  call.start = s->clock->now();
  call.call_type = "health_check";
  call.allow_degradation = false;
  auto master = std::make_shared<auth::Principal>();
  master->is_master = !s->config->general_settings.master_key.empty();
  call.principal = std::move(master);
  call.body = health_request_body(d);
  (void)read_caller_output(call.body, call.output, call.caller_output_fields);
  call.pin = ChatCall::Pin{dep, d.health_check_timeout.value_or(s->config->general_settings.health_check_timeout)};
  CaptureSink sink(cut_slot);
  const RunOutcome outcome = co_await run_chat(s, std::move(call), sink);
  if (cut_slot) *cut_slot = nullptr;
  out.deployment = dep;
  out.healthy = outcome.served;
  if (!out.healthy) {
    out.error = sink.failure ? sink.failure->message : sink.error;
    if (sink.failure && !sink.failure->code.empty()) out.error += " (" + sink.failure->code + ")";
    if (out.error.empty()) out.error = "no answer (status " + std::to_string(outcome.status) + ")";
  }
}

json::object endpoint_json(const config::Deployment& d) {
  json::object o;
  o["model"] = d.provider_prefix.empty() ? d.upstream_model : d.provider_prefix + "/" + d.upstream_model;
  o["model_name"] = d.model_name;
  o["model_id"] = d.id;
  o["api_base"] = d.api_base.empty() ? json::value(nullptr) : json::value(d.api_base);
  if (!d.api_version.empty()) o["api_version"] = d.api_version;
  if (!d.mode.empty()) o["mode"] = d.mode;
  return o;
}

}  // namespace

bool health_checkable(const config::Deployment& d) { return skip_reason(d).empty(); }

json::object health_request_body(const config::Deployment& d) {
  json::object msg;
  msg["role"] = "user";
  msg["content"] = "ping";
  json::array messages;
  messages.push_back(std::move(msg));
  json::object body;
  body["model"] = d.model_name;
  body["messages"] = std::move(messages);
  body["max_tokens"] = 1;
  return body;
}

net::awaitable<HealthReport> run_health_round(std::shared_ptr<Services> services, std::string group,
                                              std::shared_ptr<HealthRoundControl> control) {
  HealthReport report;
  report.config = services->config;
  const auto& list = services->config->model_list;
  std::vector<std::size_t> targets;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!group.empty() && list[i].model_name != group) continue;
    if (health_checkable(list[i])) targets.push_back(i);
    else report.skipped.push_back(i);
  }
  // The checks run side by side on this executor (one thread): `left` needs no lock.
  struct Round {
    explicit Round(net::any_io_executor ex, std::size_t n) : results(n), left(n), done(ex) {}
    std::vector<EndpointHealth> results;
    std::size_t left;
    net::steady_timer done;
  };
  auto exec = co_await net::this_coro::executor;
  auto round = std::make_shared<Round>(exec, targets.size());
  round->done.expires_at(net::steady_timer::time_point::max());
  for (std::size_t k = 0; k < targets.size(); ++k) {
    std::function<void()>* slot = control ? control->slot() : nullptr;
    net::co_spawn(exec, check_one(services, targets[k], round->results[k], slot), [round](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          spdlog::error("health check failed unexpectedly: {}", ex.what());
        } catch (...) {
          spdlog::error("health check failed with an unknown exception");
        }
      }
      if (--round->left == 0) round->done.cancel();
    });
  }
  while (round->left > 0) (void)co_await round->done.async_wait(net::as_tuple(net::use_awaitable));
  for (std::size_t k = 0; k < targets.size(); ++k) {
    round->results[k].deployment = targets[k];
    report.endpoints.push_back(std::move(round->results[k]));
  }
  report.finished_unix_ms = unix_ms();
  co_return report;
}

std::string health_report_json(const HealthReport& report, std::string_view group) {
  json::array healthy, unhealthy, skipped;
  if (report.config) {
    const auto& list = report.config->model_list;
    for (const auto& e : report.endpoints) {
      if (e.deployment >= list.size() || (!group.empty() && list[e.deployment].model_name != group)) continue;
      auto o = endpoint_json(list[e.deployment]);
      if (e.healthy) {
        healthy.push_back(std::move(o));
      } else {
        o["error"] = e.error;
        unhealthy.push_back(std::move(o));
      }
    }
    for (auto i : report.skipped) {
      if (i >= list.size() || (!group.empty() && list[i].model_name != group)) continue;
      auto o = endpoint_json(list[i]);
      o["reason"] = skip_reason(list[i]);
      skipped.push_back(std::move(o));
    }
  }
  json::object out;
  out["healthy_count"] = healthy.size();
  out["unhealthy_count"] = unhealthy.size();
  out["healthy_endpoints"] = std::move(healthy);
  out["unhealthy_endpoints"] = std::move(unhealthy);
  out["skipped_endpoints"] = std::move(skipped);
  if (report.finished_unix_ms) out["checked_at_ms"] = report.finished_unix_ms;
  return json::serialize(out);
}

}  // namespace tollgate::pipeline
