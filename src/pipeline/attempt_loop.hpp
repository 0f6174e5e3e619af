#pragma once
/// The attempt loop (DESIGN.md "The life of a request", step 5): the only place that sends a
/// request upstream. For the primary group and then each fallback group: pick a deployment,
/// send, classify the outcome, then decide — done, retry (backoff, Retry-After), next
/// deployment, fallback, or fail with the primary's own error.

#include <chrono>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include "auth/principal.hpp"
#include "budget/ledger.hpp"
#include "budget/pricing.hpp"
#include "cache/controls.hpp"
#include "cache/response_cache.hpp"
#include "config/config.hpp"
#include "core/clock.hpp"
#include "http/client.hpp"
#include "http/connection_stats.hpp"
#include "pipeline/jobs.hpp"
#include "pipeline/output_bound.hpp"
#include "pipeline/sink.hpp"
#include "policy/circuit.hpp"
#include "policy/group_policy.hpp"
#include "policy/rate_limit.hpp"
#include "policy/request_budget.hpp"
#include "policy/stale_cache.hpp"
#include "providers/call_api.hpp"
#include "telemetry/alerts.hpp"
#include "telemetry/access_log.hpp"
#include "telemetry/metrics.hpp"
#include "telemetry/otlp_exporter.hpp"
#include "telemetry/trace_context.hpp"
#include "routing/router.hpp"
#include "store/store.hpp"

