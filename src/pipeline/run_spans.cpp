#include "pipeline/run_spans.hpp"

#include <boost/url/parse.hpp>
#include <unordered_map>

#include "budget/money.hpp"
#include "pipeline/response_facts.hpp"

namespace tollgate::pipeline {
namespace {

using telemetry::Span;

/// One attribute, typed by its C++ type: bool, integer, floating point, string list or string.
template <class T>
void put(telemetry::Attributes& a, std::string_view key, const T& v) {
  if constexpr (std::is_same_v<T, bool>) a.add_bool(key, v);
  else if constexpr (std::is_integral_v<T>) a.add_int(key, static_cast<std::int64_t>(v));
  else if constexpr (std::is_floating_point_v<T>) a.add_double(key, v);
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) a.add_strings(key, v);
  else a.add_string(key, std::string_view(v));
}

/// server.address and server.port of a deployment's api_base, parsed once per base URL and
/// thread (a span is rendered for every attempt).
void server_attributes(telemetry::Attributes& a, const config::Deployment& d) {
  struct Server {
    std::string address;
    std::int64_t port = 0;
  };
  thread_local std::unordered_map<std::string, Server> seen;
  auto it = seen.find(d.api_base);
  if (it == seen.end()) {
    if (seen.size() >= 1024) seen.clear();  // bounded: configs are reloaded, deployments change
    Server s;
    if (auto u = boost::urls::parse_uri(d.api_base); u && !u->host().empty()) {
      s.address = std::string(u->host());
      s.port = u->has_port() ? static_cast<std::int64_t>(u->port_number()) : u->scheme() == "https" ? 443 : 80;
    }
    it = seen.emplace(d.api_base, std::move(s)).first;
  }
  if (it->second.address.empty()) return;
  put(a, "server.address", it->second.address);
  put(a, "server.port", it->second.port);
}

}  // namespace

std::string genai_provider_name(const std::string& p) {
  if (p == "azure") return "azure.ai.openai";
  if (p == "azure_ai") return "azure.ai.inference";
  if (p == "bedrock") return "aws.bedrock";
  if (p == "gemini") return "gcp.gemini";
  if (p == "vertex_ai") return "gcp.vertex_ai";
  if (p == "mistral") return "mistral_ai";
  return p;
}

