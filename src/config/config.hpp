#pragma once
/// Immutable configuration snapshot, loaded from a LiteLLM proxy config file
/// (docs: LiteLLM "proxy/config_settings") plus Tollgate's own `tollgate_settings:`.
///
/// Units: durations are std::chrono::milliseconds (the YAML gives LiteLLM's seconds,
/// converted once at load); sizes in bytes; token counts are plain integers.
/// A Config is built once by config::load_config_file()/load_config_string() (loader.hpp)
/// and then shared read-only
/// (std::shared_ptr<const Config>); nothing mutates it after load.

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "config/redis_endpoint.hpp"
#include <string_view>
#include <utility>
#include <vector>

#include "config/policy.hpp"

namespace tollgate::config {

using std::chrono::milliseconds;

/// Upstream API family of a deployment, from the `provider/` prefix of
/// `litellm_params.model`. Any prefix that speaks OpenAI's API (openai, vllm,
/// ollama, groq, together_ai, hosted_vllm, openai_compatible ...) maps to OpenAI.
/// The upstream API family of a deployment; `unsupported`: a provider prefix Tollgate does not
/// implement (the deployment loads with a warning and fails when routed to, as in LiteLLM).
/// openai: OpenAI's API and every OpenAI-compatible server (huggingface/, text-completion-openai/,
/// mistralai/ included); gemini: Google AI Studio generateContent; vertex_ai: the same API on
/// Vertex AI (OAuth from a service account); bedrock: Bedrock Converse (SigV4); sagemaker:
/// SageMaker runtime invocations (SigV4); ollama: Ollama's /api/generate; ollama_chat: Ollama's
/// /api/chat; cohere: Cohere v2 chat and embed.
enum class ProviderKind { openai, azure, anthropic, gemini, vertex_ai, bedrock, sagemaker, ollama, ollama_chat, cohere,
                          unsupported };

/// Cloud credentials of a deployment whose provider signs or mints its own auth (Bedrock,
/// SageMaker: AWS Signature V4; Vertex AI: a service-account OAuth token), from LiteLLM's
/// `litellm_params` keys (os.environ/ references resolved) or, when absent, the standard
/// environment variables read at load (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
/// AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION; GOOGLE_APPLICATION_CREDENTIALS,
/// VERTEXAI_PROJECT, VERTEXAI_LOCATION). Empty strings = not given.
struct CloudCredentials {
  std::string aws_access_key_id;
  std::string aws_secret_access_key;
  std::string aws_session_token;
  std::string aws_region_name;
  std::string vertex_project;
  std::string vertex_location;
  /// `vertex_credentials`: the service-account JSON itself (text), already read from a file
  /// path when one was given.
  std::string vertex_credentials;
};

/// The price of one long-prompt tier field, named as in LiteLLM's
/// `<field>_above_<N>k_tokens` keys (`input_cost_per_token_above_200k_tokens`, ...).
enum class TierCostField { input_cost_per_token, output_cost_per_token, cache_read_input_token_cost,
                           cache_creation_input_token_cost };

/// A deployment's long-prompt tier override, from LiteLLM's `<field>_above_<N>k_tokens` keys in
/// `litellm_params` / `model_info` (docs/pricing.md "Config overrides"). Prices are decimal dollars
/// per token kept as text (converted once by the budget layer); every key of one deployment names
/// the same N.
struct TierCostOverride {
  /// N × 1000 tokens: the tier's prices apply to the whole request when prompt tokens exceed this.
  std::int64_t above_input_tokens = 0;
  std::optional<std::string> input_cost_per_token;            ///< `input_cost_per_token_above_<N>k_tokens`
  std::optional<std::string> output_cost_per_token;           ///< `output_cost_per_token_above_<N>k_tokens`
  std::optional<std::string> cache_read_input_token_cost;     ///< `cache_read_input_token_cost_above_<N>k_tokens`
  std::optional<std::string> cache_creation_input_token_cost; ///< `cache_creation_input_token_cost_above_<N>k_tokens`
};

/// A parsed LiteLLM tier key: which field and the threshold in tokens.
struct TierCostKey {
  TierCostField field = TierCostField::input_cost_per_token;
  std::int64_t above_input_tokens = 0;  ///< N × 1000
};

/// Parses `<field>_above_<N>k_tokens` (N a positive integer of at most 9 digits, field one of
/// TierCostField's names): "input_cost_per_token_above_200k_tokens" → {input_cost_per_token,
/// 200000}. Anything else (including LiteLLM's `..._above_200k_tokens_priority` and
/// `cache_creation_input_token_cost_above_1hr`) → nullopt.
std::optional<TierCostKey> parse_tier_cost_key(std::string_view key);

/// One `model_list` entry: a concrete deployment of a model group.
struct Deployment {
  std::string model_name;      ///< the model group this deployment serves (client-visible name)
  /// The prefix as written ("openai", "groq", "azure", "anthropic"), or `custom_llm_provider`;
  /// when `model` has no prefix, the inferred one ("anthropic" for claude*, else "openai").
  std::string provider_prefix;
  ProviderKind provider = ProviderKind::openai;
  /// Why this deployment cannot be called although its provider is implemented (api_base
  /// missing or not a URL, no model after the prefix): loaded with a warning, as LiteLLM loads
  /// it, with `provider` = unsupported; a request routed to it fails with 500
  /// deployment_misconfigured. Empty for a callable deployment, and for an unimplemented provider.
  std::string unusable;
  std::string upstream_model;  ///< model sent upstream: `litellm_params.model` without the prefix
  /// Base URL without trailing slash; empty = provider default (https://api.openai.com/v1,
  /// https://api.anthropic.com). Hosted OpenAI-compatible prefixes (groq, together_ai, ...)
  /// get their public base filled in by the loader, so empty always means OpenAI/Anthropic.
  std::string api_base;
  std::string api_key;         ///< resolved secret (os.environ/NAME already substituted); may be empty
  std::string api_version;     ///< Azure `api-version` query parameter / Anthropic `anthropic-version`
  std::optional<milliseconds> timeout;        ///< `litellm_params.timeout` (s in YAML): whole non-streaming attempt
  std::optional<milliseconds> stream_timeout; ///< `litellm_params.stream_timeout` (s): time to first byte when streaming
  /// `model_info.first_token_timeout_ms` / `stream_idle_timeout_ms`: this deployment's stream
  /// limits (policy::RequestBudget has the meaning); the smaller of these and the request's wins.
  std::optional<milliseconds> first_token_timeout;
  std::optional<milliseconds> stream_idle_timeout;
  /// `model_info.supports_assistant_prefill`: whether a cut stream may be continued here with
  /// the delivered text as a final assistant message; nullopt = the provider's default
  /// (providers::accepts_prefill).
  std::optional<bool> supports_assistant_prefill;
  std::optional<std::int64_t> rpm;            ///< requests per minute this deployment may receive
  std::optional<std::int64_t> tpm;            ///< tokens per minute this deployment may receive
  /// Price overrides with LiteLLM's key names, from `litellm_params` (which wins) or `model_info`:
  /// decimal dollars per token (per call for web_search_cost_per_call) as normalised text
  /// ("0.0000025"), so the budget layer converts them to integer units once, without floats.
  /// Each replaces that one price of the table entry (rules: budget/pricing.hpp,
  /// resolve_deployment_price; every key: kDeploymentCostKeys).
  std::optional<std::string> input_cost_per_token;
  std::optional<std::string> output_cost_per_token;
  std::optional<std::string> cache_read_input_token_cost;               ///< cached prompt tokens
  std::optional<std::string> cache_creation_input_token_cost;           ///< cache writes, default (5-minute) TTL
  std::optional<std::string> cache_creation_input_token_cost_above_1hr; ///< cache writes, 1-hour TTL
  std::optional<std::string> output_cost_per_reasoning_token;
  std::optional<std::string> input_cost_per_audio_token;
  std::optional<std::string> output_cost_per_audio_token;
  std::optional<std::string> output_cost_per_image_token;
  /// Dollars per web-search call: `web_search_cost_per_call`, or LiteLLM's
  /// `search_context_cost_per_query.search_context_size_medium`.
  std::optional<std::string> web_search_cost_per_call;
  std::optional<std::string> input_cost_per_token_priority;         ///< `service_tier: priority`
  std::optional<std::string> output_cost_per_token_priority;
  std::optional<std::string> cache_read_input_token_cost_priority;
  std::optional<std::string> input_cost_per_token_flex;             ///< `service_tier: flex`
  std::optional<std::string> output_cost_per_token_flex;
  std::optional<std::string> cache_read_input_token_cost_flex;
  /// `<field>_above_<N>k_tokens` keys; nullopt = none given.
  std::optional<TierCostOverride> long_prompt_tier_cost;
  /// `litellm_params.weight`: relative pick weight for simple-shuffle (LiteLLM), absent = 1.
  std::optional<std::int64_t> weight;
  std::string id;              ///< `model_info.id`; generated ("<model_name>/<index within group>") when absent
  std::string base_model;      ///< `model_info.base_model` (pricing lookup), may be empty
  std::optional<std::int64_t> max_input_tokens;
  std::optional<std::int64_t> max_output_tokens;
  std::vector<std::string> access_groups; ///< `model_info.access_groups`
  /// `litellm_params.max_retries`: the most times one request retries this deployment itself
  /// (after that the walk moves to the group's other deployments or its fallbacks); nullopt =
  /// the request's retry budget alone.
  std::optional<int> max_retries;
  /// Default request parameters from litellm_params (temperature, top_p, presence_penalty,
  /// frequency_penalty, seed): name → JSON text, sent only when the request does not set them.
  std::vector<std::pair<std::string, std::string>> default_params;
  /// litellm_params.max_tokens / max_completion_tokens: the output limit of a request that sets
  /// none, tokens per choice; it bounds the reservation as the caller's own limit would.
  std::optional<std::int64_t> default_max_tokens;
  /// `litellm_params.region_name` ("eu", "us", ...): the data region the deployment runs in; a
  /// caller with `allowed_model_region` is routed only to deployments of that region
  /// (routing/constraints.hpp). Empty = unknown, which meets no region requirement.
  std::string region_name;
  /// `litellm_params.tags`: with router_settings.enable_tag_filtering, the request tags this
  /// deployment serves ("default": requests no other deployment's tags match).
  std::vector<std::string> tags;
  /// Kept in the store (`/model/new` with store_model_in_db), not written in the file: LiteLLM's
  /// `model_info.db_model`.
  bool db_model = false;
  /// `model_info.mode` (LiteLLM): "chat", "completion", "embedding", "responses", ...; empty =
  /// not given (a chat deployment). Decides which endpoints route to it and what /health sends.
  std::string mode;
  /// AWS / Vertex credentials (bedrock, sagemaker, vertex_ai); unused by other providers.
  CloudCredentials cloud;
  /// `model_info.health_check_timeout` (s in YAML): bound of one /health call to this deployment;
  /// nullopt = general_settings.health_check_timeout.
  std::optional<milliseconds> health_check_timeout;
};

/// One flat deployment cost key: LiteLLM's name and the Deployment field holding its value.
struct CostKey {
  std::string_view key;
  std::optional<std::string> Deployment::*field;
};

/// Every flat cost key a deployment accepts in `litellm_params` or `model_info` (the long-prompt
/// tier keys are parsed by parse_tier_cost_key). The names are LiteLLM's
/// (model_prices_and_context_window.json), except `web_search_cost_per_call`, Tollgate's.
inline constexpr std::array<CostKey, 16> kDeploymentCostKeys{{
    {"input_cost_per_token", &Deployment::input_cost_per_token},
    {"output_cost_per_token", &Deployment::output_cost_per_token},
    {"cache_read_input_token_cost", &Deployment::cache_read_input_token_cost},
    {"cache_creation_input_token_cost", &Deployment::cache_creation_input_token_cost},
    {"cache_creation_input_token_cost_above_1hr", &Deployment::cache_creation_input_token_cost_above_1hr},
    {"output_cost_per_reasoning_token", &Deployment::output_cost_per_reasoning_token},
    {"input_cost_per_audio_token", &Deployment::input_cost_per_audio_token},
    {"output_cost_per_audio_token", &Deployment::output_cost_per_audio_token},
    {"output_cost_per_image_token", &Deployment::output_cost_per_image_token},
    {"web_search_cost_per_call", &Deployment::web_search_cost_per_call},
    {"input_cost_per_token_priority", &Deployment::input_cost_per_token_priority},
    {"output_cost_per_token_priority", &Deployment::output_cost_per_token_priority},
    {"cache_read_input_token_cost_priority", &Deployment::cache_read_input_token_cost_priority},
    {"input_cost_per_token_flex", &Deployment::input_cost_per_token_flex},
    {"output_cost_per_token_flex", &Deployment::output_cost_per_token_flex},
    {"cache_read_input_token_cost_flex", &Deployment::cache_read_input_token_cost_flex},
}};

/// `router_settings.routing_strategy`.
enum class RoutingStrategy { simple_shuffle, least_busy, latency_based, usage_based };

/// A fallback map entry: `{"group-a": ["group-b", "group-c"]}` in YAML order.
struct FallbackRule {
  std::string from;              ///< model group, or "*" for any group
  std::vector<std::string> to;   ///< fallback groups in the order they are tried
};

struct RouterSettings {
  RoutingStrategy routing_strategy = RoutingStrategy::simple_shuffle;
  int num_retries = 2;              ///< retries within a group (router_settings or litellm_settings; router wins)
  int max_fallbacks = 5;            ///< fallback targets attempted at most per request
  int allowed_fails = 3;            ///< failures within cooldown_time before a deployment cools down
  milliseconds cooldown_time{5000}; ///< YAML seconds; how long a deployment sits out
  milliseconds retry_after{0};      ///< minimum wait before a retry (YAML seconds)
  milliseconds timeout{600000};     ///< whole request deadline, retries and fallbacks included (YAML seconds)
  /// The Redis server shared by every instance (redis_host / redis_port / redis_password, or
  /// redis_url, which wins): configured = the shared ledger (docs/scale_out.md). The environment is
  /// read only through os.environ/ references, never implicitly.
  RedisEndpoint redis;
  /// `enable_tag_filtering`: route by request tags (routing/constraints.hpp).
  bool enable_tag_filtering = false;
  /// `tag_filtering_match_any`: a deployment needs one request tag (true) or all of them (false).
  bool tag_filtering_match_any = true;
  /// `model_group_alias`: a name a request may use for another group (LiteLLM; checked before
  /// the groups themselves, as LiteLLM's router does).
  struct GroupAlias {
    std::string alias;
    std::string group;    ///< the model group it routes to
    bool hidden = false;  ///< `{model: group, hidden: true}`: not listed by /v1/models
  };
  std::vector<GroupAlias> model_group_alias;
  /// `retry_policy` (LiteLLM's `<Exception>Retries`, mapped onto failure classes by
  /// retry_policy_class): the most retries one request makes after failures of a class, within
  /// its retry budget (never above it). nullopt = the retry budget alone.
  std::array<std::optional<int>, kFailureClassCount> retry_policy{};
  /// `allowed_fails_policy` (`<Exception>AllowedFails`): failures of a class in a row a
  /// deployment may have before its circuit opens; such failures do not count toward
  /// `allowed_fails`. nullopt = `allowed_fails` for that class.
  std::array<std::optional<int>, kFailureClassCount> allowed_fails_policy{};
};

/// LiteLLM's exception name in retry_policy / allowed_fails_policy keys (the part before
/// `Retries` / `AllowedFails`: BadRequestError, AuthenticationError, TimeoutError,
/// RateLimitError, ContentPolicyViolationError, InternalServerError) → Tollgate's failure class
/// (caller_fix_required, deployment_misconfigured, unknown_outcome, retryable_capacity,
/// content_policy, transient_provider_error); nullopt for any other name.
std::optional<FailureClass> litellm_exception_class(std::string_view exception);

/// `litellm_settings.cache` / `cache_params` (LiteLLM docs: proxy/caching, proxy/caching_settings):
/// exact-match response caching of completed answers (docs/config.md "Response caching").
struct CacheSettings {
  enum class Type { local, redis };
  bool enabled = false;         ///< litellm_settings.cache: true
  Type type = Type::local;      ///< cache_params.type (local | redis; any other type is a load error)
  /// cache_params.ttl (seconds): how long an answer is kept, unless a request's cache.ttl says
  /// otherwise. Absent: default_in_memory_ttl / default_in_redis_ttl for the type, else 600 s.
  std::optional<std::int64_t> ttl_seconds;
  std::optional<std::int64_t> default_in_memory_ttl_seconds;
  std::optional<std::int64_t> default_in_redis_ttl_seconds;
  std::string cache_namespace;  ///< cache_params.namespace: prefix of every key ("" = none)
  /// cache_params.supported_call_types: LiteLLM call types cached ("acompletion" = /chat/completions,
  /// "anthropic_messages" = /v1/messages); nullopt = every call type Tollgate serves.
  std::optional<std::vector<std::string>> supported_call_types;
  std::int64_t max_size_in_memory = 200;  ///< local: entries kept (least recently used go first)
  RedisEndpoint redis;  ///< type redis: cache_params host/port/password/url, else REDIS_* env, else router_settings
  /// The ttl an entry gets without a per-request ttl, seconds.
  [[nodiscard]] std::int64_t effective_ttl_seconds() const {
    if (ttl_seconds) return *ttl_seconds;
    const auto& d = type == Type::local ? default_in_memory_ttl_seconds : default_in_redis_ttl_seconds;
    return d.value_or(600);
  }
  /// Whether answers to `call_type` are cached.
  [[nodiscard]] bool caches(std::string_view call_type) const {
    if (!enabled) return false;
    if (!supported_call_types) return true;
    for (const auto& t : *supported_call_types)
      if (t == call_type || (call_type == "acompletion" && t == "completion")) return true;
    return false;
  }
};

struct LitellmSettings {
  CacheSettings cache;
  std::optional<int> num_retries;
  std::optional<milliseconds> request_timeout; ///< YAML seconds
  std::vector<FallbackRule> fallbacks;
  std::vector<FallbackRule> context_window_fallbacks;
  std::vector<FallbackRule> content_policy_fallbacks;
  std::vector<std::string> default_fallbacks;
  std::optional<std::string> max_budget;          ///< decimal dollars as written (issue 3)
  std::optional<std::string> budget_duration;
  std::optional<std::string> max_end_user_budget; ///< decimal dollars as written (issue 3)
  /// Used when router_settings.allowed_fails is absent (folded into RouterSettings::allowed_fails).
  std::optional<int> allowed_fails;
};

struct GeneralSettings {
  std::string master_key;     ///< empty = no auth required
  /// sqlite:///var/lib/tollgate/tollgate.db, a path, or postgresql://user:pass@host:port/db
  /// (also postgres://); empty = the DATABASE_URL environment variable, else the SQLite default
  /// under tollgate_settings.data_dir (docs/storage.md).
  std::string database_url;
  /// Connections of the Postgres store's pool for synchronous calls (LiteLLM's key; the ledger
  /// writer has one more of its own). Unused by SQLite.
  int database_connection_pool_limit = 10;
  bool enforce_fallback_budget = true;
  bool enforce_fallback_model_access = true;
  bool disable_spend_logs = false;
  /// Refuse (403 unpriced_model_blocked) a model with no known price where a budget attaches;
  /// false serves it and records it as unpriced (never as a silent $0). BurnLens' setting.
  bool block_unpriced_models = true;
  /// Whether a user's personal max_budget also applies to that user's team keys (LiteLLM).
  bool apply_user_budget_to_team_keys = false;
  /// Fixed UTC offset for day/month budget resets ("UTC", "+05:30").
  std::string budget_reset_timezone = "UTC";
  /// LiteLLM's `store_model_in_db`: deployments added through `/model/new` live in the store and
  /// are served next to `model_list` (api/admin_models.hpp); false = /model/new is refused.
  bool store_model_in_db = false;
  /// LiteLLM's `background_health_checks`: call every deployment each `health_check_interval`;
  /// the outcomes feed the deployment circuits and GET /health answers from the last round.
  bool background_health_checks = false;
  milliseconds health_check_interval{300000};  ///< `health_check_interval` (s in YAML)
  milliseconds health_check_timeout{10000};    ///< default bound of one health call (s in YAML)
};

/// `tollgate_settings.otel:` — span export over OTLP/HTTP JSON (docs/observability.md). Unset
/// fields come from the OpenTelemetry environment variables (OTEL_EXPORTER_OTLP_ENDPOINT,
/// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME,
/// OTEL_RESOURCE_ATTRIBUTES), read when the config is loaded.
struct OtelSettings {
  /// Export spans: `enabled: true`, or LiteLLM's `litellm_settings.callbacks` naming "otel".
  bool enabled = false;
  /// Full URL of the traces endpoint; default http://localhost:4318/v1/traces (OTLP/HTTP).
  std::string traces_endpoint;
  std::vector<std::pair<std::string, std::string>> headers;  ///< sent with every export request
  std::string service_name = "tollgate";
  std::vector<std::pair<std::string, std::string>> resource_attributes;
  /// Prompt and completion text as span attributes; off by default (they may hold personal data).
  bool capture_content = false;
  milliseconds timeout{5000};   ///< one export request
  std::int64_t queue_size = 4096;  ///< spans waiting for export; beyond it new spans are dropped
};

/// `tollgate_settings.alerts:` — where alerts go and which budget thresholds raise one
/// (docs/observability.md). LiteLLM's `general_settings.alerting: ["slack"]` adds
/// SLACK_WEBHOOK_URL, `["webhook"]` adds WEBHOOK_URL.
struct AlertSettings {
  std::vector<std::string> webhooks;  ///< Slack-compatible incoming-webhook URLs
  milliseconds timeout{5000};         ///< one delivery
  /// Percent of max_budget that raises a `budget_threshold` alert, once per budget window, by
  /// scope kind (key, user, end_user, team, organization, team_member, tag, global, model).
  std::map<std::string, std::vector<int>> budget_thresholds{
      {"key", {50, 80, 100}},          {"user", {50, 80, 100}},   {"end_user", {50, 80, 100}},
      {"team", {80, 90, 100}},         {"organization", {80, 90, 100}}, {"team_member", {80, 90, 100}},
      {"tag", {80, 90, 100}},          {"global", {80, 90, 100}},  {"model", {80, 90, 100}}};
};

/// `tollgate_settings:` — Tollgate's own knobs; every field has a safe default.
struct TollgateSettings {
  std::int64_t max_request_body_bytes = 8 * 1024 * 1024;   ///< larger client bodies get 413
  std::int64_t max_upstream_body_bytes = 32 * 1024 * 1024; ///< larger upstream bodies are a transient failure
  milliseconds header_read_timeout{10000}; ///< whole request head must arrive within this (slowloris guard)
  milliseconds body_read_timeout{30000};   ///< whole request body must arrive within this
  milliseconds idle_timeout{60000};        ///< keep-alive connection idle limit
  milliseconds connect_timeout{5000};      ///< upstream TCP+TLS connect
  /// How long SIGTERM / SIGINT waits for requests in flight (streams included) before it cuts
  /// them, milliseconds, 0..kMaxDrainTimeout; 0 = cut at once (docs/operations.md).
  milliseconds drain_timeout{30000};
  static constexpr milliseconds kMaxDrainTimeout{3600000};  ///< one hour: anything longer is a typo
  int worker_threads = 0;                  ///< 0 = one per core
  std::string ca_file;                     ///< PEM bundle overriding the system CA store; empty = system
  bool tls_verify = true;                  ///< verify upstream certificates (never disable in production)
  int max_idle_connections_per_upstream = 64;
  /// Open client connections over all workers (docs/operations.md "Connection limits"); 0 =
  /// derived at start from the descriptor limit: limit − max(256, limit / 4). An explicit value
  /// that leaves fewer than 128 descriptors is lowered at start, with a warning.
  std::int64_t max_connections = 0;
  /// Open client connections from one IP address; 0 = no limit. One more is answered 429.
  std::int64_t max_connections_per_ip = 0;
  std::string data_dir = "./data";
  /// Embedded store: ledger records go to the ledger journal and are folded into SQLite off the
  /// requests' path (store/journal/ledger_journal.hpp); false = a SQLite transaction per batch.
  bool ledger_journal = true;
  /// With ledger_journal: fdatasync after each journal write (power-loss durability).
  bool ledger_journal_fsync = false;
  /// When the caller's own max_tokens (max_completion_tokens) costs more than a budget can still
  /// pay for: `clamp` sends the request with the smaller bound the budget pays for (and says so
  /// in `x-tollgate-output-capped`), `refuse` answers 429 budget_exceeded (docs/budgets.md).
  enum class BudgetOutputPolicy { clamp, refuse } budget_output_policy = BudgetOutputPolicy::clamp;
  /// The namespace of the end-user ids callers name (body `user`) for end-user budgets (issue
  /// 14 §5: a caller must not charge or exhaust another tenant's end user): `team` = the key's
  /// team, else its organization, else the key; `organization` = the key's organization, else
  /// team, else key; `global` = one namespace (LiteLLM). The master key and the anonymous caller
  /// use the global namespace in every mode (pipeline::end_user_scope_id).
  enum class EndUserBudgetScope { team, organization, global } end_user_budget_scope = EndUserBudgetScope::team;
  /// The smallest output bound worth sending, tokens per choice: an attempt whose budget cannot
  /// pay for its input plus this many output tokens is refused (429 budget_exceeded).
  std::int64_t min_output_tokens = 16;
  /// The most of a nearly spent budget's headroom one attempt may reserve when its whole worst
  /// case does not fit in that share, percent (1..100): near the end of a budget, concurrent
  /// callers then get smaller answers instead of one caller's worst case refusing the rest.
  int budget_reservation_share_percent = 25;
  /// `price_file`: a price table loaded at start, in data/prices.yaml's format or LiteLLM's
  /// model_prices_and_context_window.json (detected by content); its entries replace the bundled
  /// ones with the same key and add the others. Path as written (relative = to the working
  /// directory, like ca_file); empty = the bundled table only. Read by
  /// budget::load_effective_price_table (budget/price_file.hpp), not by the config loader.
  std::string price_file;
  int price_file_line = 0;
  /// Scaled out (router_settings.redis_*): how long an instance's open reservations stay its own
  /// without a renewal, milliseconds (1000..600000). A survivor settles what a dead instance left
  /// open about this long after it died.
  milliseconds ledger_lease{10000};
  /// Prefix of every Redis key Tollgate writes (several clusters may share one Redis).
  std::string redis_key_prefix = "tollgate:";
  OtelSettings otel;
  AlertSettings alerts;
  /// One JSON line per request (docs/observability.md): a file path (appended to), "stdout", or
  /// empty for none.
  std::string access_log;
  /// Connect, write and read timeout of one Redis round trip, milliseconds (10..60000). Past it a
  /// paid attempt is refused 503 ledger_unavailable.
  milliseconds redis_timeout{1000};
  /// How often `serve` checks the store for identity changes made elsewhere (another instance's
  /// admin API), milliseconds (50..60000): a key blocked on one instance is refused on the others
  /// within about this long.
  /// Deferred jobs: the most jobs one key may have queued or running at once (0..1000000; jobs
  /// queued with the master key or anonymously count as one key). A request past it is not
  /// deferred: its group's degradation answers as fail_fast (503 deferred_queue_full). 0 = the
  /// `deferred` mode never queues (every such request is answered that way).
  std::int64_t max_queued_jobs_per_key = 100;
  /// Deferred jobs: finished ones (succeeded, failed) are deleted this long after they finished,
  /// milliseconds (1000..315360000000, ten years); GET /v1/tollgate/jobs/{id} is then 404.
  milliseconds job_retention{7LL * 24 * 3600 * 1000};
  /// With store_model_in_db: how often `serve` checks the store's model generation, milliseconds
  /// (50..60000): a model added through /model/new on any instance is served within about this long.
  milliseconds model_refresh{1000};
  milliseconds identity_refresh{250};  ///< 1-based line of `price_file` in the config (for error messages); 0 = unset
};

/// The whole loaded configuration.
struct Config {
  std::string source_path;
  std::vector<Deployment> model_list;
  LitellmSettings litellm_settings;
  RouterSettings router_settings;
  GeneralSettings general_settings;
  TollgateSettings tollgate_settings;
  /// `fallback_policy:` (config/policy.hpp; docs/failure_policy.md).
  FallbackPolicyConfig fallback_policy;
  /// `environment_variables:` as resolved (LiteLLM sets these into os.environ at startup;
  /// Tollgate resolves `os.environ/NAME` against them first, see loader.hpp).
  std::map<std::string, std::string> environment_variables;