namespace tollgate::pipeline {

/// What several instances share when scaled out (docs/scale_out.md); empty members = the
/// in-process ones.
struct SharedState {
  std::unique_ptr<budget::BudgetLedger> ledger;  ///< the shared ledger (Redis)
  std::unique_ptr<policy::RateLimits> limits;    ///< shared rate limits (Redis)
  /// Also told of every circuit transition (after the logger): publishes openings to the others.
  std::function<void(const policy::CircuitTransition&)> on_circuit_transition;
};

/// Shared per-process services of the pipeline, as one snapshot of the config: a request holds
/// its Services (shared_ptr) from start to end, so a config reload (Services::next,
/// pipeline/live_services.hpp) never changes what a request in flight runs on. The config and
/// policies are immutable; the router, circuits, ledger, limiter and cache are internally
/// synchronised. Copyable: a copy shares every component (next() rebuilds the config's own).
struct Services {
  std::shared_ptr<const config::Config> config;
  const core::Clock* clock = &core::SystemClock::instance();
  std::shared_ptr<const routing::ModelGroups> groups;
  /// Each model group's compiled failure policy (classes, budgets, degradation).
  std::shared_ptr<const policy::PolicySet> policies;
  /// Deployment, provider and feature circuits (read by the router and the attempt loop).
  std::shared_ptr<policy::Circuits> circuits;
  std::shared_ptr<routing::RouterState> router;
  /// Answers kept for the `stale_cache` degradation mode.
  std::shared_ptr<policy::StaleCache> stale_cache;
  /// The response cache (litellm_settings.cache; pipeline/cache_step.hpp); null = caching off.
  /// Local: built by make(); redis: set by the caller after make() (app/serve.cpp).
  std::shared_ptr<cache::ResponseCache> response_cache;
  /// Prometheus metrics (GET /metrics) and operator alerts (GET /tollgate/alerts).
  std::shared_ptr<telemetry::Registry> metrics;
  /// The HTTP server's connection figures (GET /tollgate/stats); unset without a server.
  std::function<http::ConnectionStats()> connection_stats;
  /// The attempt loop's metric families, registered once in make() (never null after it).
  struct LoopMetrics {
    telemetry::CounterFamily* requests = nullptr;      ///< tollgate_requests_total{model_group,result,degradation}
    telemetry::HistogramFamily* duration = nullptr;    ///< tollgate_request_duration_seconds{model_group}
    telemetry::CounterFamily* overruns = nullptr;      ///< tollgate_deadline_overruns_total{model_group}
    telemetry::CounterFamily* retries = nullptr;       ///< tollgate_retries_total{model_group}
    telemetry::CounterFamily* fallbacks = nullptr;     ///< tollgate_fallbacks_total{model_group}
    telemetry::CounterFamily* attempts = nullptr;      ///< tollgate_upstream_attempts_total{model_group,deployment,provider,outcome}
  } loop_metrics;
  /// LiteLLM-compatible and GenAI metric families (pipeline/compat_metrics.hpp), registered in make().
  struct CompatMetrics {
    telemetry::CounterFamily* requests = nullptr;           ///< litellm_requests_metric_total
    telemetry::CounterFamily* proxy_requests = nullptr;     ///< litellm_proxy_total_requests_metric_total
    telemetry::CounterFamily* proxy_failed = nullptr;       ///< litellm_proxy_failed_requests_metric_total
    telemetry::CounterFamily* spend = nullptr;              ///< litellm_spend_metric_total (USD)
    telemetry::CounterFamily* input_tokens = nullptr;       ///< litellm_input_tokens_metric_total
    telemetry::CounterFamily* output_tokens = nullptr;      ///< litellm_output_tokens_metric_total
    telemetry::CounterFamily* total_tokens = nullptr;       ///< litellm_total_tokens_metric_total
    telemetry::CounterFamily* deployment_success = nullptr; ///< litellm_deployment_success_responses_total
    telemetry::CounterFamily* deployment_failure = nullptr; ///< litellm_deployment_failure_responses_total
    telemetry::CounterFamily* deployment_total = nullptr;   ///< litellm_deployment_total_requests_total
    telemetry::CounterFamily* fallback_ok = nullptr;        ///< litellm_deployment_successful_fallbacks_total
    telemetry::CounterFamily* fallback_failed = nullptr;    ///< litellm_deployment_failed_fallbacks_total
    telemetry::HistogramFamily* total_latency = nullptr;    ///< litellm_request_total_latency_metric (s)
    telemetry::HistogramFamily* api_latency = nullptr;      ///< litellm_llm_api_latency_metric (s)
    telemetry::HistogramFamily* overhead = nullptr;         ///< litellm_overhead_latency_metric (s)
    telemetry::HistogramFamily* ttft = nullptr;             ///< litellm_llm_api_time_to_first_token_metric (s)
    telemetry::GaugeFamily* key_remaining = nullptr;        ///< litellm_remaining_api_key_budget_metric (USD)
    telemetry::GaugeFamily* key_max = nullptr;              ///< litellm_api_key_max_budget_metric (USD)
    telemetry::GaugeFamily* team_remaining = nullptr;       ///< litellm_remaining_team_budget_metric (USD)
    telemetry::GaugeFamily* team_max = nullptr;             ///< litellm_team_max_budget_metric (USD)
    telemetry::HistogramFamily* genai_duration = nullptr;   ///< gen_ai_client_operation_duration_seconds
    telemetry::HistogramFamily* genai_tokens = nullptr;     ///< gen_ai_client_token_usage
    telemetry::CounterFamily* cache_hits = nullptr;         ///< litellm_cache_hits_metric_total
    telemetry::CounterFamily* cache_misses = nullptr;       ///< litellm_cache_misses_metric_total
    telemetry::CounterFamily* cached_tokens = nullptr;      ///< litellm_cached_tokens_metric_total
  } compat_metrics;
  std::shared_ptr<telemetry::Alerts> alerts;
  /// Where a run's spans go (tollgate_settings.otel); null = no span export.
  std::shared_ptr<telemetry::OtlpExporter> spans;
  /// Where a run's access line goes (tollgate_settings.access_log); null = none.
  std::shared_ptr<telemetry::AccessLog> access_log;
  /// Budget thresholds already alerted on (pipeline/budget_alerts.hpp); set in make().
  std::shared_ptr<class BudgetAlerts> budget_alerts;
  /// How attempts reach upstreams: the network (PooledTransport), or scripted (`tollgate simulate`).
  std::shared_ptr<http::Transport> transport;
  /// Simulation only: time is virtual, waits (backoff, Retry-After) advance this clock instead.
  core::ManualClock* virtual_time = nullptr;
  /// Where the `deferred` degradation mode queues jobs; null = deferral unavailable (answered
  /// as fail_fast naming the reason).
  JobQueue* jobs = nullptr;
  /// The budget ledger every attempt is admitted and settled through: the in-process one (a
  /// cache of the durable ledger in `store`), or a shared one (Redis) when scaled out.
  std::shared_ptr<budget::BudgetLedger> ledger;
  /// The in-process ledger when it is the one in use (null with a shared ledger).
  budget::Ledger* local_ledger = nullptr;
  /// Each deployment's resolved price (index = Config::model_list index).
  std::vector<budget::ResolvedPrice> prices;
  /// The effective price table the prices were resolved against; a wildcard deployment
  /// (config/wildcard.hpp) is priced per requested model from it (RunState::price_of).
  std::shared_ptr<const budget::PriceTable> price_table;
  /// rpm/tpm/parallel limits of keys, users and teams.
  std::shared_ptr<policy::RateLimits> limiter;
  /// Durable store (ledger, spend logs, identities); null = in-memory only (tests).
  std::shared_ptr<store::Store> store;
  /// The config and circuits of the snapshot made last (make() or next()), shared by every
  /// snapshot: what scrape-time metrics read (a snapshot they captured may be gone).
  struct Latest {
    mutable std::mutex mu;
    std::shared_ptr<const config::Config> config;
    std::shared_ptr<policy::Circuits> circuits;
  };
  std::shared_ptr<Latest> latest = std::make_shared<Latest>();

