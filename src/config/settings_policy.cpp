// fallback_policy (config/policy.hpp) as tables: Tollgate's governed fallback policy, which
// LiteLLM does not have (docs/failure_policy.md).
#include "config/section.hpp"
#include "config/sections.hpp"

#include <array>

namespace tollgate::config::detail {

namespace {

using S = SettingStatus;
#define TG_READ(T) +[]([[maybe_unused]] LoadContext & c, [[maybe_unused]] T & t, [[maybe_unused]] const YAML::Node& v, [[maybe_unused]] const std::string& p, [[maybe_unused]] int l)

constexpr int kPolicyActionCount = 7;
constexpr int kTransportEventCount = 7;
constexpr int kDegradationModeCount = 6;

// ---- a class rule -----------------------------------------------------------------------

void read_statuses(LoadContext& c, ClassRuleConfig& r, const YAML::Node& v, const std::string& p, int l) {
  if (v.IsNull()) return;
  if (!v.IsSequence()) {
    c.error(p, line_of(v, l), std::string("expected a list of HTTP statuses, got ") + type_name(v));
    return;
  }
  std::vector<int> statuses;
  bool ok = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string ip = index(p, i);
    auto n = c.small_int(v[i], ip, l);
    if (!n) {
      if (v[i].IsNull()) c.error(ip, line_of(v[i], l), "expected an HTTP status, got null");
      ok = false;
    } else if (*n < 100 || *n > 599) {
      c.error(ip, line_of(v[i], l), "not an HTTP status (100..599): " + std::to_string(*n));
      ok = false;
    } else {
      statuses.push_back(*n);
    }
  }
  if (ok) r.status = std::move(statuses);
}

void read_transport(LoadContext& c, ClassRuleConfig& r, const YAML::Node& v, const std::string& p, int l) {
  auto names = c.string_list(v, p, l);
  if (!names) return;
  std::vector<TransportEvent> events;
  bool ok = true;
  for (std::size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    auto e = parse_transport_event(name);
    const int il = line_of(v[i], l);
    if (!e) {
      c.error(index(p, i), il, "unknown transport event \"" + name + "\" (expected " +
                                   names_of<TransportEvent>(kTransportEventCount) + ")");
      ok = false;
    } else if (*e == TransportEvent::none) {
      // Every complete response has transport "none": listing it would capture them all.
      c.error(index(p, i), il, "transport event \"none\" cannot be matched; use status or codes");
      ok = false;
    } else {
      events.push_back(*e);
    }
  }
  if (ok) r.transport = std::move(events);
}

const std::array<Field<ClassRuleConfig>, 5> kClassRule{{
    {{"fallback_policy.<layer>.classes.<class>.status", "list of integers", "the class's defaults", "", S::supported,
      "HTTP statuses, each 100..599 (an error otherwise)."},
     TG_READ(ClassRuleConfig) { read_statuses(c, t, v, p, l); }},
    {{"fallback_policy.<layer>.classes.<class>.codes", "list of strings", "—", "", S::supported,
      "Matched exactly against the provider's `error.code` or `error.type`."},
     TG_READ(ClassRuleConfig) { t.codes = c.string_list(v, p, l); }},
    {{"fallback_policy.<layer>.classes.<class>.messages", "list of strings", "—", "", S::supported,
      "Case-insensitive substrings of the provider's error message (4xx only)."},
     TG_READ(ClassRuleConfig) { t.messages = c.string_list(v, p, l); }},
    {{"fallback_policy.<layer>.classes.<class>.transport", "list of transport events", "—", "", S::supported,
      "`connect_failed`, `failed_before_send`, `reset_after_send`, `timeout_after_send`, `malformed_body`, "
      "`oversized_body`; anything else is an error, `none` included (every complete response has it)."},
     TG_READ(ClassRuleConfig) { read_transport(c, t, v, p, l); }},
    {{"fallback_policy.<layer>.classes.<class>.action", "action name", "the class's default action", "",
      S::supported,
      "`retry_then_fallback` (alias `retry`), `retry_with_circuit`, `fallback`, `next_deployment`, `degrade`, "
      "`fail_fast`, `stop_and_alert` (an error otherwise)."},
     TG_READ(ClassRuleConfig) {
       if (auto s = c.str(v, p, l)) {
         if (auto a = parse_policy_action(*s)) t.action = *a;
         else
           c.error(p, line_of(v, l), "unknown action \"" + *s + "\" (expected " +
                                         names_of<PolicyAction>(kPolicyActionCount) +
                                         "; \"retry\" = retry_then_fallback)");
       }
     }},
}};

// ---- budgets, circuits ------------------------------------------------------------------

const std::array<Field<RequestBudgetConfig>, 8> kBudgets{{
    {{"fallback_policy.<layer>.budgets.max_retries", "integer ≥ 0", "effective `num_retries`", "", S::supported,
      "Retries per request, all groups together."},
     TG_READ(RequestBudgetConfig) {
       if (auto n = c.small_int(v, p, l, 0)) t.max_retries = *n;
     }},
    {{"fallback_policy.<layer>.budgets.max_fallbacks", "integer ≥ 0", "`router_settings.max_fallbacks`", "",
      S::supported, "Fallback targets per request."},
     TG_READ(RequestBudgetConfig) {
       if (auto n = c.small_int(v, p, l, 0)) t.max_fallbacks = *n;
     }},
    {{"fallback_policy.<layer>.budgets.deadline_ms", "ms ≥ 1", "effective `timeout`", "", S::supported,
      "Whole request, all attempts."},
     TG_READ(RequestBudgetConfig) {
       if (auto d = c.millis(v, p, l, 1)) t.deadline = *d;
     }},
    {{"fallback_policy.<layer>.budgets.min_time_left_ms", "ms ≥ 0", "0", "", S::supported,
      "No attempt starts with less time left. A value not below `deadline_ms` (same layer) is a warning."},
     TG_READ(RequestBudgetConfig) {
       if (auto d = c.millis(v, p, l, 0)) t.min_time_left = *d;
     }},
    {{"fallback_policy.<layer>.budgets.max_request_cost", "decimal $ ≥ 0", "none", "", S::supported,
      "All attempts' reservations together."},
     TG_READ(RequestBudgetConfig) {
       if (auto d = c.decimal(v, p, l)) t.max_request_cost = *d;
     }},
    {{"fallback_policy.<layer>.budgets.first_token_timeout_ms", "ms ≥ 1", "none", "", S::supported,
      "Streams: from an attempt's start to its first content or tool-call delta (an empty first chunk does "
      "not count). Hit before anything reached the client, the request goes to the group's next deployment "
      "or its fallback at once (docs/streaming.md). Tightened by `model_info.first_token_timeout_ms`, key "
      "metadata and `x-tollgate-first-token-timeout-ms`."},
     TG_READ(RequestBudgetConfig) {
       if (auto d = c.millis(v, p, l, 1)) t.first_token_timeout = *d;
     }},
    {{"fallback_policy.<layer>.budgets.stream_idle_timeout_ms", "ms ≥ 1", "none", "", S::supported,
      "Streams: the longest silence between two upstream events. Before the client got anything, as "
      "`first_token_timeout_ms`; after, the stream ends with an error event (a cut). Tightened as "
      "`first_token_timeout_ms` (`x-tollgate-stream-idle-timeout-ms`)."},
     TG_READ(RequestBudgetConfig) {
       if (auto d = c.millis(v, p, l, 1)) t.stream_idle_timeout = *d;
     }},
    {{"fallback_policy.<layer>.budgets.stream_holdback_tokens", "integer ≥ 0 or `all`", "0", "", S::supported,
      "Streams, opt-in hold-back (docs/streaming.md): the first N output events (about one token each) are held "
      "before anything reaches the client, so a failure within them is retried unseen on any target; `all` "
      "holds the whole answer. Latency for integrity. Raised (never lowered) by key metadata and "
      "`x-tollgate-stream-holdback`."},
     TG_READ(RequestBudgetConfig) {
       if (v.IsScalar() && v.Scalar() == "all") t.stream_holdback = INT64_MAX;
       else if (auto n = c.integer(v, p, l, 0)) t.stream_holdback = *n;
     }},
}};

const std::array<Field<CircuitConfig>, 5> kCircuit{{
    {{"fallback_policy.<layer>.circuit.consecutive_failures", "integer ≥ 1", "`router_settings.allowed_fails` + 1", "",
      S::supported, "The deployment circuit opens after this many failures in a row."},
     TG_READ(CircuitConfig) {
       if (auto n = c.small_int(v, p, l, 1)) t.consecutive_failures = *n;
     }},
    {{"fallback_policy.<layer>.circuit.failure_ratio", "decimal, 0 < r ≤ 1", "off", "", S::supported,
      "Or opens at this failure ratio over `window_ms`."},
     TG_READ(CircuitConfig) {
       if (auto r = c.ratio(v, p, l)) t.failure_ratio = *r;
     }},
    {{"fallback_policy.<layer>.circuit.window_ms", "ms ≥ 1", "60000", "", S::supported, "Window of the ratio."},
     TG_READ(CircuitConfig) {
       if (auto d = c.millis(v, p, l, 1)) t.window = *d;
     }},
    {{"fallback_policy.<layer>.circuit.min_requests", "integer ≥ 1", "20", "", S::supported,
      "The ratio needs at least this many attempts in the window."},
     TG_READ(CircuitConfig) {
       if (auto n = c.small_int(v, p, l, 1)) t.min_requests = *n;
     }},
    {{"fallback_policy.<layer>.circuit.cooldown_ms", "ms ≥ 0", "`router_settings.cooldown_time`", "", S::supported,
      "Open time before the half-open probe."},
     TG_READ(CircuitConfig) {
       if (auto d = c.millis(v, p, l, 0)) t.cooldown = *d;
     }},
}};

const std::array<Field<FeatureCircuitConfig>, 2> kFeatureCircuit{{
    {{"fallback_policy.<layer>.feature_circuit.consecutive_failures", "integer ≥ 1", "5", "", S::supported,
      "The group's own circuit opens after this many budget misses in a row."},
     TG_READ(FeatureCircuitConfig) {
       if (auto n = c.small_int(v, p, l, 1)) t.consecutive_failures = *n;
     }},
    {{"fallback_policy.<layer>.feature_circuit.cooldown_ms", "ms ≥ 0", "30000", "", S::supported, ""},
     TG_READ(FeatureCircuitConfig) {
       if (auto d = c.millis(v, p, l, 0)) t.cooldown = *d;
     }},
}};

// ---- degradation ------------------------------------------------------------------------

/// A `degradation:` block while it is read (a block is taken whole, never layered).
struct DegradationDraft {
  DegradationConfig d;
  bool has_mode = false, ok = true, seen_max_tokens = false;
  std::optional<Site> model_site, max_tokens_site, caveat_site, max_age_site;
};

const std::array<Field<DegradationDraft>, 5> kDegradation{{
    {{"fallback_policy.<layer>.degradation.mode", "`none`, `equivalent`, `reduced`, `stale_cache`, `deferred`, `fail_fast`",
      "required", "", S::supported,
      "Required when the block is present. `{mode: none}` switches an inherited degradation off for one group."},
     TG_READ(DegradationDraft) {
       if (auto s = c.str(v, p, l)) {
         t.has_mode = true;
         if (auto m = parse_degradation_mode(*s)) {
           t.d.mode = *m;
         } else {
           t.ok = false;
           c.error(p, line_of(v, l), "unknown degradation mode \"" + *s + "\" (expected " +
                                         names_of<DegradationMode>(kDegradationModeCount) + ")");
         }
       }
     }},
    {{"fallback_policy.<layer>.degradation.model", "model group", "—", "", S::supported,
      "Modes `equivalent`, `reduced`: required; must be a model group of model_list (`*` is not)."},
     TG_READ(DegradationDraft) {
       if (auto s = c.str(v, p, l)) {
         t.d.model = *s;
         t.model_site = Site{p, line_of(v, l)};
       }
     }},
    {{"fallback_policy.<layer>.degradation.max_tokens", "integer ≥ 1", "—", "", S::supported,
      "Mode `reduced`: required, the output cap."},
     TG_READ(DegradationDraft) {
       t.seen_max_tokens = !v.IsNull();
       if ((t.d.max_tokens = c.integer(v, p, l, 1))) t.max_tokens_site = Site{p, line_of(v, l)};
     }},
    {{"fallback_policy.<layer>.degradation.caveat", "string", "—", "", S::supported,
      "Mode `reduced`: text of the label."},
     TG_READ(DegradationDraft) {
       if (auto s = c.str(v, p, l)) {
         t.d.caveat = *s;
         t.caveat_site = Site{p, line_of(v, l)};
       }
     }},
    {{"fallback_policy.<layer>.degradation.max_age_ms", "ms ≥ 1", "3600000 (1 hour)", "", S::supported,
      "Mode `stale_cache`: the oldest answer served."},
     TG_READ(DegradationDraft) {
       if ((t.d.max_age = c.millis(v, p, l, 1))) t.max_age_site = Site{p, line_of(v, l)};
     }},
}};

/// A whole `degradation:` block; nullopt when it is unusable (errors reported). A key the mode
/// does not use is a warning.
std::optional<DegradationConfig> load_degradation(LoadContext& c, const YAML::Node& v, const std::string& path,
                                                  int line, const std::string& layer_path) {
  DegradationDraft x;
  const std::size_t errors_before = c.errors.size();
  if (!load_section<DegradationDraft>(c, kDegradation, v, path, line, x, kUnknownKey)) return std::nullopt;
  DegradationConfig& d = x.d;
  if (!x.has_mode) {
    if (x.ok && c.errors.size() == errors_before)
      c.error(join(path, "mode"), line, "mode is required (" + names_of<DegradationMode>(kDegradationModeCount) + ")");
    return std::nullopt;
  }
  if (!x.ok) return std::nullopt;
  bool ok = true;
  const bool needs_model = d.mode == DegradationMode::equivalent || d.mode == DegradationMode::reduced;
  const std::string mode_name(to_string(d.mode));
  if (needs_model) {
    if (d.model.empty()) {
      c.error(join(path, "model"), x.model_site ? x.model_site->line : line,
              "mode " + mode_name + " needs model (the model group that serves degraded requests)");
      ok = false;
    } else {
      c.refs.push_back(GroupRef{d.model, x.model_site->path, x.model_site->line, false});
      c.degradation_model_sites[layer_path] = *x.model_site;
    }
  } else if (x.model_site) {
    c.warn(x.model_site->path, x.model_site->line, "used only by modes equivalent and reduced, ignored for mode " + mode_name);
  }
  if (d.mode == DegradationMode::reduced && !d.max_tokens) {
    // An invalid max_tokens was reported already.
    if (!x.seen_max_tokens) c.error(join(path, "max_tokens"), line, "mode reduced needs max_tokens (the output cap)");
    ok = false;
  } else if (d.mode != DegradationMode::reduced && x.max_tokens_site) {
    c.warn(x.max_tokens_site->path, x.max_tokens_site->line, "used only by mode reduced, ignored for mode " + mode_name);
  }
  if (d.mode != DegradationMode::reduced && x.caveat_site)
    c.warn(x.caveat_site->path, x.caveat_site->line, "used only by mode reduced, ignored for mode " + mode_name);
  if (d.mode != DegradationMode::stale_cache && x.max_age_site)
    c.warn(x.max_age_site->path, x.max_age_site->line, "used only by mode stale_cache, ignored for mode " + mode_name);
  if (!ok) return std::nullopt;
  return d;
}

// ---- a policy layer ---------------------------------------------------------------------

void read_classes(LoadContext& c, GroupPolicyConfig& g, const YAML::Node& v, const std::string& p, int l);

const std::array<Field<GroupPolicyConfig>, 5> kLayer{{
    {{"fallback_policy.<layer>.classes", "map: failure class → class rule", "{}", "", S::supported,
      "Keys are failure classes: `retryable_capacity`, `transient_provider_error`, `caller_fix_required`, "
      "`context_overflow`, `content_policy`, `commercial_limit`, `deployment_misconfigured`, `unknown_outcome` "
      "(an error otherwise)."},
     TG_READ(GroupPolicyConfig) { read_classes(c, t, v, p, l); }},
    {{"fallback_policy.<layer>.budgets", "map", "—", "", S::supported,
      "Request budgets; absent fields fall back to `defaults`, then to the router's settings."},
     TG_READ(GroupPolicyConfig) {
       load_section<RequestBudgetConfig>(c, kBudgets, v, p, l, t.budgets, kUnknownKey);
       if (t.budgets.deadline && t.budgets.min_time_left && *t.budgets.min_time_left >= *t.budgets.deadline)
         c.warn(join(p, "min_time_left_ms"), l, "min_time_left_ms is not below deadline_ms: no attempt could start");
     }},
    {{"fallback_policy.<layer>.circuit", "map", "—", "", S::supported, "Circuit of each deployment in the group."},
     TG_READ(GroupPolicyConfig) { load_section<CircuitConfig>(c, kCircuit, v, p, l, t.circuit, kUnknownKey); }},
    {{"fallback_policy.<layer>.feature_circuit", "map", "—", "", S::supported, "The group's own circuit."},
     TG_READ(GroupPolicyConfig) {
       load_section<FeatureCircuitConfig>(c, kFeatureCircuit, v, p, l, t.feature_circuit, kUnknownKey);
     }},
    {{"fallback_policy.<layer>.degradation", "map", "—", "", S::supported,
      "The group's degradation mode; a group's own block replaces the defaults' one whole."},
     TG_READ(GroupPolicyConfig) {
       if (v.IsNull()) return;
       if (auto d = load_degradation(c, v, p, l, t.path)) t.degradation = std::move(*d);
     }},
}};

void read_classes(LoadContext& c, GroupPolicyConfig& g, const YAML::Node& v, const std::string& p, int l) {
  c.for_each_entry(v, p, l, [&](const std::string& name, const YAML::Node& rule, const std::string& cp, int cl) {
    auto cls = parse_failure_class(name);
    if (!cls) {
      c.error(cp, cl, "unknown failure class \"" + name + "\" (expected " +
                          names_of<FailureClass>(kFailureClassCount) + ")");
      return;
    }
    ClassRuleConfig r;
    r.cls = *cls;
    load_section<ClassRuleConfig>(c, kClassRule, rule, cp, cl, r, kUnknownKey);
    g.classes.push_back(std::move(r));
  });
}

// ---- fallback_policy --------------------------------------------------------------------

const std::array<Field<ProviderCircuitConfig>, 4> kProviderCircuit{{
    {{"fallback_policy.provider_circuit.open_ratio", "decimal, 0 < r ≤ 1", "1.0", "", S::supported,
      "Share of the provider's deployments that must be open for the provider to open."},
     TG_READ(ProviderCircuitConfig) {
       if (auto r = c.ratio(v, p, l)) t.open_ratio = *r;
     }},
    {{"fallback_policy.provider_circuit.min_deployments", "integer ≥ 1", "2", "", S::supported,
      "The ratio applies only to providers with at least this many deployments."},
     TG_READ(ProviderCircuitConfig) {
       if (auto n = c.small_int(v, p, l, 1)) t.min_deployments = *n;
     }},
    {{"fallback_policy.provider_circuit.cooldown_ms", "ms ≥ 0", "30000", "", S::supported,
      "How long an opened provider stays open."},
     TG_READ(ProviderCircuitConfig) {
       if (auto d = c.millis(v, p, l, 0)) t.cooldown = *d;
     }},
    {{"fallback_policy.provider_circuit.commercial_limit_cooldown_ms", "ms ≥ 0", "300000", "", S::supported,
      "How long a provider stays open after a `commercial_limit` answer."},
     TG_READ(ProviderCircuitConfig) {
       if (auto d = c.millis(v, p, l, 0)) t.commercial_limit_cooldown = *d;
     }},
}};

void read_model_groups(LoadContext& c, FallbackPolicyConfig& fp, const YAML::Node& v, const std::string& p, int l) {
  c.for_each_entry(v, p, l, [&](const std::string& group, const YAML::Node& gval, const std::string& gp, int gl) {
    if (group == "*") {
      c.error(gp, gl, "\"*\" is not allowed in model_groups; use fallback_policy.defaults for every group");
      return;
    }
    c.refs.push_back(GroupRef{group, gp, gl, false});
    GroupPolicyConfig g;
    g.group = group;
    g.path = gp;
    g.line = gl;
    load_section<GroupPolicyConfig>(c, kLayer, gval, gp, gl, g, kUnknownKey);
    fp.model_groups.push_back(std::move(g));
  });
}

const std::array<Field<FallbackPolicyConfig>, 4> kFallbackPolicy{{
    {{"fallback_policy.deadline_slack_ms", "ms ≥ 0", "50", "", S::supported,
      "How far past its deadline a request may end."},
     TG_READ(FallbackPolicyConfig) {
       if (auto d = c.millis(v, p, l, 0)) t.deadline_slack = *d;
     }},
    {{"fallback_policy.provider_circuit", "map", "see below", "", S::supported, "When a whole provider opens."},
     TG_READ(FallbackPolicyConfig) {
       load_section<ProviderCircuitConfig>(c, kProviderCircuit, v, p, l, t.provider_circuit, kUnknownKey);
     }},
    {{"fallback_policy.defaults", "policy layer", "empty", "", S::supported, "Applies to every model group."},
     TG_READ(FallbackPolicyConfig) {
       t.defaults.path = p;
       t.defaults.line = l;
       load_section<GroupPolicyConfig>(c, kLayer, v, p, l, t.defaults, kUnknownKey);
     }},
    {{"fallback_policy.model_groups", "map: group → policy layer", "{}", "", S::supported,
      "Each key must be a model group of model_list (an error otherwise, also for `*`: use `defaults`). A group's "
      "settings are layered over `defaults` field by field, except `degradation`."},
     TG_READ(FallbackPolicyConfig) { read_model_groups(c, t, v, p, l); }},
}};

#undef TG_READ

}  // namespace

void load_fallback_policy(LoadContext& c, const YAML::Node& v, const std::string& path, int line, Config& cfg) {
  FallbackPolicyConfig& fp = cfg.fallback_policy;
  fp.defaults.path = join(path, "defaults");
  fp.defaults.line = line;
  load_section<FallbackPolicyConfig>(c, kFallbackPolicy, v, path, line, fp, kUnknownKey);
}

void append_policy_settings(std::vector<SettingInfo>& out) {
  append_infos<FallbackPolicyConfig>(kFallbackPolicy, out);
  append_infos<ProviderCircuitConfig>(kProviderCircuit, out);
  append_infos<GroupPolicyConfig>(kLayer, out);
  append_infos<ClassRuleConfig>(kClassRule, out);
  append_infos<RequestBudgetConfig>(kBudgets, out);
  append_infos<CircuitConfig>(kCircuit, out);
  append_infos<FeatureCircuitConfig>(kFeatureCircuit, out);
  append_infos<DegradationDraft>(kDegradation, out);
}

}  // namespace tollgate::config::detail
