#include "pipeline/compat_metrics.hpp"

#include "pipeline/run_spans.hpp"

#include <algorithm>
#include <array>

namespace tollgate::pipeline {
namespace {

// LiteLLM's LATENCY_BUCKETS, seconds (+Inf implicit).
const std::vector<double> kLatencyBuckets{0.005, 0.00625, 0.0125, 0.025, 0.05, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0,
                                          3.5,   4.0,     4.5,    5.0,   5.5,  6.0, 6.5, 7.0, 7.5, 8.0, 8.5, 9.0,
                                          9.5,   10.0,    15.0,   20.0,  25.0, 30.0, 60.0, 120.0, 180.0, 240.0, 300.0};

// GenAI semantic conventions: gen_ai.client.operation.duration (s) and gen_ai.client.token.usage.
std::vector<double> doubling(double first, int n, double factor) {
  std::vector<double> out;
  for (double v = first; static_cast<int>(out.size()) < n; v *= factor) out.push_back(v);
  return out;
}

/// The caller's labels, as LiteLLM names them: views of the principal's records.
struct Caller {
  std::string_view hashed_api_key, api_key_alias, team, team_alias, user;
};

Caller caller_of(const auth::Principal& p) {
  Caller c;
  if (p.key) {
    c.hashed_api_key = p.key->token_hash;
    c.api_key_alias = p.key->key_alias;
    c.team = p.key->team_id;
    c.user = p.key->user_id;
  }
  if (p.team) c.team_alias = p.team->team_alias;
  return c;
}

/// The caller's five labels followed by `more`, as views (the families' lookups copy nothing).
template <std::size_t N>
std::array<std::string_view, 5 + N> caller_labels(const Caller& who, const std::array<std::string_view, N>& more) {
  std::array<std::string_view, 5 + N> v{who.hashed_api_key, who.api_key_alias, who.team, who.team_alias, who.user};
  std::copy(more.begin(), more.end(), v.begin() + 5);
  return v;
}

const std::vector<std::string> kCallerLabels{"hashed_api_key", "api_key_alias", "team", "team_alias", "user"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

double dollars(budget::Nanos n) { return static_cast<double>(n) / 1e9; }

}  // namespace

void register_compat_metrics(Services& s) {
  auto& m = *s.metrics;
  auto& c = s.compat_metrics;
  const auto caller_model = with(kCallerLabels, {"model"});
  const auto caller_requested = with(kCallerLabels, {"requested_model"});
  const auto tokens = with(kCallerLabels, {"model", "requested_model"});
  c.requests = &m.counter("litellm_requests_metric_total", "Requests by key, team, user and served model", caller_model);
  c.proxy_requests = &m.counter("litellm_proxy_total_requests_metric_total", "Requests made to the proxy, by status",
                                with(caller_requested, {"status_code"}));
  c.proxy_failed = &m.counter("litellm_proxy_failed_requests_metric_total", "Requests that failed, by status and class",
                              with(caller_requested, {"exception_status", "exception_class"}));
  c.spend = &m.counter("litellm_spend_metric_total", "Spend in USD, as the ledger settled it", caller_model);
  c.input_tokens = &m.counter("litellm_input_tokens_metric_total", "Input tokens", tokens);
  c.output_tokens = &m.counter("litellm_output_tokens_metric_total", "Output tokens", tokens);
  c.total_tokens = &m.counter("litellm_total_tokens_metric_total", "Input plus output tokens", tokens);
  const std::vector<std::string> dep{"litellm_model_name", "model_id", "api_base", "api_provider", "requested_model",
                                     "hashed_api_key", "api_key_alias", "team", "team_alias"};
  c.deployment_success = &m.counter("litellm_deployment_success_responses_total", "Upstream attempts that succeeded", dep);
  c.deployment_failure = &m.counter("litellm_deployment_failure_responses_total", "Upstream attempts that failed",
                                    with(dep, {"exception_status", "exception_class"}));
  c.deployment_total = &m.counter("litellm_deployment_total_requests_total", "Upstream attempts", dep);
  const std::vector<std::string> fb{"requested_model", "fallback_model", "hashed_api_key", "api_key_alias",
                                    "team", "team_alias", "exception_status", "exception_class"};
  c.fallback_ok = &m.counter("litellm_deployment_successful_fallbacks_total", "Fallbacks that served the request", fb);
  c.fallback_failed = &m.counter("litellm_deployment_failed_fallbacks_total", "Fallbacks that did not", fb);
  c.total_latency = &m.histogram("litellm_request_total_latency_metric", "Whole-request latency, seconds",
                                 with(kCallerLabels, {"requested_model", "model"}), kLatencyBuckets);
  c.api_latency = &m.histogram("litellm_llm_api_latency_metric", "Upstream attempt latency, seconds",
                               with(kCallerLabels, {"requested_model", "model"}), kLatencyBuckets);
  c.overhead = &m.histogram("litellm_overhead_latency_metric", "Time the gateway added to a request, seconds",
                            {"model_group", "api_provider", "model_id"}, kLatencyBuckets);
  c.ttft = &m.histogram("litellm_llm_api_time_to_first_token_metric", "Time to the first streamed byte, seconds",
                        with(kCallerLabels, {"requested_model", "model"}), kLatencyBuckets);
  c.key_remaining = &m.gauge("litellm_remaining_api_key_budget_metric", "Key budget left, USD", {"hashed_api_key", "api_key_alias"});
  c.key_max = &m.gauge("litellm_api_key_max_budget_metric", "Key max budget, USD", {"hashed_api_key", "api_key_alias"});
  c.team_remaining = &m.gauge("litellm_remaining_team_budget_metric", "Team budget left, USD", {"team", "team_alias"});
  c.team_max = &m.gauge("litellm_team_max_budget_metric", "Team max budget, USD", {"team", "team_alias"});
  const std::vector<std::string> genai{"gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model",
                                       "gen_ai_response_model", "error_type"};
  c.genai_duration = &m.histogram("gen_ai_client_operation_duration_seconds", "GenAI operation duration, seconds", genai,
                                  doubling(0.01, 14, 2));
  c.genai_tokens = &m.histogram("gen_ai_client_token_usage", "Tokens used per operation",
                                with(genai, {"gen_ai_token_type"}), doubling(1, 14, 4));
  // LiteLLM's cache metrics (types/integrations/prometheus.py _cache_metric_labels).
  const std::vector<std::string> cache_labels{"model",    "hashed_api_key", "api_key_alias", "team",
                                              "team_alias", "end_user",     "user",          "model_id"};
  c.cache_hits = &m.counter("litellm_cache_hits_metric_total", "Requests answered from the response cache", cache_labels);
  c.cache_misses = &m.counter("litellm_cache_misses_metric_total", "Response cache lookups that found nothing", cache_labels);
  c.cached_tokens = &m.counter("litellm_cached_tokens_metric_total", "Tokens of answers served from the response cache",
                               cache_labels);
  // litellm_deployment_state: 0 healthy, 1 partial outage (half-open), 2 outage (open), read at scrape.
  // Held weakly, as in watch_circuits (run_metrics.cpp): the registry must not own the snapshot.
  m.on_collect([weak = std::weak_ptr<const Services::Latest>(s.latest)](telemetry::Exposition& out) {
    const auto latest = weak.lock();
    if (!latest) return;
    std::shared_ptr<const config::Config> cfg;
    std::shared_ptr<policy::Circuits> circuits;
    {
      std::lock_guard lk(latest->mu);
      cfg = latest->config;
      circuits = latest->circuits;
    }
    if (!cfg || !circuits) return;
    const auto views = circuits->snapshot();
    for (const auto& d : cfg->model_list) {
      double v = 0;
      for (const auto& c : views)
        if (c.scope == "deployment" && c.id == d.id)
          v = c.state == policy::CircuitState::open ? 2 : c.state == policy::CircuitState::half_open ? 1 : 0;
      out.gauge("litellm_deployment_state", "Deployment state: 0 healthy, 1 partial outage, 2 outage",
                {{"litellm_model_name", d.upstream_model}, {"model_id", d.id}, {"api_base", d.api_base},
                 {"api_provider", d.provider_prefix}},
                v);
    }
  });
}

void count_compat_request(const RunState& st, bool ok, int status) {
  const auto& c = st.svc->compat_metrics;
  if (!c.requests) return;
  const auto& p = st.principal();
  const auto who = caller_of(p);
  const auto served = ok ? st.served_dep : std::nullopt;
  // Labels come from the config (a wildcard's pattern and template), never from the caller's
  // free-form model name: bounded cardinality.
  const std::string_view model = served ? std::string_view(st.cfg.model_list[*served].upstream_model) : std::string_view();
  const std::string_view requested = st.metric_group;
  using Two = std::array<std::string_view, 2>;
  const std::string failure = st.last_failure_class();
  const std::string code = std::to_string(ok ? 200 : status);
  if (st.cache_looked_up) {
    // The caller's end-user id is free-form: never a label (left empty, as for every family here).
    const std::string_view model_label = st.cache_hit ? requested : model;
    const std::string_view model_id = served ? std::string_view(st.cfg.model_list[*served].id) : std::string_view();
    const std::array<std::string_view, 8> cl{model_label,    who.hashed_api_key, who.api_key_alias, who.team,
                                             who.team_alias, std::string_view(), who.user,          model_id};
    if (st.cache_hit) {
      c.cache_hits->inc(cl);
      if (st.usage.reported)
        c.cached_tokens->add(cl, static_cast<double>(st.usage.prompt_tokens + st.usage.completion_tokens));
    } else {
      c.cache_misses->inc(cl);
    }
  }
  const auto by_model = caller_labels(who, std::array<std::string_view, 1>{model});
  c.requests->inc(by_model);
  c.proxy_requests->inc(caller_labels(who, Two{requested, code}));
  if (!ok) c.proxy_failed->inc(caller_labels(who, std::array<std::string_view, 3>{requested, code, failure}));
  if (st.cost > 0) c.spend->add(by_model, dollars(st.cost));
  if (st.usage.reported) {
    const auto tokens = caller_labels(who, Two{model, requested});
    c.input_tokens->add(tokens, static_cast<double>(st.usage.prompt_tokens));
    c.output_tokens->add(tokens, static_cast<double>(st.usage.completion_tokens));
    c.total_tokens->add(tokens, static_cast<double>(st.usage.prompt_tokens + st.usage.completion_tokens));
  }
  const double total_s = static_cast<double>(st.trace.elapsed_ms) / 1000.0;
  const auto latency = caller_labels(who, Two{requested, model});
  c.total_latency->observe(latency, total_s);
  if (served) {
    const auto& d = st.cfg.model_list[*served];
    const std::array<std::string_view, 3> over{d.model_name, d.provider_prefix, d.id};
    c.overhead->observe(over, static_cast<double>(std::max<long long>(0, st.trace.elapsed_ms - st.upstream_ms)) / 1000.0);
  }
  if (st.call.stream && st.first_byte_ms > 0) {
    const auto start_ms = st.start_unix_nano / 1'000'000;
    c.ttft->observe(latency, static_cast<double>(std::max<std::int64_t>(0, st.first_byte_ms - start_ms)) / 1000.0);
  }
  // Fallbacks, as LiteLLM counts them: each fallback group walked to, and whether it served.
  for (const auto& s : st.trace.steps) {
    if (s.kind != TraceStep::Kind::fallback) continue;
    const bool served_here = served && st.deployment(*served).model_name == s.group;
    auto* f = served_here ? c.fallback_ok : c.fallback_failed;
    const std::string fallback = st.svc->groups ? st.svc->groups->canonical(s.group) : s.group;
    const std::array<std::string_view, 8> fl{requested, fallback,       who.hashed_api_key,             who.api_key_alias,
                                             who.team,  who.team_alias, ok ? std::string_view() : code, failure};
    f->inc(fl);
  }
  // Budgets left, as the ledger knows them after this request.
  const auto now = std::chrono::system_clock::now();
  if (p.key && p.key->max_budget_nanos) {
    const auto spent = st.svc->ledger->state(budget::ScopeId{budget::ScopeKind::key, p.key->token_hash}, now);
    const budget::Nanos used = spent ? spent->spent : 0;
    const std::array<std::string_view, 2> key{who.hashed_api_key, who.api_key_alias};
    c.key_max->set(key, dollars(*p.key->max_budget_nanos));
    c.key_remaining->set(key, dollars(*p.key->max_budget_nanos - used));
  }
  if (p.team && p.team->max_budget_nanos) {
    const auto spent = st.svc->ledger->state(budget::ScopeId{budget::ScopeKind::team, p.team->team_id}, now);
    const budget::Nanos used = spent ? spent->spent : 0;
    const std::array<std::string_view, 2> team{p.team->team_id, who.team_alias};
    c.team_max->set(team, dollars(*p.team->max_budget_nanos));
    c.team_remaining->set(team, dollars(*p.team->max_budget_nanos - used));
  }
  // GenAI client histograms.
  const auto shown = served ? served : st.last_dep;
  const std::string provider = shown ? genai_provider_name(st.deployment(*shown).provider_prefix) : std::string();
  const std::string error_type = ok ? std::string() : !failure.empty() ? failure : code;
  const std::array<std::string_view, 5> genai{"chat", provider, requested, model, error_type};
  c.genai_duration->observe(genai, total_s);
  if (st.usage.reported) {
    const std::array<std::string_view, 6> input{"chat", provider, requested, model, error_type, "input"};
    const std::array<std::string_view, 6> output{"chat", provider, requested, model, error_type, "output"};
    c.genai_tokens->observe(input, static_cast<double>(st.usage.prompt_tokens));
    c.genai_tokens->observe(output, static_cast<double>(st.usage.completion_tokens));
  }
}

void count_compat_attempt(const RunState& st, const config::Deployment& d, std::optional<FailureClass> failure,
                          int status, long long duration_ms) {
  const auto& c = st.svc->compat_metrics;
  if (!c.deployment_total) return;
  const auto who = caller_of(st.principal());
  const std::array<std::string_view, 9> v{d.upstream_model,   d.id,              d.api_base, d.provider_prefix, st.metric_group,
                                          who.hashed_api_key, who.api_key_alias, who.team,   who.team_alias};
  c.deployment_total->inc(v);
  if (failure) {
    const std::string code = std::to_string(status);
    std::array<std::string_view, 11> f{};
    std::copy(v.begin(), v.end(), f.begin());
    f[9] = code;
    f[10] = policy::to_string(*failure);
    c.deployment_failure->inc(f);
  } else {
    c.deployment_success->inc(v);
  }
  const std::array<std::string_view, 7> latency{who.hashed_api_key, who.api_key_alias, who.team,        who.team_alias,
                                                who.user,           st.metric_group,   d.upstream_model};
  c.api_latency->observe(latency, static_cast<double>(duration_ms) / 1000.0);
}

}  // namespace tollgate::pipeline