  /// Effective retries per group: router_settings.num_retries if set in YAML,
  /// else litellm_settings.num_retries, else 2 (LiteLLM's default).
  int effective_num_retries = 2;
  /// LiteLLM's per-call timeout (each upstream attempt): router_settings.timeout, else
  /// litellm_settings.request_timeout; nullopt = none given (an attempt is bounded by the request's
  /// deadline alone). A deployment's `timeout` / `stream_timeout` wins over it.
  std::optional<milliseconds> call_timeout;
  /// LiteLLM's `router_settings.stream_timeout`: the per-call timeout of a streaming call (the
  /// wait for its first chunk, then each read); nullopt = not given. A deployment's
  /// `stream_timeout` wins over it; for streams it wins over every `timeout`.
  std::optional<milliseconds> stream_call_timeout;
  /// The per-call timeout of one attempt on `d`, in LiteLLM's precedence (Router
  /// `_get_stream_timeout`, then `_get_timeout`): for a stream the deployment's `stream_timeout`,
  /// else `router_settings.stream_timeout`, else as for any call: the deployment's `timeout`,
  /// else call_timeout. nullopt = none (the request's deadline alone bounds the attempt).
  std::optional<milliseconds> call_timeout_for(const Deployment& d, bool stream) const {
    if (stream && d.stream_timeout) return d.stream_timeout;
    if (stream && stream_call_timeout) return stream_call_timeout;
    if (d.timeout) return d.timeout;
    return call_timeout;
  }
  /// Default whole-request deadline (all attempts; `fallback_policy` budgets.deadline_ms
  /// overrides it per group): 600 s, or the per-call timeout when that is longer.
  milliseconds effective_timeout{600000};

  /// Model groups in first-appearance order (unique `model_name`s).
  std::vector<std::string> model_groups() const;
};

/// A problem found while loading: `path` is the YAML path ("model_list[2].litellm_params.rpm"),
/// `line` is 1-based (0 when unknown).
struct Problem {
  std::string path;
  int line = 0;
  std::string message;
  std::string to_string() const; ///< "model_list[2].litellm_params.rpm (line 14): expected an integer"
};

}  // namespace tollgate::config
