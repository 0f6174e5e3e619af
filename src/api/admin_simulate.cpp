// POST /tollgate/simulate (docs/admin_api.md): `tollgate simulate --json` from the browser. The
// run itself is AdminDeps::simulate (app/simulate_api.cpp over simulate::run_texts, the CLI's
// function); this handler checks the body and shapes the answer.
#include <exception>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "api/admin_ui.hpp"

namespace tollgate::api::admin {
namespace json = boost::json;

Reply simulate(const Context& c, const Call& q) {
  for (const auto& kv : q.body)
    if (kv.key() != "scenario" && kv.key() != "config")
      return std::unexpected(bad_field(kv.key(), "unknown field: " + std::string(kv.key())));
  const auto* scenario = q.body.if_contains("scenario");
  if (!scenario || scenario->is_null())
    return std::unexpected(bad_field("scenario", "missing required field: scenario (the scenario's YAML text)"));
  if (!scenario->is_string())
    return std::unexpected(bad_field("scenario", "scenario must be a string (the scenario's YAML text)"));
  std::optional<std::string> config;
  if (const auto* v = q.body.if_contains("config"); v && !v->is_null()) {
    if (!v->is_string()) return std::unexpected(bad_field("config", "config must be a string (a config's YAML text)"));
    config = std::string(v->as_string());
  }
  if (!c.deps().simulate)
    return std::unexpected(core::Error::gateway(503, "service_unavailable", "simulation is not available here", "503"));
  SimulateAnswer answer;
  try {
    answer = c.deps().simulate(std::string(scenario->as_string()), config);
  } catch (const std::exception& e) {
    spdlog::error("POST /tollgate/simulate: the simulation failed: {}", e.what());
    return std::unexpected(core::Error::gateway(500, "api_error", std::string("the simulation failed: ") + e.what(), "500"));
  }
  if (answer.report) return json::value(std::move(*answer.report));
  json::array problems;
  std::string message;
  const std::string source = answer.problems.empty() ? "scenario" : answer.problems.front().source;
  for (const auto& p : answer.problems) {
    problems.push_back(json::object{{"source", p.source}, {"path", p.path}, {"line", p.line}, {"message", p.message}});
    if (!message.empty()) message += "; ";
    message += p.source + ": " + (p.path.empty() ? std::string("(document)") : p.path);
    if (p.line > 0) message += " (line " + std::to_string(p.line) + ")";
    message += ": " + p.message;
  }
  q.error_members["problems"] = std::move(problems);
  return std::unexpected(core::Error::caller(400, "invalid_request_error", message.empty() ? "invalid input" : message,
                                             source, source == "config" ? "invalid_config" : "invalid_scenario"));
}

}  // namespace tollgate::api::admin
