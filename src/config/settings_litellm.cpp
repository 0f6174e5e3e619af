// LiteLLM's proxy sections: litellm_settings, router_settings, general_settings, as tables.
// LiteLLM's meanings: docs.litellm.ai "proxy/config_settings", "proxy/reliability", "routing".
#include "config/redis_endpoint.hpp"
#include "config/section.hpp"
#include "config/sections.hpp"

#include "core/database_url.hpp"

#include <array>

namespace tollgate::config::detail {

namespace {

using S = SettingStatus;
// Every reader of these tables has the same parameters: (context, config, value, path, line).
#define TG_READ +[]([[maybe_unused]] LoadContext & c, [[maybe_unused]] Config & cfg, [[maybe_unused]] const YAML::Node& v, [[maybe_unused]] const std::string& p, [[maybe_unused]] int l)

/// A Redis port (1..65535) into `out`; anything else an error naming `what`.
void read_redis_port(LoadContext& c, const YAML::Node& v, const std::string& p, int l, std::string_view what,
                     std::optional<int>& out) {
  if (auto n = c.integer(v, p, l, 1)) {
    if (*n > 65535) c.error(p, line_of(v, l), std::string(what) + " must be 1..65535");
    else out = static_cast<int>(*n);
  }
}

/// A `redis://` URL into `out`; a malformed one (or `rediss://`) an error at `p`.
void read_redis_url(LoadContext& c, const YAML::Node& v, const std::string& p, int l, RedisEndpoint& out) {
  if (auto s = c.str(v, p, l)) {
    auto e = parse_redis_url(*s);
    if (!e) c.error(p, line_of(v, l), e.error());
    else out = *e;
  }
}

/// retry_policy / allowed_fails_policy: `<Exception><suffix>: n` → out[class] = n.
void read_exception_map(LoadContext& c, const YAML::Node& v, const std::string& p, int l, std::string_view suffix,
                        std::array<std::optional<int>, kFailureClassCount>& out) {
  if (!v.IsMap()) {
    c.error(p, line_of(v, l), "expected a map like {RateLimitError" + std::string(suffix) + ": 3}");
    return;
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string kp = join(p, key);
    const int kl = line_of(it->first, l);
    std::optional<FailureClass> cls;
    if (key.size() > suffix.size() && key.ends_with(suffix))
      cls = litellm_exception_class(std::string_view(key).substr(0, key.size() - suffix.size()));
    if (!cls) {
      c.warn(kp, kl, "unknown exception class, ignored: expected one of BadRequestError, AuthenticationError, "
                     "TimeoutError, RateLimitError, ContentPolicyViolationError, InternalServerError followed by " +
                         std::string(suffix));
      continue;
    }
    if (auto n = c.small_int(it->second, kp, kl, 0)) out[static_cast<std::size_t>(*cls)] = *n;
  }
}

constexpr std::string_view kBudgetDurationHelp = "expected a duration like 30s, 30m, 24h, 30d or 1mo, got \"";

/// What each logging callback LiteLLM names becomes in Tollgate (litellm_settings.callbacks,
/// success_callback, failure_callback, service_callback).
void read_callbacks(LoadContext& c, const YAML::Node& v, const std::string& p, int l) {
  std::vector<std::string> names;
  if (v.IsScalar()) {
    if (auto s = c.str(v, p, l)) names.push_back(*s);
  } else if (auto list = c.string_list(v, p, l)) {
    names = std::move(*list);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    const std::string at = v.IsSequence() ? index(p, i) : p;
    const int nl = v.IsSequence() ? line_of(v[i], l) : line_of(v, l);
    if (n == "otel") {
      c.otel_callback = true;  // OTLP span export (tollgate_settings.otel)
    } else if (n == "prometheus" || n == "prometheus_system") {
      // GET /metrics is always served, with LiteLLM's metric names.
    } else if (n == "slack") {
      c.warn(at, nl, "callback 'slack' is not a logging callback in tollgate: use general_settings.alerting: [slack]");
    } else if (n.find('.') != std::string::npos) {
      c.warn(at, nl, "callback '" + n + "' is a Python callback; tollgate cannot run it (spend logs, OTLP spans and "
                     "/metrics carry what it would record)");
    } else {
      c.warn(at, nl, "callback '" + n + "' is not supported by tollgate, ignored: spend logs (GET /spend/logs), OTLP "
                     "spans (callbacks: [otel]) and /metrics carry what it would record");
    }
  }
}

std::vector<FallbackRule>& fallback_list(LitellmSettings& s, std::string_view key) {
  return key == "fallbacks" ? s.fallbacks : key == "context_window_fallbacks" ? s.context_window_fallbacks
                                                                              : s.content_policy_fallbacks;
}

constexpr std::string_view kFallbackShape =
    "fallback list: [{group: [groups]}]";

// ---- litellm_settings -------------------------------------------------------------------

// ---- litellm_settings.cache_params -----------------------------------------------------

constexpr std::string_view kUnknownCacheParam = "not used by tollgate's local/redis response cache, ignored";

/// Seconds ≥ 1 for the cache's ttl keys (LiteLLM takes a float; Tollgate whole seconds, rounded up).
std::optional<std::int64_t> cache_ttl(LoadContext& c, const YAML::Node& v, const std::string& p, int l) {
  auto ms = c.seconds(v, p, l, false);
  if (!ms) return std::nullopt;
  return (ms->count() + 999) / 1000;
}

const std::array<Field<Config>, 16> kCacheParams{{
    {{"litellm_settings.cache_params.type", "`local` or `redis`", "local", "Where answers are kept", S::supported,
      "`local`: in this process (LRU, max_size_in_memory entries). `redis`: a Redis server several instances share. "
      "Any other type LiteLLM has (`redis-semantic`, `qdrant-semantic`, `s3`, `gcs`, `disk`, …) is an error naming it."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         if (*s == "local") cfg.litellm_settings.cache.type = CacheSettings::Type::local;
         else if (*s == "redis") cfg.litellm_settings.cache.type = CacheSettings::Type::redis;
         else
           c.error(p, line_of(v, l), "cache type '" + *s + "' is not supported by tollgate (local and redis are): " +
                                         "semantic, object-storage and disk caches are not built in");
       }
     }},
    {{"litellm_settings.cache_params.ttl", "seconds > 0", "600", "How long an answer is kept", S::supported,
      "A request's `cache.ttl` wins. Whole seconds (a fraction rounds up)."},
     TG_READ { cfg.litellm_settings.cache.ttl_seconds = cache_ttl(c, v, p, l); }},
    {{"litellm_settings.cache_params.default_in_memory_ttl", "seconds > 0", "600", "ttl of the in-memory cache",
      S::supported, "Used by type local when `ttl` is absent."},
     TG_READ { cfg.litellm_settings.cache.default_in_memory_ttl_seconds = cache_ttl(c, v, p, l); }},
    {{"litellm_settings.cache_params.default_in_redis_ttl", "seconds > 0", "600", "ttl of the Redis cache",
      S::supported, "Used by type redis when `ttl` is absent (LiteLLM keeps Redis entries forever by default; "
                    "Tollgate bounds them)."},
     TG_READ { cfg.litellm_settings.cache.default_in_redis_ttl_seconds = cache_ttl(c, v, p, l); }},
    {{"litellm_settings.cache_params.namespace", "string", "\"\"", "Prefix of every cache key", S::supported,
      "Keys are `<namespace>:<sha256>`; a request's `cache.namespace` wins."},
     TG_READ {
       if (auto s = c.str(v, p, l)) cfg.litellm_settings.cache.cache_namespace = *s;
     }},
    {{"litellm_settings.cache_params.supported_call_types", "list of call types", "all",
      "Which calls are cached", S::supported,
      "`acompletion` / `completion` (/chat/completions) and `anthropic_messages` (/v1/messages) are the call types "
      "Tollgate serves; others LiteLLM names (aembedding, atranscription, …) match nothing. `[]` caches nothing."},
     TG_READ {
       if (auto list = c.string_list(v, p, l)) cfg.litellm_settings.cache.supported_call_types = std::move(*list);
     }},
    {{"litellm_settings.cache_params.max_size_in_memory", "integer ≥ 1", "200", "Entries of the in-memory cache",
      S::supported, "Type local: the least recently used entry goes first."},
     TG_READ {
       if (auto n = c.integer(v, p, l, 1)) cfg.litellm_settings.cache.max_size_in_memory = *n;
     }},
    {{"litellm_settings.cache_params.host", "string", "`REDIS_HOST`, else router_settings.redis_host",
      "Redis host (type redis)", S::supported,
      "Without host or url: the `REDIS_URL` / `REDIS_HOST` (`REDIS_PORT`, `REDIS_PASSWORD`) environment variables, "
      "else the router_settings Redis; none of them is a warning and caching is off."},
     TG_READ {
       if (auto s = c.str(v, p, l); s && !s->empty()) cfg.litellm_settings.cache.redis.host = *s;
     }},
    {{"litellm_settings.cache_params.port", "integer 1..65535", "6379", "Redis port (type redis)", S::supported, ""},
     TG_READ { read_redis_port(c, v, p, l, "port", c.cache_redis_port); }},
    {{"litellm_settings.cache_params.password", "string", "—", "Redis password (type redis)", S::supported, ""},
     TG_READ {
       if (auto s = c.str(v, p, l)) c.cache_redis_password = *s;
     }},
    {{"litellm_settings.cache_params.url", "`redis://[[user]:password@]host[:port][/db]`", "—", "Redis as one URL",
      S::supported, "Wins over host/port/password."},
     TG_READ { read_redis_url(c, v, p, l, c.cache_redis_url); }},
    {{"litellm_settings.cache_params.redis_startup_nodes", "list", "—", "Redis Cluster nodes", S::warned,
      "Redis Cluster is not supported by tollgate's cache: set host/url to one node"}},
    {{"litellm_settings.cache_params.service_name", "string", "—", "Redis Sentinel service", S::warned,
      "Redis Sentinel is not supported by tollgate's cache: set host/url to the primary"}},
    {{"litellm_settings.cache_params.sentinel_nodes", "list", "—", "Redis Sentinel nodes", S::warned,
      "Redis Sentinel is not supported by tollgate's cache: set host/url to the primary"}},
    {{"litellm_settings.cache_params.max_connections", "integer", "—", "Redis connection pool size", S::no_effect,
      "The cache uses the project's Redis client: the router_settings one (a connection per worker thread) when it "
      "names the same server, else one connection of its own."}},
    {{"litellm_settings.cache_params.socket_timeout", "seconds", "5", "Redis command timeout", S::no_effect,
      "Redis commands time out after tollgate_settings.redis_timeout_ms; a cache that does not answer is a miss."}},
}};

const std::array<Field<Config>, 32> kLitellmSettings{{
    {{"litellm_settings.num_retries", "integer ≥ 0", "— (see effective values)", "Retries per request",
      S::supported, "Retries within a group; `router_settings.num_retries` wins."},
     TG_READ { cfg.litellm_settings.num_retries = c.small_int(v, p, l); }},
    {{"litellm_settings.request_timeout", "seconds > 0", "—", "Timeout of a call",
      S::supported, "Per-call timeout (each upstream attempt) when `router_settings.timeout` is absent."},
     TG_READ { cfg.litellm_settings.request_timeout = c.seconds(v, p, l, false); }},
    {{"litellm_settings.fallbacks", kFallbackShape, "[]", "Groups tried when a group fails", S::supported,
      "Generic failures (the failure classes that fall back: docs/failure_policy.md)."},
     TG_READ { cfg.litellm_settings.fallbacks = c.fallbacks(v, p, l, c.fallback_sites["fallbacks"]); }},
    {{"litellm_settings.context_window_fallbacks", kFallbackShape, "[]", "Groups tried on context overflow",
      S::supported, "Prompt larger than the group's context window."},
     TG_READ {
       cfg.litellm_settings.context_window_fallbacks = c.fallbacks(v, p, l, c.fallback_sites["context_window_fallbacks"]);
     }},
    {{"litellm_settings.content_policy_fallbacks", kFallbackShape, "[]", "Groups tried on a content-policy refusal",
      S::supported, "Provider refused on content policy."},
     TG_READ {
       cfg.litellm_settings.content_policy_fallbacks = c.fallbacks(v, p, l, c.fallback_sites["content_policy_fallbacks"]);
     }},
    {{"litellm_settings.default_fallbacks", "list of groups", "[]", "Fallbacks of every group without its own",
      S::supported, "Tried for any group without its own fallbacks."},
     TG_READ {
       if (auto list = c.group_list(v, p, l)) cfg.litellm_settings.default_fallbacks = std::move(*list);
     }},
    {{"litellm_settings.max_budget", "decimal $", "—", "Proxy-wide budget", S::supported,
      "The global budget scope, admitted on every paid attempt."},
     TG_READ { cfg.litellm_settings.max_budget = c.decimal(v, p, l); }},
    {{"litellm_settings.budget_duration", "duration: `30s`, `30m`, `24h`, `30d`, `1w`, `1mo`", "—",
      "Reset period of max_budget", S::supported, "Reset period for `max_budget`."},
     TG_READ {
       if (auto d = c.str(v, p, l)) {
         if (valid_budget_duration(*d)) cfg.litellm_settings.budget_duration = *d;
         else c.error(p, line_of(v, l), std::string(kBudgetDurationHelp) + *d + "\"");
       }
     }},
    {{"litellm_settings.max_end_user_budget", "decimal $", "—", "Default budget per end user", S::supported,
      "Default budget per end user (the request's `user` field)."},
     TG_READ { cfg.litellm_settings.max_end_user_budget = c.decimal(v, p, l); }},
    {{"litellm_settings.allowed_fails", "integer ≥ 0", "—", "Failures before a deployment cools down", S::supported,
      "Used when `router_settings.allowed_fails` is absent (the deployment circuit opens after allowed_fails + 1 "
      "failures in a row)."},
     TG_READ { cfg.litellm_settings.allowed_fails = c.small_int(v, p, l); }},
    {{"litellm_settings.callbacks", "list of callback names", "[]", "Logging integrations", S::supported,
      "`otel` turns on OTLP span export (tollgate_settings.otel); `prometheus` / `prometheus_system`: /metrics is "
      "always served. Any other name (langfuse, datadog, s3, a Python class) is a warning naming it."},
     TG_READ { read_callbacks(c, v, p, l); }},
    {{"litellm_settings.success_callback", "list of callback names", "[]", "Logging on success", S::supported,
      "As `callbacks`."},
     TG_READ { read_callbacks(c, v, p, l); }},
    {{"litellm_settings.failure_callback", "list of callback names", "[]", "Logging on failure", S::supported,
      "As `callbacks`."},
     TG_READ { read_callbacks(c, v, p, l); }},
    {{"litellm_settings.service_callback", "list of callback names", "[]", "Health logging of Redis/DB",
      S::supported, "As `callbacks`."},
     TG_READ { read_callbacks(c, v, p, l); }},
    {{"litellm_settings.cache", "bool", "false", "Response caching", S::supported,
      "Exact-match response cache of completed answers (docs/config.md \"Response caching\"); a hit costs $0."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.litellm_settings.cache.enabled = *b;
     }},
    {{"litellm_settings.cache_params", "map", "—", "Response cache settings", S::supported,
      "The keys below; any other key LiteLLM has (s3_*, qdrant_*, similarity_threshold, …) is a warning naming it."},
     TG_READ {
       c.cache_params_line = line_of(v, l);
       load_section<Config>(c, kCacheParams, v, p, l, cfg, kUnknownCacheParam);
     }},
    {{"litellm_settings.default_team_settings", "list of team settings", "—", "Per-team callback settings",
      S::warned, "per-team logging callbacks are not supported by tollgate, ignored (teams are managed through /team/*)"}},
    {{"litellm_settings.drop_params", "bool", "false", "Drop OpenAI params a provider does not take", S::no_effect,
      "Tollgate forwards the caller's parameters; the Anthropic translation carries what Messages has."}},
    {{"litellm_settings.modify_params", "bool", "false", "Rewrite messages for strict providers", S::no_effect,
      "Messages are forwarded as sent."}},
    {{"litellm_settings.set_verbose", "bool", "false", "Debug logging", S::no_effect,
      "Tollgate's log level is its own (`--log-level`)."}},
    {{"litellm_settings.json_logs", "bool", "false", "JSON log lines", S::no_effect,
      "The access log (tollgate_settings.access_log) is JSON lines."}},
    {{"litellm_settings.telemetry", "bool", "true", "LiteLLM's usage telemetry", S::no_effect,
      "Tollgate sends no usage telemetry."}},
    {{"litellm_settings.turn_off_message_logging", "bool", "false", "Keep message text out of logging callbacks",
      S::no_effect, "Tollgate's logs, spend logs and spans hold no message text (unless otel.capture_content)."}},
    {{"litellm_settings.redact_user_api_key_info", "bool", "false", "Keep key info out of logging callbacks",
      S::no_effect, "Spans and logs carry a key's hash and alias, never the key."}},
    {{"litellm_settings.redact_messages_in_exceptions", "bool", "false", "Keep message text out of errors",
      S::no_effect, "Tollgate's own errors never quote the request."}},
    {{"litellm_settings.langfuse_default_tags", "list", "—", "Tags for the langfuse callback", S::no_effect,
      "Only used by the langfuse callback (not supported)."}},
    {{"litellm_settings.enable_preview_features", "bool", "false", "LiteLLM preview features", S::no_effect, ""}},
    {{"litellm_settings.force_ipv4", "bool", "false", "Connect to providers over IPv4", S::no_effect,
      "Addresses are tried as the resolver returns them."}},
    {{"litellm_settings.suppress_debug_info", "bool", "false", "Less debug output", S::no_effect, ""}},
    {{"litellm_settings.service_callbacks", "list of callback names", "[]", "Alias of service_callback",
      S::supported, "As `callbacks`."},
     TG_READ { read_callbacks(c, v, p, l); }},
    {{"litellm_settings.return_response_headers", "bool", "false", "SDK: return the provider's headers",
      S::no_effect, ""}},
    {{"litellm_settings.disable_end_user_cost_tracking_prometheus_only", "bool", "false",
      "Leave end users out of Prometheus labels", S::no_effect, "Tollgate's metrics carry no end-user label."}},
}};

// ---- router_settings --------------------------------------------------------------------

void router_fallbacks(LoadContext& c, const YAML::Node& v, const std::string& p, int l, std::string_view key) {
  LoadContext::RouterFallbacks rf{std::string(key), {}, {}};
  rf.rules = c.fallbacks(v, p, l, rf.sites);
  c.router_fallbacks.push_back(std::move(rf));
}

const std::array<Field<Config>, 26> kRouterSettings{{
    {{"router_settings.routing_strategy",
      "`simple-shuffle`, `least-busy`, `latency-based-routing`, `usage-based-routing`, `usage-based-routing-v2`",
      "`simple-shuffle`", "How a deployment of a group is picked", S::supported,
      "Both usage-based variants are one strategy. Anything else is an error."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         RouterSettings& r = cfg.router_settings;
         if (*s == "simple-shuffle") r.routing_strategy = RoutingStrategy::simple_shuffle;
         else if (*s == "least-busy") r.routing_strategy = RoutingStrategy::least_busy;
         else if (*s == "latency-based-routing") r.routing_strategy = RoutingStrategy::latency_based;
         else if (*s == "usage-based-routing" || *s == "usage-based-routing-v2")
           r.routing_strategy = RoutingStrategy::usage_based;
         else
           c.error(p, line_of(v, l), "unknown routing_strategy \"" + *s +
                                         "\" (expected simple-shuffle, least-busy, "
                                         "latency-based-routing, usage-based-routing or usage-based-routing-v2)");
       }
     }},
    {{"router_settings.num_retries", "integer ≥ 0", "2", "Retries per request", S::supported,
      "Wins over `litellm_settings.num_retries`."},
     TG_READ {
       if (auto n = c.small_int(v, p, l)) {
         cfg.router_settings.num_retries = *n;
         c.router_num_retries = true;
       }
     }},
    {{"router_settings.max_fallbacks", "integer ≥ 0", "5", "Fallback targets tried at most", S::supported,
      "Fallback targets tried at most per request."},
     TG_READ {
       if (auto n = c.small_int(v, p, l)) cfg.router_settings.max_fallbacks = *n;
     }},
    {{"router_settings.allowed_fails", "integer ≥ 0", "3", "Failures before a deployment cools down", S::supported,
      "Failures within `cooldown_time` before a deployment cools down. Wins over `litellm_settings.allowed_fails`."},
     TG_READ {
       if (auto n = c.small_int(v, p, l)) {
         cfg.router_settings.allowed_fails = *n;
         c.router_allowed_fails = true;
       }
     }},
    {{"router_settings.cooldown_time", "seconds ≥ 0", "5", "How long a deployment cools down", S::supported, ""},
     TG_READ {
       if (auto d = c.seconds(v, p, l, true)) cfg.router_settings.cooldown_time = *d;
     }},
    {{"router_settings.retry_after", "seconds ≥ 0", "0", "Minimum wait before a retry", S::supported, ""},
     TG_READ {
       if (auto d = c.seconds(v, p, l, true)) cfg.router_settings.retry_after = *d;
     }},
    {{"router_settings.timeout", "seconds > 0", "600", "Timeout of a call", S::supported,
      "Per-call timeout, as in LiteLLM: each upstream attempt (a retry or fallback gets its own); a "
      "deployment's `timeout` / `stream_timeout` wins, and for a stream `router_settings.stream_timeout`. "
      "Wins over `litellm_settings.request_timeout`. The "
      "whole request's deadline is `fallback_policy` budgets.deadline_ms (default 600 s, or this timeout when "
      "longer)."},
     TG_READ {
       if (auto d = c.seconds(v, p, l, false)) {
         cfg.router_settings.timeout = *d;
         c.router_timeout = true;
       }
     }},
    {{"router_settings.stream_timeout", "seconds > 0", "none", "Timeout of a streaming call", S::supported,
      "Per-call timeout of a stream, as in LiteLLM (\"maximum time to wait for the first chunk\"): the wait "
      "for the first content delta (it is a first-token limit too) and for each read after it. A "
      "deployment's `stream_timeout` wins; for streams it wins over the deployment's `timeout` and "
      "`router_settings.timeout` (LiteLLM's precedence)."},
     TG_READ { cfg.stream_call_timeout = c.seconds(v, p, l, false); }},
    {{"router_settings.fallbacks", kFallbackShape, "[]", "As litellm_settings.fallbacks", S::supported,
      "Wins over `litellm_settings.fallbacks` (with a warning when both are set)."},
     TG_READ { router_fallbacks(c, v, p, l, "fallbacks"); }},
    {{"router_settings.context_window_fallbacks", kFallbackShape, "[]", "As in litellm_settings", S::supported,
      "Wins over the litellm_settings key."},
     TG_READ { router_fallbacks(c, v, p, l, "context_window_fallbacks"); }},
    {{"router_settings.content_policy_fallbacks", kFallbackShape, "[]", "As in litellm_settings", S::supported,
      "Wins over the litellm_settings key."},
     TG_READ { router_fallbacks(c, v, p, l, "content_policy_fallbacks"); }},
    {{"router_settings.default_fallbacks", "list of groups", "[]", "As in litellm_settings", S::supported,
      "Wins over the litellm_settings key."},
     TG_READ {
       if (auto list = c.group_list(v, p, l)) c.router_default_fallbacks = std::move(*list);
     }},
    {{"router_settings.redis_host", "string", "—", "Redis shared by instances", S::supported,
      "With `redis_port` / `redis_password`: the Redis server several instances share (docs/scale_out.md)."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         if (s->empty()) c.error(p, line_of(v, l), "redis_host must not be empty (omit it for one instance)");
         else cfg.router_settings.redis.host = *s;
       }
     }},
    {{"router_settings.redis_port", "integer 1..65535", "6379", "Port of redis_host", S::supported, ""},
     TG_READ { read_redis_port(c, v, p, l, "redis_port", c.redis_port); }},
    {{"router_settings.redis_password", "string", "—", "Password of redis_host", S::supported, ""},
     TG_READ {
       if (auto s = c.str(v, p, l)) c.redis_password = *s;
     }},
    {{"router_settings.redis_url", "`redis://[[user]:password@]host[:port][/db]`", "—", "Redis as one URL",
      S::supported, "Wins over the separate keys. `rediss://` (TLS) is an error."},
     TG_READ { read_redis_url(c, v, p, l, c.redis_url); }},
    {{"router_settings.retry_policy", "map: `<Exception>Retries` → integer ≥ 0", "—", "Retries per exception class",
      S::supported,
      "Mapped onto failure classes: BadRequestError → caller_fix_required, AuthenticationError → "
      "deployment_misconfigured, TimeoutError → unknown_outcome, RateLimitError → retryable_capacity, "
      "ContentPolicyViolationError → content_policy, InternalServerError → transient_provider_error. A request makes "
      "at most that many retries after failures of the class, within its retry budget (never more); a class whose "
      "action does not retry is not retried whatever the count (docs/failure_policy.md)."},
     TG_READ { read_exception_map(c, v, p, l, "Retries", cfg.router_settings.retry_policy); }},
    {{"router_settings.allowed_fails_policy", "map: `<Exception>AllowedFails` → integer ≥ 0", "—",
      "Cooldown threshold per exception class", S::supported,
      "Same mapping as retry_policy: a deployment's circuit opens after more than that many failures of the class in "
      "a row; those failures do not count toward allowed_fails. The caller's own errors (BadRequestError, "
      "ContentPolicyViolationError) never open a circuit."},
     TG_READ { read_exception_map(c, v, p, l, "AllowedFails", cfg.router_settings.allowed_fails_policy); }},
    {{"router_settings.model_group_alias", "map: alias → group or {model, hidden}", "{}",
      "Names that route to another group", S::supported,
      "A request naming the alias is served by the group, as if it had named it (access, budgets, fallbacks and "
      "logs use the group; `requested_model` keeps the alias). An alias wins over a group of the same name, as in "
      "LiteLLM. `hidden: true` keeps it out of /v1/models. A target that is not a group is an error."},
     TG_READ {
       c.for_each_entry(v, p, l, [&](const std::string& alias, const YAML::Node& val, const std::string& ap, int al) {
         RouterSettings::GroupAlias a;
         a.alias = alias;
         if (a.alias.empty()) {
           c.error(ap, al, "an alias must not be empty");
           return;
         }
         std::optional<std::string> group;
         std::string tp = ap;
         if (val.IsMap()) {
           bool has_model = false;
           c.for_each_entry(val, ap, al, [&](const std::string& fk, const YAML::Node& fv, const std::string& fp, int fl) {
             if (fk == "model") {
               has_model = true;
               tp = fp;
               group = c.str(fv, fp, fl);
             } else if (fk == "hidden") {
               if (auto b = c.boolean(fv, fp, fl)) a.hidden = *b;
             } else {
               c.warn(fp, fl, std::string(kUnknownLitellmKey));
             }
           });
           if (!has_model) c.error(ap, al, "expected {model: <group>, hidden: <bool>}");
         } else {
           group = c.str(val, ap, al);
         }
         if (!group) return;
         a.group = *group;
         c.refs.push_back(GroupRef{a.group, tp, al, false});
         cfg.router_settings.model_group_alias.push_back(std::move(a));
       });
     }},
    {{"router_settings.enable_tag_filtering", "bool", "false", "Route by request tags", S::supported,
      "A request (its key's tags and its own `tags` / `metadata.tags`) is sent only to deployments whose "
      "`litellm_params.tags` match, else to those tagged `default`; none → the group is skipped with reason "
      "tag_constraint (docs/config.md, Routing constraints)."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.router_settings.enable_tag_filtering = *b;
     }},
    {{"router_settings.tag_filtering_match_any", "bool", "true", "Tag routing: any tag or all", S::supported,
      "false: a deployment must carry every tag of the request."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.router_settings.tag_filtering_match_any = *b;
     }},
    {{"router_settings.enable_pre_call_checks", "bool", "false", "Skip deployments whose context window is too small",
      S::no_effect, "Tollgate always checks a deployment's context window (model_info.max_input_tokens) first."}},
    {{"router_settings.routing_strategy_args", "map", "—", "Tuning of the routing strategy", S::no_effect,
      "Tollgate's strategies have no tunables."}},
    {{"router_settings.set_verbose", "bool", "false", "Router debug logging", S::no_effect, ""}},
    {{"router_settings.debug_level", "string", "INFO", "Router debug logging", S::no_effect, ""}},
    {{"router_settings.disable_cooldowns", "bool", "false", "Never cool a deployment down", S::warned,
      "deployment circuits stay on; set fallback_policy circuit settings to tune them"}},
}};