  /// Builds the services. Without `shared.ledger`, the in-process ledger is used: with a store,
  /// open reservations left by a crash are settled conservatively and every scope's spend is
  /// rebuilt from the durable ledger first. With one (several instances on one store), nothing is
  /// recovered here: the shared ledger's leases settle what a dead instance left open.
  /// Throws std::runtime_error when the store cannot be recovered.
  static std::shared_ptr<Services> make(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
                                        std::shared_ptr<store::Store> store = nullptr, SharedState shared = {});

  /// The services of a reloaded config: `running`'s process-wide components (ledger, limiter,
  /// store, metrics, alerts, exporters, transport, stale cache, job queue) shared, the config's
  /// own rebuilt from `cfg` (model groups, policies, prices, circuits, router). Circuits and
  /// router state (cooldowns, failure windows, rpm/tpm minute counts, latency) carry over for
  /// every deployment whose id is unchanged; requests in flight keep reporting to `running`'s.
  /// An error (the price file cannot be read) leaves `running` as it is.
  static std::expected<std::shared_ptr<Services>, std::string> next(const Services& running,
                                                                    std::shared_ptr<const config::Config> cfg);
};

/// One decoded model call, validated by the API layer: `model` is a known group. Its `body` is
/// in the shape of its client API `api` (OpenAI chat for chat and for /v1/messages translated at
/// the edge; the embeddings or completions request for those): every attempt hands it to the
/// adapter serving that API for the deployment (providers::adapter_for).
struct ChatCall {
  /// The client API of `body` and of the answer (providers/call_api.hpp).
  providers::CallApi api = providers::CallApi::chat;
  boost::json::object body;  ///< the client's request body, passed through with minimal rewriting
  std::string model;         ///< requested model group (an alias already resolved to its group)
  /// The name the caller sent when it was a model_group_alias (spend log `requested_model`);
  /// empty when it named `model` itself.
  std::string requested_as;
  bool stream = false;
  bool include_usage = false;  ///< the client asked for stream_options.include_usage
  /// What the caller asked of the output (max_tokens, n, service_tier), read once; each attempt's
  /// bound is planned from it (pipeline/output_bound.hpp).
  OutputRequest output;
  /// The caller's own `max_tokens` / `max_completion_tokens` members as sent (only those present):
  /// restored for attempts that reserve nothing (free or unpriced models).
  boost::json::object caller_output_fields;
  std::string call_id;         ///< x-litellm-call-id
  std::string requester_ip;    ///< the client's address (TCP peer), for the spend log; empty if unknown
  core::SteadyTime start{};    ///< when the request was accepted
  /// Who is calling (never null once authenticated; a default Principal when no auth is configured).
  std::shared_ptr<const auth::Principal> principal;
  /// Spend log call_type, LiteLLM's ("acompletion", "anthropic_messages", "aembedding",
  /// "atext_completion": providers::litellm_call_type of the API the client called).
  std::string call_type = "acompletion";
  /// The caller's own body when its client API (`native_api`) may be served natively (an
  /// Anthropic deployment for /v1/messages, OpenAI/Azure for /v1/responses): an attempt to a
  /// deployment whose provider serves `native_api` (providers::adapter_for) sends this body,
  /// with only `model` and the output bound rewritten; the others send `body` (its chat
  /// translation, which admission bounds). Empty (no value) for plain chat calls.
  std::optional<boost::json::object> native_body;
  providers::CallApi native_api = providers::CallApi::chat;
  /// A feature of the caller's body only a native deployment can serve (e.g.
  /// "tools[0].type=web_search_preview"); empty = none. A deployment that would get the chat
  /// translation is then not sent the call (its attempt is the caller's 400 naming it).
  std::string native_only_feature;
  /// A field of the caller's native body that makes the provider add input the body does not
  /// show (Responses `previous_response_id`, `conversation`, `prompt`, an `item_reference` item;
  /// Anthropic `mcp_servers`: the tool definitions of remote MCP servers); empty = none. The
  /// input bound of a deployment sent the native body is then at least the model's context
  /// limit (Accounting::input_bound); such a call is never answered from the response cache
  /// nor deferred (neither can carry the field).
  std::string hidden_input;
  /// Budget tightening from the key's metadata (`tollgate_request_budget`) and from the request's
  /// x-tollgate-* headers, applied in that order over the group's configured budget.
  policy::BudgetOverride key_budget;
  policy::BudgetOverride request_budget;
  /// The request's cache controls (cache/controls.hpp), taken out of the body by the API layer.
  cache::Controls cache_controls;
  /// False for the run of a deferred job: it may not be degraded (deferred) again.
  bool allow_degradation = true;
  /// A run pinned to one deployment (a health check, pipeline/health_checks.hpp): only
  /// `deployment` (a Config::model_list index, a member of `model`) is tried, once — no retry,
  /// no fallback, no degradation, no response cache — and the request's deadline is `timeout`.
  /// Its admission, settlement, circuits and records are those of any attempt.
  struct Pin {
    std::size_t deployment = 0;
    std::chrono::milliseconds timeout{0};
  };
  std::optional<Pin> pin;  ///< nullopt = an ordinary run over the group and its fallbacks
  /// The caller's W3C trace context (`traceparent`, `tracestate`), when it sent a valid one: the
  /// run's span is its child. Otherwise the run starts a trace.
  std::optional<telemetry::TraceContext> parent_trace;
};

/// What a run ended with, for callers that need it (the deferred-job runner).
struct RunOutcome {
  bool served = false;
  int status = 0;
  bool retryable = false;  ///< failed with a capacity/transient/unknown class: worth running again later
};

/// Runs `call` to completion, writing the answer (or the right error) to `sink`. Never throws
/// for expected failures; every upstream attempt goes through here.
boost::asio::awaitable<RunOutcome> run_chat(std::shared_ptr<Services> services, ChatCall call, ResponseSink& sink);

/// run_chat for the API's handlers: the run owns `sink` (non-null; it lives until the run ends).
/// A handler returns this awaitable rather than awaiting it in a frame of its own, so that no
/// frame holds the call (or the sink) a second time while it streams.
boost::asio::awaitable<void> serve_chat(std::shared_ptr<Services> services, ChatCall call,
                                        std::unique_ptr<ResponseSink> sink);

}  // namespace tollgate::pipeline
