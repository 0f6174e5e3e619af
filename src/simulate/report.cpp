#include "simulate/report.hpp"

#include <boost/json.hpp>

#include "pipeline/trace.hpp"

namespace tollgate::simulate {

namespace json = boost::json;

namespace {

/// Headers that describe the simulator's own wiring rather than the policy.
bool reported_header(const std::string& name) { return name != "x-litellm-model-api-base"; }

std::string indent(const std::string& text, const std::string& pad) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out += pad + text.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  return out;
}

std::string seconds(std::int64_t ms) {
  std::string s = std::to_string(ms / 1000) + "." + std::to_string((ms % 1000) / 100);
  return s + " s";
}

std::string circuit_line(const policy::CircuitView& c) {
  std::string line = c.scope + " " + c.id + ": " + std::string(policy::to_string(c.state));
  std::vector<std::string> facts;
  if (c.state == policy::CircuitState::open) facts.push_back("half-open in " + std::to_string(c.retry_in_ms) + " ms");
  if (c.consecutive_failures > 0) facts.push_back(std::to_string(c.consecutive_failures) + " consecutive failure(s)");
  if (c.opened_total > 0)
    facts.push_back("opened " + std::to_string(c.opened_total) + "x, last because: " + c.reason);
  if (!facts.empty()) {
    line += " (";
    for (std::size_t i = 0; i < facts.size(); ++i) line += (i ? "; " : "") + facts[i];
    line += ")";
  }
  return line;
}

json::value nullable(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }

}  // namespace

std::string render_text(const SimulationResult& r) {
  std::string out;
  out += "scenario: " + (r.scenario_name.empty() ? std::string("(unnamed)") : r.scenario_name) + " (" + r.scenario_path + ")\n";
  if (!r.description.empty()) out += indent(r.description, "  ");
  out += "config: " + r.config_path + ", seed " + std::to_string(r.seed) + "\n";
  for (const auto& q : r.requests) {
    out += "\n[" + q.request_id + "] " + q.model;
    if (q.repeat > 1) out += " (" + std::to_string(q.repetition) + "/" + std::to_string(q.repeat) + ")";
    if (!q.name.empty()) out += " \"" + q.name + "\"";
    out += " at +" + std::to_string(q.started_ms) + " ms\n";
    if (!q.decision.empty()) out += indent(pipeline::explain_text(q.decision), "  ");
    std::string result = "  => " + std::to_string(q.status);
    if (q.category == "degraded") result += " degraded (" + q.degradation + ")";
    else if (q.category == "served") result += " served";
    else result += " failed";
    if (q.error && q.category != "served") {
      result += ": " + (q.error->code.empty() ? q.error->type : q.error->code);
      result += " \"" + q.error->message + "\"";
    }
    if (q.streamed) result += " [stream]";
    out += result + "\n";
    out += "     " + std::to_string(q.virtual_ms) + " ms virtual, " + std::to_string(q.attempts) +
           " upstream attempt(s), reserved $" + budget::format_dollars(q.reserved) + ", charged $" +
           budget::format_dollars(q.charged) + "\n";
    for (const auto& [k, v] : q.headers)
      if (k == "x-tollgate-degradation" || k == "x-tollgate-degradation-caveat" || k == "x-tollgate-policy" ||
          k == "x-tollgate-skipped-fallbacks" || k == "retry-after" || k == "location")
        out += "  " + k + ": " + v + "\n";
    for (const auto& c : q.circuit_changes) out += "  circuit " + c + "\n";
    for (const auto& a : q.alerts) out += "  alert " + a + "\n";
  }
  const Summary& s = r.summary;
  out += "\nsummary: " + std::to_string(s.requests) + " request(s): " + std::to_string(s.served) + " served, " +
         std::to_string(s.degraded) + " degraded, " + std::to_string(s.failed) + " failed; " +
         std::to_string(s.attempts) + " upstream attempt(s) (" + std::to_string(s.retries) + " retries, " +
         std::to_string(s.fallbacks) + " fallbacks); " + seconds(s.virtual_ms) + " virtual; reserved $" +
         budget::format_dollars(s.reserved) + ", charged $" + budget::format_dollars(s.charged);
  if (s.deferred_jobs > 0) out += "; " + std::to_string(s.deferred_jobs) + " deferred job(s) queued";
  out += "\ncircuits at the end:\n";
  for (const auto& c : r.circuits) out += "  " + circuit_line(c) + "\n";
  return out;
}