// ---- general_settings -------------------------------------------------------------------

const std::array<Field<Config>, 24> kGeneralSettings{{
    {{"general_settings.master_key", "string", "\"\" (no auth)", "Admin key", S::supported,
      "LiteLLM requires an `sk-` prefix; Tollgate warns when it is missing."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         cfg.general_settings.master_key = *s;
         if (!s->empty() && !starts_with(*s, "sk-"))
           c.warn(p, line_of(v, l), "LiteLLM requires master_key to start with \"sk-\"");
       }
     }},
    {{"general_settings.database_url", "`sqlite://path`, a path, or `postgresql://…`",
      "the `DATABASE_URL` environment variable, else `sqlite://<data_dir>/tollgate.db`", "The proxy's database",
      S::supported,
      "Keys, teams, the durable spend ledger and spend logs. SQLite: one gateway process per file "
      "(docs/storage.md). PostgreSQL (libpq URI, `sslmode=` and other parameters included): shared by several "
      "instances. `DATABASE_URL` is read only when the config has none, as in LiteLLM. Another scheme, an empty "
      "sqlite path or a URL that does not parse is an error with this path; messages never show the password."},
     TG_READ {
       // What `serve` can open (core::parse_database_url, also used by the store factory).
       if (auto s = c.str(v, p, l)) {
         if (auto parsed = core::parse_database_url(*s); !parsed) c.error(p, line_of(v, l), parsed.error());
         else cfg.general_settings.database_url = *s;
       }
     }},
    {{"general_settings.database_connection_pool_limit", "integer ≥ 1", "10", "Connections to the database",
      S::supported,
      "PostgreSQL only: connections for admin calls, identity reloads, jobs and queries; the ledger writer has one "
      "more of its own. Values above 1000 are taken as 1000."},
     TG_READ {
       if (auto n = c.integer(v, p, l, 1))
         cfg.general_settings.database_connection_pool_limit = static_cast<int>(std::min<std::int64_t>(*n, 1000));
     }},
    {{"general_settings.enforce_fallback_budget", "bool", "true", "", S::supported,
      "Every fallback target is admitted against every budget scope; one the caller cannot pay for is skipped "
      "(`x-tollgate-skipped-fallbacks`). `false`: fallbacks are charged but never refused."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.general_settings.enforce_fallback_budget = *b;
     }},
    {{"general_settings.enforce_fallback_model_access", "bool", "true", "", S::supported,
      "A fallback group the key may not call (its `models`) is skipped."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.general_settings.enforce_fallback_model_access = *b;
     }},
    {{"general_settings.disable_spend_logs", "bool", "false", "No spend log rows", S::supported,
      "The ledger is always written."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.general_settings.disable_spend_logs = *b;
     }},
    {{"general_settings.block_unpriced_models", "bool", "true", "", S::supported,
      "A model with no known price where any budget attaches → 403 `unpriced_model_blocked`. `false`: served and "
      "recorded as unpriced (never a silent $0)."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.general_settings.block_unpriced_models = *b;
     }},
    {{"general_settings.apply_user_budget_to_team_keys", "bool", "false", "", S::supported,
      "A user's personal `max_budget` also applies to that user's team keys."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.general_settings.apply_user_budget_to_team_keys = *b;
     }},
    {{"general_settings.budget_reset_timezone", "string", "\"UTC\"", "Time zone of budget resets", S::supported,
      "Fixed UTC offset (`+05:30`, `UTC-08:00`) for day/week/month resets (docs/budgets.md)."},
     TG_READ {
       if (auto s = c.str(v, p, l)) cfg.general_settings.budget_reset_timezone = *s;
     }},
    {{"general_settings.alerting", "list: `slack`, `webhook`", "[]", "Alert channels", S::supported,
      "Their URLs come from `SLACK_WEBHOOK_URL` / `WEBHOOK_URL`; a channel without its variable is a warning."},
     TG_READ {
       if (auto list = c.string_list(v, p, l)) {
         c.alerting_channels = std::move(*list);
         c.alerting_line = line_of(v, l);
       }
     }},
    {{"general_settings.alerting_threshold", "seconds", "300", "Slow-request alert threshold", S::warned,
      "accepted and ignored: Tollgate sends every alert kind to every channel"}},
    {{"general_settings.alert_types", "list", "all", "Which alerts are sent", S::warned,
      "accepted and ignored: Tollgate sends every alert kind to every channel"}},
    {{"general_settings.alert_to_webhook_url", "map", "—", "Alert routing per kind", S::warned,
      "accepted and ignored: Tollgate sends every alert kind to every channel"}},
    {{"general_settings.store_model_in_db", "bool", "false", "Models managed through /model/new", S::supported,
      "`true`: `/model/new`, `/model/update` and `/model/delete` keep deployments in the database, next to "
      "`model_list`; every instance on that database serves them within `tollgate_settings.model_refresh_ms`, "
      "without a restart. `false`: those endpoints answer 400 (docs/admin_api.md)."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.general_settings.store_model_in_db = *b;
     }},
    {{"general_settings.proxy_batch_write_at", "seconds", "10", "Spend written to the database every N s", S::warned,
      "tollgate writes each reservation durably before the upstream call and each charge when it ends (group "
      "commit), so there is no batch interval to set"}},
    {{"general_settings.allow_requests_on_db_unavailable", "bool", "false", "Serve when the database is down",
      S::warned, "a paid request is never served unrecorded: with the ledger unavailable it is refused 503 "
                 "ledger_unavailable"}},
    {{"general_settings.custom_auth", "Python path", "—", "Custom auth hook", S::warned,
      "Python auth hooks cannot run in tollgate: the master key and virtual keys authenticate"}},
    {{"general_settings.pass_through_endpoints", "list", "—", "Raw provider routes", S::warned,
      "pass-through endpoints are not supported by tollgate, ignored"}},
    {{"general_settings.background_health_checks", "bool", "false", "Periodic deployment health checks",
      S::supported,
      "`true`: every `health_check_interval` a round of health checks calls each deployment (through the attempt "
      "loop: admitted, settled, spend-logged as `health_check`), its outcomes feed the circuits, and `GET /health` "
      "answers from the last round (docs/health_checks.md)."},
     TG_READ {
       if (auto b = c.boolean(v, p, l)) cfg.general_settings.background_health_checks = *b;
     }},
    {{"general_settings.health_check_interval", "seconds > 0", "300", "Interval of background health checks",
      S::supported, "Time between the starts of two background rounds."},
     TG_READ {
       if (auto s = c.seconds(v, p, l, false)) cfg.general_settings.health_check_interval = *s;
     }},
    {{"general_settings.health_check_timeout", "seconds > 0", "10", "Bound of one health check call", S::supported,
      "Used for deployments without `model_info.health_check_timeout`."},
     TG_READ {
       if (auto s = c.seconds(v, p, l, false)) cfg.general_settings.health_check_timeout = *s;
     }},
    {{"general_settings.maximum_spend_logs_retention_period", "duration", "—", "Spend-log retention", S::warned,
      "spend logs are kept until deleted"}},
    {{"general_settings.disable_master_key_return", "bool", "false", "Hide the master key in /key/info", S::no_effect,
      "Tollgate never returns the master key."}},
    {{"general_settings.ui_access_mode", "string", "all", "Who may open the admin UI", S::no_effect,
      "Tollgate has no admin UI yet."}},
}};

