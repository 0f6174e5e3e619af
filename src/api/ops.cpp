#include "api/ops.hpp"

#include <boost/json.hpp>

#include "api/caller.hpp"
#include "api/errors.hpp"
#include "api/sinks.hpp"
#include "auth/credentials.hpp"
#include "telemetry/process_usage.hpp"

namespace tollgate::api {
namespace json = boost::json;

namespace {

/// nullopt when the caller presented the master key, else the 401/403 to send.
std::optional<http::Response> require_master(const http::Request& req, const pipeline::Services& s,
                                             const auth::IdentityIndex& ids) {
  auto p = authenticate(req, s.config->general_settings.master_key, ids);
  if (!p) return json_response(p.error().status, openai_error_json(p.error()));
  if (!(*p)->is_master)
    return json_response(403, openai_error_json(core::Error::caller(403, "auth_error", "the master key is required")));
  return std::nullopt;
}

http::Response stats(const pipeline::Services& s) {
  json::object o;
  if (s.store) {
    // The health probe first: it may wait for the writer (a write behind its queue), and the
    // writer's figures read after it include whatever that wait saw.
    o["store_writable"] = s.store->health().writable;
    const auto st = s.store->writer_stats();
    json::object g;
    g["batches"] = st.batches;
    g["records"] = st.records;
    g["ledger_records"] = st.ledger_records;
    g["spend_rows"] = st.spend_rows;
    g["failed_batches"] = st.failed_batches;
    g["failed_ledger_records"] = st.failed_ledger_records;
    g["dropped_spend_rows"] = st.dropped_spend_rows;
    g["max_batch"] = st.max_batch;
    g["p50_us"] = st.p50_us;
    g["p99_us"] = st.p99_us;
    g["max_us"] = st.max_us;
    o["group_commit"] = std::move(g);
  }
  {
    const auto u = telemetry::read_process_usage();
    json::object p;
    p["rss_bytes"] = u.rss_bytes;
    p["open_fds"] = u.open_fds;
    p["heap_in_use_bytes"] = u.heap_in_use_bytes;
    p["heap_free_bytes"] = u.heap_free_bytes;
    o["process"] = std::move(p);
  }
  if (s.connection_stats) {
    const auto c = s.connection_stats();
    json::object g;
    g["open"] = c.open;
    g["limit"] = c.limit;
    g["accepted"] = c.accepted;
    g["evicted"] = c.evicted;
    g["refused_per_ip"] = c.refused_per_ip;
    g["accept_errors"] = c.accept_errors;
    g["backpressure"] = c.backpressure;
    o["connections"] = std::move(g);
  }
  return json_response(200, json::serialize(o));
}

http::Response circuits(const pipeline::Services& s) {
  json::array deployments, providers, features;
  for (const auto& c : s.circuits->snapshot()) {
    json::object o;
    o["id"] = c.id;
    o["state"] = policy::to_string(c.state);
    o["consecutive_failures"] = c.consecutive_failures;
    o["window_requests"] = c.window_requests;
    o["window_failures"] = c.window_failures;
    o["retry_in_ms"] = c.retry_in_ms;
    o["reason"] = c.reason;
    o["opened_total"] = c.opened_total;
    (c.scope == "deployment" ? deployments : c.scope == "provider" ? providers : features).push_back(std::move(o));
  }
  json::object o;
  o["deployments"] = std::move(deployments);
  o["providers"] = std::move(providers);
  o["features"] = std::move(features);
  return json_response(200, json::serialize(o));
}

http::Response alerts(const pipeline::Services& s) {
  json::array list = alerts_json(s);
  json::object counts;
  if (s.alerts)
    for (const auto& [k, n] : s.alerts->counts()) counts[k] = n;
  json::object o;
  o["alerts"] = std::move(list);
  o["counts"] = std::move(counts);
  return json_response(200, json::serialize(o));
}

}  // namespace

json::array alerts_json(const pipeline::Services& s) {
  json::array list;
  if (s.alerts)
    for (const auto& a : s.alerts->recent()) {
      json::object o;
      o["kind"] = a.kind;
      o["subject"] = a.subject;
      o["message"] = a.message;
      o["at_ms"] = a.at_ms;
      o["repeats"] = a.repeats;
      list.push_back(std::move(o));
    }
  return list;
}

bool is_ops_path(std::string_view path) {
  return path == "/tollgate/stats" || path == "/tollgate/circuits" || path == "/tollgate/alerts" || path == "/metrics" ||
         path == "/metrics/";
}

http::Response ops_response(const http::Request& req, std::string_view path, const pipeline::Services& s,
                            const auth::IdentityIndex& ids) {
  if (path == "/metrics" || path == "/metrics/") {
    http::Response res{boost::beast::http::status::ok, 11};
    res.set(boost::beast::http::field::content_type, std::string(telemetry::Registry::content_type));
    res.body() = s.metrics ? s.metrics->render() : std::string();
    res.prepare_payload();
    return res;
  }
  if (auto denied = require_master(req, s, ids)) return std::move(*denied);
  if (path == "/tollgate/circuits") return circuits(s);
  if (path == "/tollgate/alerts") return alerts(s);
  return stats(s);
}

}  // namespace tollgate::api