json::object render_json(const SimulationResult& r) {
  json::object o;
  json::object sc;
  sc["name"] = r.scenario_name;
  sc["description"] = r.description;
  sc["path"] = r.scenario_path;
  o["scenario"] = std::move(sc);
  o["config"] = r.config_path;
  o["seed"] = r.seed;
  json::array reqs;
  for (const auto& q : r.requests) {
    json::object j;
    j["id"] = q.request_id;
    j["entry"] = q.entry;
    j["repetition"] = q.repetition;
    j["repeat"] = q.repeat;
    j["name"] = nullable(q.name);
    j["model"] = q.model;
    j["started_ms"] = q.started_ms;
    j["virtual_ms"] = q.virtual_ms;
    j["status"] = q.status;
    j["category"] = q.category;
    j["outcome"] = q.outcome;
    j["degradation"] = nullable(q.degradation);
    j["served_by"] = nullable(q.served_by);
    j["streamed"] = q.streamed;
    j["attempts"] = q.attempts;
    j["retries"] = q.retries;
    j["fallbacks"] = q.fallbacks;
    j["reserved"] = budget::format_dollars(q.reserved);
    j["charged"] = budget::format_dollars(q.charged);
    if (q.error) {
      json::object e;
      e["status"] = q.error->status;
      e["type"] = q.error->type;
      e["code"] = nullable(q.error->code);
      e["message"] = q.error->message;
      j["error"] = std::move(e);
    } else {
      j["error"] = nullptr;
    }
    json::object h;
    for (const auto& [k, v] : q.headers)
      if (reported_header(k)) h[k] = v;
    j["headers"] = std::move(h);
    json::array up;
    for (const auto& c : q.calls) {
      json::object u;
      u["deployment"] = c.deployment_id;
      u["script"] = c.script;
      u["status"] = c.status;
      u["fault"] = nullable(c.fault);
      up.push_back(std::move(u));
    }
    j["upstream"] = std::move(up);
    json::array cc;
    for (const auto& c : q.circuit_changes) cc.emplace_back(c);
    j["circuit_changes"] = std::move(cc);
    json::array al;
    for (const auto& a : q.alerts) al.emplace_back(a);
    j["alerts"] = std::move(al);
    j["decision"] = q.decision.empty() ? json::value(nullptr) : json::value(q.decision);
    reqs.push_back(std::move(j));
  }
  o["requests"] = std::move(reqs);
  const Summary& s = r.summary;
  json::object sm;
  sm["requests"] = s.requests;
  sm["served"] = s.served;
  sm["degraded"] = s.degraded;
  sm["failed"] = s.failed;
  sm["attempts"] = s.attempts;
  sm["retries"] = s.retries;
  sm["fallbacks"] = s.fallbacks;
  sm["virtual_ms"] = s.virtual_ms;
  sm["reserved"] = budget::format_dollars(s.reserved);
  sm["charged"] = budget::format_dollars(s.charged);
  sm["deferred_jobs"] = s.deferred_jobs;
  o["summary"] = std::move(sm);
  json::array cs;
  for (const auto& c : r.circuits) {
    json::object j;
    j["scope"] = c.scope;
    j["id"] = c.id;
    j["state"] = std::string(policy::to_string(c.state));
    j["consecutive_failures"] = c.consecutive_failures;
    j["retry_in_ms"] = c.retry_in_ms;
    j["opened_total"] = c.opened_total;
    j["reason"] = nullable(c.reason);
    cs.push_back(std::move(j));
  }
  o["circuits"] = std::move(cs);
  return o;
}

namespace {

void pretty(const json::value& v, std::string& out, int depth) {
  const std::string pad(static_cast<std::size_t>(depth + 1) * 2, ' ');
  const std::string close_pad(static_cast<std::size_t>(depth) * 2, ' ');
  if (v.is_object()) {
    const auto& o = v.as_object();
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    bool first = true;
    for (const auto& kv : o) {
      if (!first) out += ",\n";
      first = false;
      out += pad + json::serialize(json::value(kv.key())) + ": ";
      pretty(kv.value(), out, depth + 1);
    }
    out += "\n" + close_pad + "}";
  } else if (v.is_array()) {
    const auto& a = v.as_array();
    if (a.empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (i) out += ",\n";
      out += pad;
      pretty(a[i], out, depth + 1);
    }
    out += "\n" + close_pad + "]";
  } else {
    out += json::serialize(v);
  }
}

}  // namespace

std::string pretty_json(const json::value& v) {
  std::string out;
  pretty(v, out, 0);
  out += "\n";
  return out;
}

}  // namespace tollgate::simulate