#undef TG_READ

}  // namespace

void load_litellm_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg) {
  load_section<Config>(c, kLitellmSettings, v, path, line, cfg, kUnknownLitellmKey);
}

void load_router_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg) {
  load_section<Config>(c, kRouterSettings, v, path, line, cfg, kUnknownLitellmKey);
  // redis_url wins over the separate keys (LiteLLM reads it first).
  RouterSettings& r = cfg.router_settings;
  if (c.redis_url.configured()) {
    r.redis = c.redis_url;
  } else if (r.redis.configured()) {
    r.redis.port = c.redis_port.value_or(6379);
    r.redis.password = c.redis_password;
  } else if (c.redis_port || !c.redis_password.empty()) {
    c.error(join(path, "redis_host"), line, "redis_port / redis_password need redis_host (or set redis_url)");
  }
}

void load_general_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg) {
  load_section<Config>(c, kGeneralSettings, v, path, line, cfg, kUnknownLitellmKey);
}

namespace {

/// The cache's Redis: cache_params url, else host/port/password, else REDIS_URL / REDIS_HOST
/// (as LiteLLM reads them), else the router_settings Redis. None: a warning, caching off.
void finish_cache_settings(LoadContext& c, Config& cfg) {
  CacheSettings& cs = cfg.litellm_settings.cache;
  const std::string at = "litellm_settings.cache_params";
  if (!cs.enabled || cs.type != CacheSettings::Type::redis) return;
  if (c.cache_redis_url.configured()) {
    cs.redis = c.cache_redis_url;
  } else if (cs.redis.configured()) {
    cs.redis.port = c.cache_redis_port.value_or(6379);
    cs.redis.password = c.cache_redis_password.value_or("");
  } else if (auto url = c.lookup_env("REDIS_URL"); url && !url->empty()) {
    auto e = parse_redis_url(*url);
    if (!e) c.error(at + ".url", c.cache_params_line, "from the REDIS_URL environment variable: " + e.error());
    else cs.redis = *e;
  } else if (auto host = c.lookup_env("REDIS_HOST"); host && !host->empty()) {
    cs.redis.host = *host;
    cs.redis.port = c.cache_redis_port.value_or(6379);
    if (auto port = c.lookup_env("REDIS_PORT"); port && !c.cache_redis_port) {
      try {
        cs.redis.port = std::stoi(*port);
      } catch (...) {
        c.error(at + ".port", c.cache_params_line, "REDIS_PORT is not a port number: \"" + *port + "\"");
      }
    }
    cs.redis.password = c.cache_redis_password ? *c.cache_redis_password : c.lookup_env("REDIS_PASSWORD").value_or("");
  } else if (cfg.router_settings.redis.configured()) {
    cs.redis = cfg.router_settings.redis;
  } else {
    c.warn(at + ".type", c.cache_params_line,
           "type redis names no Redis server (host, url, REDIS_HOST/REDIS_URL or router_settings.redis_host): "
           "response caching is off");
    cs.enabled = false;
  }
}

}  // namespace

