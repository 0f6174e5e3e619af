// tollgate_settings (with otel and alerts) as tables: Tollgate's own knobs, none of them LiteLLM's.
#include "config/section.hpp"
#include "config/sections.hpp"

#include <algorithm>
#include <array>

namespace tollgate::config::detail {

namespace {

using S = SettingStatus;
#define TG_READ(T) +[]([[maybe_unused]] LoadContext & c, [[maybe_unused]] T & t, [[maybe_unused]] const YAML::Node& v, [[maybe_unused]] const std::string& p, [[maybe_unused]] int l)

/// An integer in lo..hi (error naming the range otherwise).
std::optional<std::int64_t> in_range(LoadContext& c, const YAML::Node& v, const std::string& p, int l, std::int64_t lo,
                                     std::int64_t hi, std::string_view what) {
  auto n = c.integer(v, p, l, lo);
  if (n && *n > hi) {
    c.error(p, line_of(v, l), std::string(what) + " must be " + std::to_string(lo) + ".." + std::to_string(hi) +
                                  (hi == 315360000000 ? " (ten years)" : ""));
    return std::nullopt;
  }
  return n;
}

// ---- tollgate_settings.otel -------------------------------------------------------------

void read_endpoint(LoadContext& c, OtelSettings& o, const YAML::Node& v, const std::string& p, int l, bool base) {
  if (auto s = c.str(v, p, l)) {
    std::string url = *s;
    // `endpoint` is the OTLP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT): /v1/traces is appended.
    if (base) url = (url.ends_with("/") ? url.substr(0, url.size() - 1) : url) + "/v1/traces";
    if (auto ok = check_http_url(url); !ok) c.error(p, line_of(v, l), ok.error());
    else o.traces_endpoint = url;
  }
}

void read_pairs(LoadContext& c, std::vector<std::pair<std::string, std::string>>& out, const YAML::Node& v,
                const std::string& p, int l) {
  c.for_each_entry(v, p, l, [&](const std::string& k, const YAML::Node& value, const std::string& kp, int kl) {
    if (auto s = c.str(value, kp, kl)) out.emplace_back(k, *s);
  });
}

const std::array<Field<OtelSettings>, 9> kOtel{{
    {{"tollgate_settings.otel.enabled", "bool", "false (true when litellm_settings.callbacks names `otel`)", "",
      S::supported, "Export one OpenTelemetry GenAI span per request over OTLP/HTTP JSON (docs/observability.md)."},
     TG_READ(OtelSettings) {
       if (auto b = c.boolean(v, p, l)) {
         t.enabled = *b;
         c.otel_enabled_set = true;
       }
     }},
    {{"tollgate_settings.otel.endpoint", "http(s) URL", "`OTEL_EXPORTER_OTLP_ENDPOINT`", "", S::supported,
      "OTLP base URL; `/v1/traces` is appended."},
     TG_READ(OtelSettings) { read_endpoint(c, t, v, p, l, true); }},
    {{"tollgate_settings.otel.traces_endpoint", "http(s) URL",
      "`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else http://localhost:4318/v1/traces", "", S::supported,
      "Full URL of the traces endpoint."},
     TG_READ(OtelSettings) { read_endpoint(c, t, v, p, l, false); }},
    {{"tollgate_settings.otel.headers", "map", "`OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`", "", S::supported,
      "Sent with every export request."},
     TG_READ(OtelSettings) { read_pairs(c, t.headers, v, p, l); }},
    {{"tollgate_settings.otel.service_name", "string", "`OTEL_SERVICE_NAME`, else `tollgate`", "", S::supported, ""},
     TG_READ(OtelSettings) {
       if (auto s = c.str(v, p, l)) {
         if (s->empty()) c.error(p, line_of(v, l), "service_name must not be empty");
         else t.service_name = *s;
       }
     }},
    {{"tollgate_settings.otel.resource_attributes", "map", "`OTEL_RESOURCE_ATTRIBUTES`", "", S::supported, ""},
     TG_READ(OtelSettings) { read_pairs(c, t.resource_attributes, v, p, l); }},
    {{"tollgate_settings.otel.capture_content", "bool", "false", "", S::supported,
      "Prompt and completion text as span attributes (they may hold personal data)."},
     TG_READ(OtelSettings) {
       if (auto b = c.boolean(v, p, l)) t.capture_content = *b;
     }},
    {{"tollgate_settings.otel.timeout_ms", "ms, 1..60000", "5000", "", S::supported, "One export request."},
     TG_READ(OtelSettings) {
       if (auto n = in_range(c, v, p, l, 1, 60000, "timeout_ms")) t.timeout = milliseconds(*n);
     }},
    {{"tollgate_settings.otel.queue_size", "integer, 1..1000000", "4096", "", S::supported,
      "Spans waiting for export; beyond it new spans are dropped (and counted)."},
     TG_READ(OtelSettings) {
       if (auto n = in_range(c, v, p, l, 1, 1000000, "queue_size")) t.queue_size = *n;
     }},
}};

// ---- tollgate_settings.alerts -----------------------------------------------------------

void read_thresholds(LoadContext& c, AlertSettings& a, const YAML::Node& v, const std::string& p, int l) {
  c.for_each_entry(v, p, l, [&](const std::string& kind, const YAML::Node& tv, const std::string& tp, int tl) {
    if (!a.budget_thresholds.contains(kind)) {
      c.error(tp, tl, "unknown scope kind '" + kind + "' (key, user, end_user, team, organization, team_member, tag, global, model)");
      return;
    }
    if (!tv.IsSequence()) {
      c.error(tp, line_of(tv, tl), "expected a list of percentages, e.g. [50, 80, 100]");
      return;
    }
    std::vector<int> out;
    for (std::size_t i = 0; i < tv.size(); ++i) {
      auto n = c.integer(tv[i], index(tp, i), line_of(tv[i], tl), 1);
      if (!n) return;
      if (*n > 1000) {
        c.error(index(tp, i), line_of(tv[i], tl), "a threshold is a percentage of max_budget, 1..1000");
        return;
      }
      out.push_back(static_cast<int>(*n));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    a.budget_thresholds[kind] = std::move(out);
  });
}

const std::array<Field<AlertSettings>, 3> kAlerts{{
    {{"tollgate_settings.alerts.webhooks", "list of http(s) URLs", "[] (plus general_settings.alerting)", "",
      S::supported, "Slack-compatible incoming webhooks; every alert goes to each."},
     TG_READ(AlertSettings) {
       if (auto list = c.string_list(v, p, l))
         for (std::size_t i = 0; i < list->size(); ++i) {
           if (auto ok = check_http_url((*list)[i]); !ok) c.error(index(p, i), line_of(v[i], l), ok.error());
           else t.webhooks.push_back((*list)[i]);
         }
     }},
    {{"tollgate_settings.alerts.timeout_ms", "ms, 1..60000", "5000", "", S::supported, "One delivery."},
     TG_READ(AlertSettings) {
       if (auto n = in_range(c, v, p, l, 1, 60000, "timeout_ms")) t.timeout = milliseconds(*n);
     }},
    {{"tollgate_settings.alerts.budget_thresholds", "map: scope kind → list of percentages",
      "key/user/end_user 50, 80, 100; others 80, 90, 100", "", S::supported,
      "Percent of max_budget that raises a `budget_threshold` alert, once per budget window."},
     TG_READ(AlertSettings) { read_thresholds(c, t, v, p, l); }},
}};

// ---- tollgate_settings ------------------------------------------------------------------

const std::array<Field<TollgateSettings>, 31> kTollgate{{
    {{"tollgate_settings.max_request_body_bytes", "bytes ≥ 1", "8388608 (8 MiB)", "", S::supported,
      "Larger client bodies get 413."},
     TG_READ(TollgateSettings) {
       if (auto n = c.integer(v, p, l, 1)) t.max_request_body_bytes = *n;
     }},
    {{"tollgate_settings.max_upstream_body_bytes", "bytes ≥ 1", "33554432 (32 MiB)", "", S::supported,
      "A larger upstream body is a transient failure; a 2xx one is charged its whole reservation (its usage cannot "
      "be read)."},
     TG_READ(TollgateSettings) {
       if (auto n = c.integer(v, p, l, 1)) t.max_upstream_body_bytes = *n;
     }},
    {{"tollgate_settings.header_read_timeout_ms", "ms ≥ 1", "10000", "", S::supported,
      "The whole request head must arrive within this."},
     TG_READ(TollgateSettings) {
       if (auto d = c.millis(v, p, l)) t.header_read_timeout = *d;
     }},
    {{"tollgate_settings.body_read_timeout_ms", "ms ≥ 1", "30000", "", S::supported,
      "The whole request body must arrive within this."},
     TG_READ(TollgateSettings) {
       if (auto d = c.millis(v, p, l)) t.body_read_timeout = *d;
     }},
    {{"tollgate_settings.idle_timeout_ms", "ms ≥ 1", "60000", "", S::supported, "Keep-alive idle limit."},
     TG_READ(TollgateSettings) {
       if (auto d = c.millis(v, p, l)) t.idle_timeout = *d;
     }},
    {{"tollgate_settings.connect_timeout_ms", "ms ≥ 1", "5000", "", S::supported, "Upstream TCP + TLS connect."},
     TG_READ(TollgateSettings) {
       if (auto d = c.millis(v, p, l)) t.connect_timeout = *d;
     }},
    {{"tollgate_settings.drain_timeout_ms", "ms, 0..3600000", "30000", "", S::supported,
      "On SIGTERM / SIGINT, how long requests and streams in flight may run before they are cut (0 = at once); "
      "docs/operations.md."},
     TG_READ(TollgateSettings) {
       if (auto d = c.millis(v, p, l, 0)) {
         if (*d > TollgateSettings::kMaxDrainTimeout)
           c.error(p, line_of(v, l),
                   "must be at most " + std::to_string(TollgateSettings::kMaxDrainTimeout.count()) +
                       " (one hour), got " + std::to_string(d->count()));
         else
           t.drain_timeout = *d;
       }
     }},
    {{"tollgate_settings.worker_threads", "integer ≥ 0", "0", "", S::supported, "0 = one per core."},
     TG_READ(TollgateSettings) {
       if (auto n = c.small_int(v, p, l)) t.worker_threads = *n;
     }},
    {{"tollgate_settings.ca_file", "path", "\"\" (system store)", "", S::supported, "PEM bundle for upstream TLS."},
     TG_READ(TollgateSettings) {
       if (auto s = c.str(v, p, l)) t.ca_file = *s;
     }},
    {{"tollgate_settings.tls_verify", "bool", "true", "", S::supported,
      "`false` loads with a warning; never in production."},
     TG_READ(TollgateSettings) {
       if (auto b = c.boolean(v, p, l)) {
         t.tls_verify = *b;
         if (!*b) c.warn(p, line_of(v, l), "upstream TLS certificate verification is disabled");
       }
     }},
    {{"tollgate_settings.max_idle_connections_per_upstream", "integer ≥ 0", "64", "", S::supported, ""},
     TG_READ(TollgateSettings) {
       if (auto n = c.small_int(v, p, l)) t.max_idle_connections_per_upstream = *n;
     }},
    {{"tollgate_settings.max_connections", "integer ≥ 1", "descriptor limit − max(256, limit / 4)", "",
      S::supported,
      "Open client connections, all workers together. At the limit idle keep-alive connections are closed, "
      "oldest first, else accepting pauses until one ends (docs/operations.md). A value leaving fewer than 128 "
      "descriptors is lowered at start, with a warning. Restart required."},
     TG_READ(TollgateSettings) {
       if (auto n = c.integer(v, p, l, 1)) t.max_connections = *n;
     }},
    {{"tollgate_settings.max_connections_per_ip", "integer ≥ 0", "0 (no limit)", "", S::supported,
      "Open client connections from one IP address; one more is answered 429 and closed. Restart required."},
     TG_READ(TollgateSettings) {
       if (auto n = c.integer(v, p, l, 0)) t.max_connections_per_ip = *n;
     }},
    {{"tollgate_settings.data_dir", "path", "`./data`", "", S::supported, "Must not be empty."},
     TG_READ(TollgateSettings) {
       if (auto s = c.str(v, p, l)) {
         if (s->empty()) c.error(p, line_of(v, l), "data_dir must not be empty");
         else t.data_dir = *s;
       }
     }},
    {{"tollgate_settings.budget_output_policy", "`clamp` | `refuse`", "`clamp`", "", S::supported,
      "When the caller's own `max_tokens` costs more than a budget can still pay for: `clamp` sends the smaller "
      "bound the budget pays for (`x-tollgate-output-capped`), `refuse` answers 429 `budget_exceeded` "
      "(docs/budgets.md)."},
     TG_READ(TollgateSettings) {
       if (auto s = c.str(v, p, l)) {
         if (*s == "clamp") t.budget_output_policy = TollgateSettings::BudgetOutputPolicy::clamp;
         else if (*s == "refuse") t.budget_output_policy = TollgateSettings::BudgetOutputPolicy::refuse;
         else c.error(p, line_of(v, l), "budget_output_policy must be `clamp` or `refuse`, got '" + *s + "'");
       }
     }},
    {{"tollgate_settings.end_user_budget_scope", "`team` | `organization` | `global`", "`team`", "", S::supported,
      "Whose end users a request's `user` names, for end-user budgets (`/customer/new`, `max_end_user_budget`): "
      "`team` — the calling key's team (else its organization, else the key itself), `organization` — its "
      "organization (else team, else key), `global` — one namespace for every caller (LiteLLM's behaviour: any key "
      "naming an end user charges and can exhaust its budget). The master key and the anonymous caller always use "
      "the global namespace (docs/budgets.md)."},
     TG_READ(TollgateSettings) {
       if (auto s = c.str(v, p, l)) {
         if (*s == "team") t.end_user_budget_scope = TollgateSettings::EndUserBudgetScope::team;
         else if (*s == "organization") t.end_user_budget_scope = TollgateSettings::EndUserBudgetScope::organization;
         else if (*s == "global") t.end_user_budget_scope = TollgateSettings::EndUserBudgetScope::global;
         else c.error(p, line_of(v, l), "end_user_budget_scope must be `team`, `organization` or `global`, got '" + *s + "'");
       }
     }},
    {{"tollgate_settings.min_output_tokens", "tokens ≥ 1", "16", "", S::supported,
      "The smallest output bound worth sending: an attempt whose budget cannot pay for its input and this many "
      "output tokens is refused (429 `budget_exceeded`)."},
     TG_READ(TollgateSettings) {
       if (auto n = c.integer(v, p, l, 1)) t.min_output_tokens = *n;
     }},
    {{"tollgate_settings.budget_reservation_share_percent", "1..100", "25", "", S::supported,
      "Near the end of a budget, the most of what is left one attempt may reserve when its worst case does not fit "
      "(its output bound is lowered to match). 100 = one attempt may take everything left."},
     TG_READ(TollgateSettings) {
       if (auto n = c.small_int(v, p, l)) {
         if (*n < 1 || *n > 100) c.error(p, line_of(v, l), "budget_reservation_share_percent must be 1..100");
         else t.budget_reservation_share_percent = *n;
       }
     }},
    {{"tollgate_settings.ledger_journal", "bool", "true", "", S::supported,
      "Embedded SQLite store: ledger records are appended to a checksummed journal (`<database>.ledger/`, one "
      "`write` per batch) and folded into the database off the requests' path; `false`: every reserve waits for "
      "a SQLite transaction (docs/storage.md \"Ledger journal\"). Restart required."},
     TG_READ(TollgateSettings) {
       if (auto b = c.boolean(v, p, l)) t.ledger_journal = *b;
     }},
    {{"tollgate_settings.ledger_journal_fsync", "bool", "false", "", S::supported,
      "With `ledger_journal`: `fdatasync` after each journal write, so confirmed records also survive power loss "
      "(each reserve then waits for the disk). Without it they survive a process kill. Restart required."},
     TG_READ(TollgateSettings) {
       if (auto b = c.boolean(v, p, l)) t.ledger_journal_fsync = *b;
     }},
    {{"tollgate_settings.ledger_lease_ms", "ms, 1000..600000", "10000", "", S::supported,
      "Scaled out: how long an instance's open reservations stay its own without a renewal (docs/scale_out.md)."},
     TG_READ(TollgateSettings) {
       if (auto n = in_range(c, v, p, l, 1000, 600000, "ledger_lease_ms")) t.ledger_lease = milliseconds(*n);
     }},
    {{"tollgate_settings.max_queued_jobs_per_key", "integer, 0..1000000", "100", "", S::supported,
      "Deferred jobs one key may have queued or running at once; past it the request is answered as `fail_fast` "
      "(503 `deferred_queue_full`). 0 = the `deferred` mode never queues."},
     TG_READ(TollgateSettings) {
       if (auto n = in_range(c, v, p, l, 0, 1000000, "max_queued_jobs_per_key")) t.max_queued_jobs_per_key = *n;
     }},
    {{"tollgate_settings.job_retention_ms", "ms, 1000..315360000000", "604800000 (7 days)", "", S::supported,
      "Finished deferred jobs are deleted this long after they finished."},
     TG_READ(TollgateSettings) {
       if (auto n = in_range(c, v, p, l, 1000, 315360000000, "job_retention_ms")) t.job_retention = milliseconds(*n);
     }},
    {{"tollgate_settings.identity_refresh_ms", "ms, 50..60000", "250", "", S::supported,
      "How often an instance checks the store for identity changes made elsewhere."},
     TG_READ(TollgateSettings) {
       if (auto n = in_range(c, v, p, l, 50, 60000, "identity_refresh_ms")) t.identity_refresh = milliseconds(*n);
     }},
    {{"tollgate_settings.model_refresh_ms", "ms, 50..60000", "1000", "", S::supported,
      "With `general_settings.store_model_in_db`: how often an instance checks the database for models added, "
      "changed or deleted through `/model/*` (by any instance)."},
     TG_READ(TollgateSettings) {
       if (auto n = in_range(c, v, p, l, 50, 60000, "model_refresh_ms")) t.model_refresh = milliseconds(*n);
     }},
    {{"tollgate_settings.redis_key_prefix", "string, 1..64", "`tollgate:`", "", S::supported,
      "Prefix of every Redis key (several clusters may share one Redis)."},
     TG_READ(TollgateSettings) {
       if (auto s = c.str(v, p, l)) {
         if (s->empty() || s->size() > 64) c.error(p, line_of(v, l), "redis_key_prefix must be 1..64 characters");
         else t.redis_key_prefix = *s;
       }
     }},
    {{"tollgate_settings.redis_timeout_ms", "ms, 10..60000", "1000", "", S::supported,
      "One Redis round trip; past it a paid attempt is refused 503 `ledger_unavailable`."},
     TG_READ(TollgateSettings) {
       if (auto n = in_range(c, v, p, l, 10, 60000, "redis_timeout_ms")) t.redis_timeout = milliseconds(*n);
     }},
    {{"tollgate_settings.alerts", "map", "see below", "", S::supported, "Alert delivery and budget thresholds."},
     TG_READ(TollgateSettings) { load_section<AlertSettings>(c, kAlerts, v, p, l, t.alerts, kUnknownKey); }},
    {{"tollgate_settings.access_log", "path", "\"\" (none)", "", S::supported,
      "One JSON line per request, appended (docs/observability.md)."},
     TG_READ(TollgateSettings) {
       if (auto s = c.str(v, p, l)) t.access_log = *s;
     }},
    {{"tollgate_settings.otel", "map", "see below", "", S::supported, "OpenTelemetry span export."},
     TG_READ(TollgateSettings) { load_section<OtelSettings>(c, kOtel, v, p, l, t.otel, kUnknownKey); }},
    {{"tollgate_settings.price_file", "path", "\"\" (bundled table only)", "", S::supported,
      "A price table read once at start (data/prices.yaml's format or LiteLLM's "
      "model_prices_and_context_window.json); its entries replace the bundled ones with the same key "
      "(docs/pricing.md)."},
     TG_READ(TollgateSettings) {
       if (auto s = c.str(v, p, l)) {
         if (s->empty()) {
           c.error(p, line_of(v, l), "price_file must not be empty (omit it to use the bundled table)");
         } else {
           t.price_file = *s;
           t.price_file_line = line_of(v, l);
         }
       }
     }},
}};

#undef TG_READ

}  // namespace

void load_tollgate_settings(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg) {
  load_section<TollgateSettings>(c, kTollgate, v, path, line, cfg.tollgate_settings, kUnknownKey);
}

void finish_tollgate_settings(LoadContext& c, Config& cfg) {
  auto& o = cfg.tollgate_settings.otel;
  if (c.otel_callback && !c.otel_enabled_set) o.enabled = true;
  if (o.traces_endpoint.empty()) {
    if (auto t = c.lookup_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); t && !t->empty()) {
      o.traces_endpoint = *t;
    } else if (auto e = c.lookup_env("OTEL_EXPORTER_OTLP_ENDPOINT"); e && !e->empty()) {
      std::string base = *e;
      if (base.ends_with("/")) base.pop_back();
      o.traces_endpoint = base + "/v1/traces";
    } else {
      o.traces_endpoint = "http://localhost:4318/v1/traces";
    }
    if (auto t = check_http_url(o.traces_endpoint); !t && o.enabled)
      c.error("tollgate_settings.otel.traces_endpoint", 0, "from the environment: " + t.error());
  }
  if (o.headers.empty())
    if (auto h = c.lookup_env("OTEL_EXPORTER_OTLP_TRACES_HEADERS").value_or(c.lookup_env("OTEL_EXPORTER_OTLP_HEADERS").value_or(""));
        !h.empty())
      o.headers = otel_pairs(h);
  if (o.service_name == "tollgate")
    if (auto n = c.lookup_env("OTEL_SERVICE_NAME"); n && !n->empty()) o.service_name = *n;
  if (o.resource_attributes.empty())
    if (auto r = c.lookup_env("OTEL_RESOURCE_ATTRIBUTES"); r && !r->empty()) o.resource_attributes = otel_pairs(*r);
}

void append_tollgate_settings(std::vector<SettingInfo>& out) {
  append_infos<TollgateSettings>(kTollgate, out);
  append_infos<OtelSettings>(kOtel, out);
  append_infos<AlertSettings>(kAlerts, out);
}

}  // namespace tollgate::config::detail