void run_spans(const RunState& st, bool ok, std::optional<int> status, std::vector<Span>& out) {
  out.resize(1 + st.attempts.size());
  for (auto& s : out) s.clear();
  const auto end = wall_ns();
  const auto& cfg = st.cfg;
  Span& op = out[0];
  op.trace_id = st.trace_id;
  op.span_id = st.span_id;
  if (st.call.parent_trace) {
    op.parent_span_id = st.call.parent_trace->span_id;
    op.trace_state = st.call.parent_trace->tracestate;
  }
  op.name.append("chat ").append(st.call.model);
  op.kind = Span::Kind::client;
  op.start_unix_nano = st.start_unix_nano;
  op.end_unix_nano = end;
  auto& a = op.attributes;
  put(a, "gen_ai.operation.name", "chat");
  put(a, "gen_ai.request.model", st.call.model);
  put(a, "gen_ai.request.stream", st.call.stream);
  if (st.call.output.max_tokens) put(a, "gen_ai.request.max_tokens", *st.call.output.max_tokens);
  const auto served = ok ? st.served_dep : std::nullopt;
  const auto shown = served ? served : st.last_dep;
  if (shown) {
    const auto& d = st.deployment(*shown);
    put(a, "gen_ai.provider.name", genai_provider_name(d.provider_prefix));
    server_attributes(a, d);
  }
  if (served) {
    put(a, "gen_ai.response.model", st.deployment(*served).upstream_model);
    if (!st.response_id.empty()) put(a, "gen_ai.response.id", st.response_id);
    if (!st.finish_reasons.empty()) put(a, "gen_ai.response.finish_reasons", st.finish_reasons);
  }
  // Message text only when the operator opted in (it may hold personal data).
  if (cfg.tollgate_settings.otel.capture_content) {
    put(a, "gen_ai.input.messages", input_messages_json(st.call.body));
    if (served) put(a, "gen_ai.output.messages", output_messages_json(st));
  }
  if (st.usage.reported) {
    put(a, "gen_ai.usage.input_tokens", st.usage.prompt_tokens);
    put(a, "gen_ai.usage.output_tokens", st.usage.completion_tokens);
    if (st.usage.cached_tokens > 0) put(a, "gen_ai.usage.cache_read.input_tokens", st.usage.cached_tokens);
  }
  const std::string failure = st.last_failure_class();
  if (!ok) {
    op.status = Span::Status::error;
    const std::string type = !failure.empty() ? failure : status ? std::to_string(*status) : std::string("_OTHER");
    put(a, "error.type", type);
    op.status_message = st.trace.outcome + (status ? " " + std::to_string(*status) : std::string());
  }
  // Tollgate's policy vocabulary.
  put(a, "tollgate.request_id", st.call.call_id);
  if (st.cache_looked_up) {
    put(a, "tollgate.cache_hit", st.cache_hit);
    put(a, "tollgate.cache_key", st.cache_key);
    if (st.cache_hit) put(a, "tollgate.cache_saved_cost", budget::format_dollars(st.cache_saved));
  }
  put(a, "tollgate.outcome", st.trace.outcome);
  put(a, "tollgate.attempts", static_cast<std::int64_t>(st.attempts.size()));
  put(a, "tollgate.retries", static_cast<std::int64_t>(st.trace.retries_used));
  put(a, "tollgate.fallbacks", static_cast<std::int64_t>(st.trace.fallbacks_used));
  if (!failure.empty()) put(a, "tollgate.failure_class", failure);
  if (served && st.deployment(*served).model_name != st.call.model) {
    const auto& d = st.deployment(*served);
    put(a, "tollgate.fallback.model", d.model_name);
    put(a, "tollgate.fallback.provider", genai_provider_name(d.provider_prefix));
  }
  if (!st.trace.degradation.empty()) put(a, "tollgate.degradation", st.trace.degradation);
  put(a, "tollgate.latency_budget_ms", static_cast<std::int64_t>(st.trace.budget.deadline.count()));
  put(a, "tollgate.latency_spent_ms", st.trace.elapsed_ms);
  if (st.trace.budget.max_request_cost < budget::kMaxNanos)
    put(a, "tollgate.cost_budget", budget::format_dollars(st.trace.budget.max_request_cost));
  put(a, "tollgate.cost.reserved", budget::format_dollars(st.trace.reserved_total));
  put(a, "tollgate.cost.charged", budget::format_dollars(st.cost));
  if (st.unknown) put(a, "tollgate.cost.unknown_outcome", true);
  if (st.unpriced) put(a, "tollgate.cost.unpriced", true);
  std::vector<std::string> skipped, refusals;
  for (const auto& [g, why] : st.skipped) skipped.push_back(g + ": " + why);
  for (const auto& s : st.trace.steps)
    if ((s.kind == TraceStep::Kind::skip || s.kind == TraceStep::Kind::stop) && s.reason.starts_with("budget_exceeded"))
      refusals.push_back(s.reason.substr(16));
  if (!skipped.empty()) put(a, "tollgate.skipped", skipped);
  if (!refusals.empty()) put(a, "tollgate.budget.refused_by", refusals);
  if (st.bound.reduced && st.bound.tokens) {
    put(a, "tollgate.output_capped", *st.bound.tokens);
    if (!st.bound.by.empty()) put(a, "tollgate.output_capped_by", st.bound.by);
  }

  // One child per attempt, with its trace step (the steps list attempts in the same order).
  std::size_t step = 0;
  for (std::size_t i = 0; i < st.attempts.size(); ++i) {
    const auto& at = st.attempts[i];
    while (step < st.trace.steps.size() && st.trace.steps[step].kind != TraceStep::Kind::attempt) ++step;
    const TraceStep* ts = step < st.trace.steps.size() ? &st.trace.steps[step++] : nullptr;
    const auto& d = st.deployment(at.deployment);
    Span& s = out[1 + i];
    s.trace_id = st.trace_id;
    s.span_id = at.span_id;
    s.parent_span_id = st.span_id;
    s.name.append("chat ").append(d.upstream_model);
    s.kind = Span::Kind::client;
    s.start_unix_nano = at.start_unix_nano;
    s.end_unix_nano = at.end_unix_nano;
    auto& b = s.attributes;
    put(b, "gen_ai.operation.name", "chat");
    put(b, "gen_ai.provider.name", genai_provider_name(d.provider_prefix));
    put(b, "gen_ai.request.model", d.upstream_model);
    server_attributes(b, d);
    if (at.status != 0) put(b, "http.response.status_code", static_cast<std::int64_t>(at.status));
    put(b, "tollgate.model_group", at.group);
    put(b, "tollgate.deployment", d.id);
    if (at.failure) {
      s.status = Span::Status::error;
      put(b, "error.type", policy::to_string(*at.failure));
      put(b, "tollgate.failure_class", policy::to_string(*at.failure));
    }
    if (ts) {
      if (!ts->action.empty()) put(b, "tollgate.action", ts->action);
      if (!ts->decision.empty()) put(b, "tollgate.decision", ts->decision);
      if (!ts->circuit.empty()) put(b, "tollgate.circuit_state", ts->circuit);
      put(b, "tollgate.cost.reserved", budget::format_dollars(ts->reserved));
      put(b, "tollgate.cost.charged", budget::format_dollars(ts->charged));
      if (!ts->evidence.empty()) put(b, "tollgate.evidence", ts->evidence);
      if (ts->output_bound > 0) put(b, "gen_ai.request.max_tokens", ts->output_bound);
    }
  }
}

}  // namespace tollgate::pipeline