void finish_litellm_sections(LoadContext& c, Config& cfg) {
  LitellmSettings& ls = cfg.litellm_settings;
  for (LoadContext::RouterFallbacks& rf : c.router_fallbacks) {
    auto& dst = fallback_list(ls, rf.key);
    if (!dst.empty())
      c.warn("router_settings." + rf.key, 0, "also set in litellm_settings." + rf.key + "; the router_settings value is used");
    dst = std::move(rf.rules);
    c.fallback_sites[rf.key] = std::move(rf.sites);
  }
  if (c.router_default_fallbacks) {
    if (!ls.default_fallbacks.empty())
      c.warn("router_settings.default_fallbacks", 0,
             "also set in litellm_settings.default_fallbacks; the router_settings value is used");
    ls.default_fallbacks = std::move(*c.router_default_fallbacks);
  }

  // As LiteLLM: without general_settings.database_url, DATABASE_URL (environment, or an
  // environment_variables entry) names the database.
  GeneralSettings& g = cfg.general_settings;
  if (g.database_url.empty())
    if (const auto url = c.lookup_env("DATABASE_URL"); url && !url->empty()) {
      if (auto parsed = core::parse_database_url(*url); !parsed)
        c.error("general_settings.database_url", 0, "from the DATABASE_URL environment variable: " + parsed.error());
      else
        g.database_url = *url;
    }

  // general_settings.alerting channels: their URLs come from the environment.
  for (const auto& ch : c.alerting_channels) {
    const char* var = ch == "slack" ? "SLACK_WEBHOOK_URL" : ch == "webhook" ? "WEBHOOK_URL" : nullptr;
    if (!var) {
      c.warn("general_settings.alerting", c.alerting_line, "alerting channel '" + ch + "' is not supported (slack and webhook are)");
      continue;
    }
    auto url = c.lookup_env(var);
    if (!url || url->empty()) {
      c.warn("general_settings.alerting", c.alerting_line, "'" + ch + "' alerting needs the " + std::string(var) + " environment variable");
      continue;
    }
    if (auto ok = check_http_url(*url); !ok) c.error("general_settings.alerting", c.alerting_line, std::string(var) + ": " + ok.error());
    else cfg.tollgate_settings.alerts.webhooks.push_back(*url);
  }

  finish_cache_settings(c, cfg);

  cfg.effective_num_retries = c.router_num_retries ? cfg.router_settings.num_retries
                              : ls.num_retries      ? *ls.num_retries
                                                    : 2;
  cfg.router_settings.num_retries = cfg.effective_num_retries;
  // LiteLLM's timeouts bound each call (litellm.completion(timeout=...)), not the request: a
  // retry or a fallback after a timed-out call gets its own.
  if (c.router_timeout)
    cfg.call_timeout = cfg.router_settings.timeout;
  else if (ls.request_timeout)
    cfg.call_timeout = *ls.request_timeout;
  cfg.effective_timeout = std::max(milliseconds{600000}, cfg.call_timeout.value_or(milliseconds{0}));
  cfg.router_settings.timeout = cfg.call_timeout.value_or(cfg.effective_timeout);
  if (!c.router_allowed_fails && ls.allowed_fails) cfg.router_settings.allowed_fails = *ls.allowed_fails;
}

void append_litellm_settings(std::vector<SettingInfo>& out) {
  append_infos<Config>(kLitellmSettings, out);
  append_infos<Config>(kCacheParams, out);
}
void append_router_settings(std::vector<SettingInfo>& out) { append_infos<Config>(kRouterSettings, out); }
void append_general_settings(std::vector<SettingInfo>& out) { append_infos<Config>(kGeneralSettings, out); }

}  // namespace tollgate::config::detail
