#include "pipeline/run_spans.hpp"

#include <boost/url/parse.hpp>

#include "budget/money.hpp"

namespace tollgate::pipeline {
namespace {

using telemetry::Span;

template <class T>
void put(telemetry::Attributes& a, std::string key, T&& v) {
  a.emplace_back(std::piecewise_construct, std::forward_as_tuple(std::move(key)),
                 std::forward_as_tuple(std::in_place_type<std::decay_t<T>>, std::forward<T>(v)));
}

/// server.address and server.port of a deployment's api_base.
void server_attributes(telemetry::Attributes& a, const config::Deployment& d) {
  auto u = boost::urls::parse_uri(d.api_base);
  if (!u || u->host().empty()) return;
  put(a, "server.address", std::string(u->host()));
  std::int64_t port = u->has_port() ? static_cast<std::int64_t>(u->port_number()) : u->scheme() == "https" ? 443 : 80;
  put(a, "server.port", port);
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

std::vector<Span> run_spans(const RunState& st, bool ok, std::optional<int> status) {
  std::vector<Span> out;
  const auto end = wall_ns();
  const auto& cfg = st.cfg;
  Span op;
  op.trace_id = st.trace_id;
  op.span_id = st.span_id;
  if (st.call.parent_trace) {
    op.parent_span_id = st.call.parent_trace->span_id;
    op.trace_state = st.call.parent_trace->tracestate;
  }
  op.name = "chat " + st.call.model;
  op.kind = Span::Kind::client;
  op.start_unix_nano = st.start_unix_nano;
  op.end_unix_nano = end;
  auto& a = op.attributes;
  put(a, "gen_ai.operation.name", std::string("chat"));
  put(a, "gen_ai.request.model", st.call.model);
  put(a, "gen_ai.request.stream", st.call.stream);
  if (st.call.output.max_tokens) put(a, "gen_ai.request.max_tokens", *st.call.output.max_tokens);
  const auto served = ok ? st.served_dep : std::nullopt;
  const auto shown = served ? served : st.last_dep;
  if (shown) {
    const auto& d = cfg.model_list[*shown];
    put(a, "gen_ai.provider.name", genai_provider_name(d.provider_prefix));
    server_attributes(a, d);
  }
  if (served) put(a, "gen_ai.response.model", cfg.model_list[*served].upstream_model);
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
  put(a, "tollgate.outcome", st.trace.outcome);
  put(a, "tollgate.attempts", static_cast<std::int64_t>(st.attempts.size()));
  put(a, "tollgate.retries", static_cast<std::int64_t>(st.trace.retries_used));
  put(a, "tollgate.fallbacks", static_cast<std::int64_t>(st.trace.fallbacks_used));
  if (!failure.empty()) put(a, "tollgate.failure_class", failure);
  if (served && cfg.model_list[*served].model_name != st.call.model) {
    const auto& d = cfg.model_list[*served];
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
  if (!skipped.empty()) put(a, "tollgate.skipped", std::move(skipped));
  if (!refusals.empty()) put(a, "tollgate.budget.refused_by", std::move(refusals));
  if (st.bound.reduced && st.bound.tokens) {
    put(a, "tollgate.output_capped", *st.bound.tokens);
    if (!st.bound.by.empty()) put(a, "tollgate.output_capped_by", st.bound.by);
  }
  out.push_back(std::move(op));

  // One child per attempt, with its trace step (the steps list attempts in the same order).
  std::size_t step = 0;
  for (const auto& at : st.attempts) {
    while (step < st.trace.steps.size() && st.trace.steps[step].kind != TraceStep::Kind::attempt) ++step;
    const TraceStep* ts = step < st.trace.steps.size() ? &st.trace.steps[step++] : nullptr;
    const auto& d = cfg.model_list[at.deployment];
    Span s;
    s.trace_id = st.trace_id;
    s.span_id = at.span_id;
    s.parent_span_id = st.span_id;
    s.name = "chat " + d.upstream_model;
    s.kind = Span::Kind::client;
    s.start_unix_nano = at.start_unix_nano;
    s.end_unix_nano = at.end_unix_nano;
    auto& b = s.attributes;
    put(b, "gen_ai.operation.name", std::string("chat"));
    put(b, "gen_ai.provider.name", genai_provider_name(d.provider_prefix));
    put(b, "gen_ai.request.model", d.upstream_model);
    server_attributes(b, d);
    if (at.status != 0) put(b, "http.response.status_code", static_cast<std::int64_t>(at.status));
    put(b, "tollgate.model_group", at.group);
    put(b, "tollgate.deployment", d.id);
    if (at.failure) {
      s.status = Span::Status::error;
      put(b, "error.type", std::string(policy::to_string(*at.failure)));
      put(b, "tollgate.failure_class", std::string(policy::to_string(*at.failure)));
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
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tollgate::pipeline
