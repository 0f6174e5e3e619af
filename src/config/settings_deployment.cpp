// One model_list entry as tables: the entry, its litellm_params and its model_info. LiteLLM's
// meanings: docs.litellm.ai "proxy/configs" (model_list), "proxy/model_management".
#include "config/section.hpp"
#include "config/sections.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <fstream>
#include <map>
#include <sstream>

#include "config/huggingface.hpp"
#include "config/wildcard.hpp"
#include "config/yaml11.hpp"

namespace tollgate::config::detail {

namespace {

using S = SettingStatus;

/// Provider prefixes Tollgate can serve. Hosted OpenAI-compatible services get their
/// public base URL (as LiteLLM hard-codes them) so an empty api_base always means OpenAI.
struct ProviderInfo {
  std::string_view prefix;
  ProviderKind kind;
  std::string_view default_api_base;  ///< "" = provider layer default (OpenAI, Anthropic)
  std::array<std::string_view, 2> key_env;   ///< api_key when litellm_params has none
  std::array<std::string_view, 2> base_env;  ///< api_base when litellm_params has none
  bool requires_api_base;
};

constexpr std::array kProviders{
    ProviderInfo{"openai", ProviderKind::openai, "", {"OPENAI_API_KEY", ""}, {"OPENAI_BASE_URL", "OPENAI_API_BASE"}, false},
    ProviderInfo{"azure", ProviderKind::azure, "", {"AZURE_API_KEY", "AZURE_OPENAI_API_KEY"}, {"AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT"}, true},
    ProviderInfo{"anthropic", ProviderKind::anthropic, "", {"ANTHROPIC_API_KEY", ""}, {"ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"}, false},
    ProviderInfo{"gemini", ProviderKind::gemini, "", {"GEMINI_API_KEY", "GOOGLE_API_KEY"}, {"GEMINI_API_BASE", ""}, false},
    ProviderInfo{"vertex_ai", ProviderKind::vertex_ai, "", {"", ""}, {"", ""}, false},
    ProviderInfo{"vertex_ai_beta", ProviderKind::vertex_ai, "", {"", ""}, {"", ""}, false},
    // LiteLLM's text-completion-openai/: an OpenAI-compatible server called on /completions only.
    ProviderInfo{"text-completion-openai", ProviderKind::openai, "", {"OPENAI_API_KEY", ""}, {"OPENAI_BASE_URL", "OPENAI_API_BASE"}, false},
    ProviderInfo{"openai_compatible", ProviderKind::openai, "", {"", ""}, {"", ""}, true},
    ProviderInfo{"custom_openai", ProviderKind::openai, "", {"", ""}, {"", ""}, true},
    ProviderInfo{"hosted_vllm", ProviderKind::openai, "", {"HOSTED_VLLM_API_KEY", ""}, {"HOSTED_VLLM_API_BASE", ""}, true},
    ProviderInfo{"vllm", ProviderKind::openai, "", {"", ""}, {"", ""}, true},
    ProviderInfo{"lm_studio", ProviderKind::openai, "", {"LM_STUDIO_API_KEY", ""}, {"LM_STUDIO_API_BASE", ""}, true},
    ProviderInfo{"groq", ProviderKind::openai, "https://api.groq.com/openai/v1", {"GROQ_API_KEY", ""}, {"", ""}, false},
    ProviderInfo{"together_ai", ProviderKind::openai, "https://api.together.xyz/v1", {"TOGETHERAI_API_KEY", "TOGETHER_API_KEY"}, {"", ""}, false},
    ProviderInfo{"deepseek", ProviderKind::openai, "https://api.deepseek.com/v1", {"DEEPSEEK_API_KEY", ""}, {"DEEPSEEK_API_BASE", ""}, false},
    ProviderInfo{"mistral", ProviderKind::openai, "https://api.mistral.ai/v1", {"MISTRAL_API_KEY", ""}, {"MISTRAL_API_BASE", ""}, false},
    // LiteLLM's alias of mistral/ (same base, key and prices).
    ProviderInfo{"mistralai", ProviderKind::openai, "https://api.mistral.ai/v1", {"MISTRAL_API_KEY", ""}, {"MISTRAL_API_BASE", ""}, false},
    ProviderInfo{"ollama", ProviderKind::ollama, "http://localhost:11434", {"OLLAMA_API_KEY", ""}, {"OLLAMA_API_BASE", ""}, false},
    ProviderInfo{"ollama_chat", ProviderKind::ollama_chat, "http://localhost:11434", {"OLLAMA_API_KEY", ""}, {"OLLAMA_API_BASE", ""}, false},
    ProviderInfo{"cohere", ProviderKind::cohere, "https://api.cohere.com", {"COHERE_API_KEY", "CO_API_KEY"}, {"COHERE_API_BASE", ""}, false},
    ProviderInfo{"cohere_chat", ProviderKind::cohere, "https://api.cohere.com", {"COHERE_API_KEY", "CO_API_KEY"}, {"COHERE_API_BASE", ""}, false},
    // Hugging Face (TGI, Inference Endpoints, the HF router): OpenAI-compatible; the URL and
    // model rules are LiteLLM's (config/huggingface.hpp).
    ProviderInfo{"huggingface", ProviderKind::openai, "", {"HF_TOKEN", "HUGGINGFACE_API_KEY"}, {"HF_API_BASE", "HUGGINGFACE_API_BASE"}, false},
    ProviderInfo{"fireworks_ai", ProviderKind::openai, "https://api.fireworks.ai/inference/v1", {"FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"}, {"", ""}, false},
    ProviderInfo{"perplexity", ProviderKind::openai, "https://api.perplexity.ai", {"PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"}, {"", ""}, false},
    ProviderInfo{"xai", ProviderKind::openai, "https://api.x.ai/v1", {"XAI_API_KEY", ""}, {"XAI_API_BASE", ""}, false},
    ProviderInfo{"openrouter", ProviderKind::openai, "https://openrouter.ai/api/v1", {"OPENROUTER_API_KEY", ""}, {"OPENROUTER_API_BASE", ""}, false},
    ProviderInfo{"deepinfra", ProviderKind::openai, "https://api.deepinfra.com/v1/openai", {"DEEPINFRA_API_KEY", ""}, {"", ""}, false},
    ProviderInfo{"cerebras", ProviderKind::openai, "https://api.cerebras.ai/v1", {"CEREBRAS_API_KEY", ""}, {"", ""}, false},
    // AWS: SigV4 credentials, not an api_key (aws_* params or AWS_* variables; see load_aws).
    ProviderInfo{"bedrock", ProviderKind::bedrock, "", {"", ""}, {"AWS_BEDROCK_RUNTIME_ENDPOINT", ""}, false},
    ProviderInfo{"sagemaker", ProviderKind::sagemaker, "", {"", ""}, {"", ""}, false},
    ProviderInfo{"sagemaker_chat", ProviderKind::sagemaker, "", {"", ""}, {"", ""}, false},
};

const ProviderInfo* find_provider(std::string_view prefix) {
  for (const ProviderInfo& p : kProviders)
    if (p.prefix == prefix) return &p;
  return nullptr;
}

std::string supported_prefixes() {
  std::string out;
  for (const ProviderInfo& p : kProviders) {
    if (!out.empty()) out += ", ";
    out += p.prefix;
  }
  return out;
}

constexpr int kTransportEventCount = 7;
constexpr int kDegradationModeCount = 6;

/// Cost keys read from one section (`litellm_params` or `model_info`) of a deployment, before
/// the two are merged (litellm_params wins, key by key).
struct CostSection {
  std::map<std::string_view, std::string> flat;  ///< kDeploymentCostKeys key → normalised decimal
  struct TierValue {
    std::string decimal;
    std::int64_t above_input_tokens = 0;
    Site site;
  };
  std::map<TierCostField, TierValue> tier;
};

const CostKey* find_cost_key(std::string_view k) {
  for (const CostKey& c : kDeploymentCostKeys)
    if (c.key == k) return &c;
  return nullptr;
}

/// Reads `k` into `out` when it is a deployment cost key (kDeploymentCostKeys, a
/// `<field>_above_<N>k_tokens` tier key, or LiteLLM's `search_context_cost_per_query` map);
/// returns false for any other key. Bad values are errors with their path and line.
bool load_cost_key(LoadContext& c, const std::string& k, const YAML::Node& val, const std::string& p, int l, CostSection& out) {
  if (const CostKey* ck = find_cost_key(k)) {
    if (auto d = c.decimal(val, p, l)) out.flat[ck->key] = *d;
    return true;
  }
  if (auto t = parse_tier_cost_key(k)) {
    if (auto d = c.decimal(val, p, l))
      out.tier[t->field] = CostSection::TierValue{*d, t->above_input_tokens, Site{p, line_of(val, l)}};
    return true;
  }
  if (k == "search_context_cost_per_query") {
    // LiteLLM's shape: {search_context_size_low, _medium, _high}; Tollgate prices a call at medium.
    c.for_each_entry(val, p, l, [&](const std::string& size, const YAML::Node& sv, const std::string& sp, int sl) {
      if (size == "search_context_size_medium") {
        if (auto d = c.decimal(sv, sp, sl)) out.flat["web_search_cost_per_call"] = *d;
      } else if (size == "search_context_size_low" || size == "search_context_size_high") {
        if (!c.decimal(sv, sp, sl)) return;  // validated, not used: a call is priced at medium
      } else {
        c.warn(sp, sl, std::string(kUnknownKey));
      }
    });
    return true;
  }
  return false;
}

/// Merges the cost keys of both sections into `d` (litellm_params wins, key by key); tier
/// keys must all name the same threshold.
void merge_costs(LoadContext& c, const CostSection& params, const CostSection& info, Deployment& d) {
  for (const CostKey& ck : kDeploymentCostKeys) {
    if (auto it = params.flat.find(ck.key); it != params.flat.end()) d.*ck.field = it->second;
    else if (auto jt = info.flat.find(ck.key); jt != info.flat.end()) d.*ck.field = jt->second;
  }
  std::map<TierCostField, const CostSection::TierValue*> chosen;
  for (const auto& [field, value] : info.tier) chosen[field] = &value;
  for (const auto& [field, value] : params.tier) chosen[field] = &value;
  if (chosen.empty()) return;
  TierCostOverride tier;
  const CostSection::TierValue* first = nullptr;
  for (const auto& [field, value] : chosen) {
    if (!first) {
      first = value;
      tier.above_input_tokens = value->above_input_tokens;
    } else if (value->above_input_tokens != tier.above_input_tokens) {
      c.error(value->site.path, value->site.line,
            "long-prompt tier keys of one deployment must name one threshold: " +
                std::to_string(value->above_input_tokens / 1000) + "k here, " +
                std::to_string(tier.above_input_tokens / 1000) + "k at " + first->site.path);
      return;
    }
    switch (field) {
      case TierCostField::input_cost_per_token: tier.input_cost_per_token = value->decimal; break;
      case TierCostField::output_cost_per_token: tier.output_cost_per_token = value->decimal; break;
      case TierCostField::cache_read_input_token_cost: tier.cache_read_input_token_cost = value->decimal; break;
      case TierCostField::cache_creation_input_token_cost: tier.cache_creation_input_token_cost = value->decimal; break;
    }
  }
  d.long_prompt_tier_cost = std::move(tier);
}

/// A model_list entry while it is read: the deployment and what its sections combine.
struct Draft {
  Deployment d;
  std::optional<std::string> model, custom_provider;
  CostSection param_costs, info_costs;
  bool has_name = false, has_params = false, has_api_base = false, has_api_key = false, has_api_version = false;
  int model_line = 0, id_line = 0;
  std::size_t errors_before = 0;
  std::optional<std::int64_t> max_tokens_alias;  ///< model_info.max_tokens (LiteLLM's legacy name)
  std::optional<std::int64_t> entry_rpm, entry_tpm, info_rpm, info_tpm;  ///< rpm/tpm outside litellm_params
};

#define TG_READ +[]([[maybe_unused]] LoadContext & c, [[maybe_unused]] Draft & x, [[maybe_unused]] const YAML::Node& v, [[maybe_unused]] const std::string& p, [[maybe_unused]] int l)

constexpr std::string_view kDefaultParam =
    "Sent when the request does not set it (the caller's value wins, as in LiteLLM); only to this deployment.";

/// A default request parameter that is a number (temperature, top_p, penalties): its JSON text.
void read_number_param(LoadContext& c, Draft& x, const YAML::Node& v, const std::string& p, int l) {
  const std::string key = p.substr(p.rfind('.') + 1);
  if (!v.IsScalar()) {
    c.error(p, line_of(v, l), "expected a number");
    return;
  }
  const std::string text = yaml11_number_text(v.Scalar());
  double d = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, d);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(d)) {
    c.error(p, line_of(v, l), "expected a number, got \"" + v.Scalar() + "\"");
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);  // shortest text that reads back as d
  x.d.default_params.emplace_back(key, std::string(buf, r.ptr));
}

bool litellm_params_pattern(LoadContext& c, Draft& x, const std::string& k, const YAML::Node& v, const std::string& p,
                            int l) {
  return load_cost_key(c, k, v, p, l, x.param_costs);
}

bool model_info_pattern(LoadContext& c, Draft& x, const std::string& k, const YAML::Node& v, const std::string& p,
                        int l) {
  if (load_cost_key(c, k, v, p, l, x.info_costs)) return true;
  if (starts_with(k, "supports_")) {  // capability flags: LiteLLM's UI and pre-call checks
    c.walk_scalars(v, p, l);
    return true;
  }
  return false;
}

void read_api_base(LoadContext& c, Draft& x, const YAML::Node& v, const std::string& p, int l) {
  if (auto s = c.str(v, p, l)) {
    x.d.api_base = *s;
    x.has_api_base = true;
  }
}

const std::array<Field<Draft>, 33> kLitellmParams{{
    {{"model_list[].litellm_params.model", "`provider/upstream-model`", "required", "The call LiteLLM makes",
      S::supported, "See Providers; a provider Tollgate cannot call loads with a warning (400 `unsupported_provider`)."},
     TG_READ {
       x.model = c.str(v, p, l);
       if (!x.model && v.IsNull()) c.error(p, line_of(v, l), "model is required");
     }},
    {{"model_list[].litellm_params.custom_llm_provider", "string", "—", "Provider given separately", S::supported,
      "`model` is then the upstream name."},
     TG_READ { x.custom_provider = c.str(v, p, l); }},
    {{"model_list[].litellm_params.api_base", "URL", "provider default", "Provider URL", S::supported,
      "Must start with `http://` or `https://`; trailing `/` removed."},
     read_api_base},
    {{"model_list[].litellm_params.base_url", "URL", "provider default", "Alias of api_base", S::supported,
      "As `api_base`."},
     read_api_base},
    {{"model_list[].litellm_params.aws_access_key_id", "string", "`AWS_ACCESS_KEY_ID`", "AWS key id (bedrock/, sagemaker/)",
      S::supported, "Signs requests with AWS Signature V4; without a key id, secret and region the deployment "
      "loads with a warning and fails 401 `deployment_misconfigured`, nothing sent."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.cloud.aws_access_key_id = *s;
     }},
    {{"model_list[].litellm_params.aws_secret_access_key", "string", "`AWS_SECRET_ACCESS_KEY`", "AWS secret key",
      S::supported, "As `aws_access_key_id`."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.cloud.aws_secret_access_key = *s;
     }},
    {{"model_list[].litellm_params.aws_session_token", "string", "`AWS_SESSION_TOKEN`", "AWS STS session token",
      S::supported, "Sent (and signed) as `x-amz-security-token`."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.cloud.aws_session_token = *s;
     }},
    {{"model_list[].litellm_params.aws_region_name", "string", "`AWS_REGION`, else `AWS_DEFAULT_REGION`",
      "AWS region", S::supported, "The endpoint's region and the signature's scope."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.cloud.aws_region_name = *s;
     }},
    {{"model_list[].litellm_params.aws_bedrock_runtime_endpoint", "URL", "`AWS_BEDROCK_RUNTIME_ENDPOINT`, else "
      "`https://bedrock-runtime.<region>.amazonaws.com`", "Bedrock endpoint", S::supported, "As `api_base`."},
     read_api_base},
    {{"model_list[].litellm_params.api_key", "string", "provider env var", "Provider key", S::supported,
      "Usually `os.environ/...`; an unset variable leaves the deployment uncallable (500 "
      "`deployment_misconfigured`), never another key."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         x.d.api_key = *s;
         x.has_api_key = true;
       }
     }},
    {{"model_list[].litellm_params.api_version", "string", "Azure: `AZURE_API_VERSION`", "Azure api-version",
      S::supported, "Azure `api-version` query parameter."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         x.d.api_version = *s;
         x.has_api_version = true;
       }
     }},
    {{"model_list[].litellm_params.timeout", "seconds > 0", "none (the request deadline applies)",
      "Timeout of one call", S::supported,
      "Whole non-streaming attempt; for a stream without a `stream_timeout` (its own or "
      "`router_settings.stream_timeout`), as `stream_timeout`. Wins over `router_settings.timeout`."},
     TG_READ { x.d.timeout = c.seconds(v, p, l, false); }},
    {{"model_list[].litellm_params.stream_timeout", "seconds > 0", "none", "Timeout of a streaming call",
      S::supported,
      "Streams, as in LiteLLM (\"maximum time to wait for the first chunk, i.e. first token\"): the time to "
      "the first content delta (an early empty or role-only chunk does not meet it; the first-token limit "
      "is the smaller of this and `first_token_timeout_ms`), and the longest silence between two reads "
      "(the stream's idle limit is the smaller of this and `stream_idle_timeout_ms`)."},
     TG_READ { x.d.stream_timeout = c.seconds(v, p, l, false); }},
    {{"model_list[].litellm_params.rpm", "integer ≥ 0", "unlimited", "Requests per minute of the deployment",
      S::supported, "The router skips the deployment for the rest of the minute once reached."},
     TG_READ { x.d.rpm = c.integer(v, p, l); }},
    {{"model_list[].litellm_params.tpm", "integer ≥ 0", "unlimited", "Tokens per minute of the deployment",
      S::supported, "As `rpm`, in tokens."},
     TG_READ { x.d.tpm = c.integer(v, p, l); }},
    {{"model_list[].litellm_params.weight", "integer ≥ 0", "1", "Pick weight (simple-shuffle)", S::supported, ""},
     TG_READ { x.d.weight = c.integer(v, p, l); }},
    {{"model_list[].litellm_params.<price key>", "decimal $ per token (or per call)", "the price table",
      "The deployment's own price", S::supported,
      "`input_cost_per_token`, `output_cost_per_token`, `cache_read_input_token_cost`, "
      "`cache_creation_input_token_cost(_above_1hr)`, `output_cost_per_reasoning_token`, audio/image/priority/flex "
      "prices, `web_search_cost_per_call` (LiteLLM's `search_context_cost_per_query` map is read as it), and the "
      "long-prompt tier `<price>_above_<N>k_tokens` (one N per deployment). Each wins over the same key in "
      "model_info (docs/pricing.md)."}},
    {{"model_list[].litellm_params.drop_params", "bool", "false", "Drop params the provider does not take",
      S::no_effect, "Tollgate forwards the caller's parameters."}},
    {{"model_list[].litellm_params.max_retries", "integer ≥ 0", "the retry budget", "SDK retries of one call",
      S::supported,
      "The most times one request retries this deployment itself, within its retry budget; then the walk goes on to "
      "the group's other deployments and its fallbacks."},
     TG_READ { x.d.max_retries = c.small_int(v, p, l, 0); }},
    {{"model_list[].litellm_params.input_cost_per_second", "decimal $ per second", "—", "Per-second pricing",
      S::warned, "per-second pricing is not supported: the deployment is priced per token (unpriced when no "
                 "per-token price is known)"}},
    {{"model_list[].litellm_params.output_cost_per_second", "decimal $ per second", "—", "Per-second pricing",
      S::warned, "per-second pricing is not supported: the deployment is priced per token"}},
    {{"model_list[].litellm_params.region_name", "string", "\"\" (unknown)", "Region of the deployment",
      S::supported,
      "A caller whose key, team or end user has `allowed_model_region` is sent only to deployments of that region "
      "(compared case-insensitively), on the primary group, every retry and every fallback; a deployment without "
      "one meets no region requirement (docs/config.md, Routing constraints)."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.region_name = *s;
     }},
    {{"model_list[].litellm_params.tags", "list of strings", "[]", "Tags for tag-based routing", S::supported,
      "Used when router_settings.enable_tag_filtering is on: a request is sent only to deployments carrying its "
      "tags, else to those tagged `default` (docs/config.md, Routing constraints)."},
     TG_READ {
       if (auto t = c.string_list(v, p, l)) x.d.tags = std::move(*t);
     }},
    {{"model_list[].litellm_params.temperature", "number", "—", "Default request parameter", S::supported,
      kDefaultParam},
     TG_READ { read_number_param(c, x, v, p, l); }},
    {{"model_list[].litellm_params.top_p", "number", "—", "Default request parameter", S::supported, kDefaultParam},
     TG_READ { read_number_param(c, x, v, p, l); }},
    {{"model_list[].litellm_params.presence_penalty", "number", "—", "Default request parameter", S::supported,
      kDefaultParam},
     TG_READ { read_number_param(c, x, v, p, l); }},
    {{"model_list[].litellm_params.frequency_penalty", "number", "—", "Default request parameter", S::supported,
      kDefaultParam},
     TG_READ { read_number_param(c, x, v, p, l); }},
    {{"model_list[].litellm_params.seed", "integer", "—", "Default request parameter", S::supported, kDefaultParam},
     TG_READ {
       if (auto n = c.integer(v, p, l, std::numeric_limits<std::int64_t>::min()))
         x.d.default_params.emplace_back("seed", std::to_string(*n));
     }},
    {{"model_list[].litellm_params.max_tokens", "integer ≥ 1", "—", "Default output limit", S::supported,
      "The output limit of a request that sets neither max_tokens nor max_completion_tokens, sent to this deployment "
      "only. It bounds the attempt's reservation like the caller's own limit would (the reservation is the contract)."},
     TG_READ { x.d.default_max_tokens = c.integer(v, p, l, 1); }},
    {{"model_list[].litellm_params.max_completion_tokens", "integer ≥ 1", "—", "Default output limit", S::supported,
      "As max_tokens (which wins when both are given)."},
     TG_READ {
       if (auto n = c.integer(v, p, l, 1); n && !x.d.default_max_tokens) x.d.default_max_tokens = n;
     }},
    {{"model_list[].litellm_params.vertex_project", "string", "`VERTEXAI_PROJECT`", "Google Cloud project (vertex_ai)",
      S::supported, "Without one a vertex_ai deployment loads with a warning and fails with 401 `deployment_misconfigured`."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.cloud.vertex_project = *s;
     }},
    {{"model_list[].litellm_params.vertex_location", "string", "`VERTEXAI_LOCATION`, else `us-central1`",
      "Vertex AI region (vertex_ai)", S::supported, "`global` calls aiplatform.googleapis.com."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.cloud.vertex_location = *s;
     }},
    {{"model_list[].litellm_params.vertex_credentials", "path or JSON text", "`GOOGLE_APPLICATION_CREDENTIALS`",
      "Service-account key (vertex_ai)", S::supported,
      "The key file's path (read at load) or its JSON itself; the OAuth token is minted from it at call time and "
      "refreshed before it expires. Missing or unreadable: a warning, and 401 `deployment_misconfigured` when called."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.cloud.vertex_credentials = *s;
     }},
}};

/// The service-account key `value` names: JSON text as given, else the contents of the file at
/// that path; nullopt when the file cannot be read.
std::optional<std::string> read_credentials(const std::string& value) {
  const auto first = value.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && value[first] == '{') return value;
  std::ifstream in(value, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Vertex AI's project, location and key: litellm_params, else LiteLLM's environment variables;
/// a deployment that lacks one still loads (LiteLLM's behaviour) with a warning, and fails with
/// 401 deployment_misconfigured when called.
void resolve_vertex(LoadContext& c, Deployment& d, const std::string& path, int line) {
  auto& cloud = d.cloud;
  for (std::string_view n : {"VERTEXAI_PROJECT", "VERTEX_PROJECT", "GOOGLE_CLOUD_PROJECT"})
    if (cloud.vertex_project.empty())
      if (auto e = c.lookup_env(n); e && !e->empty()) cloud.vertex_project = *e;
  for (std::string_view n : {"VERTEXAI_LOCATION", "VERTEX_LOCATION"})
    if (cloud.vertex_location.empty())
      if (auto e = c.lookup_env(n); e && !e->empty()) cloud.vertex_location = *e;
  std::string source = "vertex_credentials";
  if (cloud.vertex_credentials.empty())
    if (auto e = c.lookup_env("GOOGLE_APPLICATION_CREDENTIALS"); e && !e->empty()) {
      cloud.vertex_credentials = *e;
      source = "GOOGLE_APPLICATION_CREDENTIALS";
    }
  const char* consequence = ": requests routed to this deployment fail with 401 deployment_misconfigured";
  if (!cloud.vertex_credentials.empty() && !c.read_files() &&
      cloud.vertex_credentials.find_first_not_of(" \t\r\n") != std::string::npos &&
      cloud.vertex_credentials[cloud.vertex_credentials.find_first_not_of(" \t\r\n")] != '{') {
    c.error(join(path, "litellm_params.vertex_credentials"), line,
            source + " names a file; files are not read here (give the service-account JSON inline)");
    cloud.vertex_credentials.clear();
  } else if (!cloud.vertex_credentials.empty()) {
    auto text = read_credentials(cloud.vertex_credentials);
    if (!text) c.warn(join(path, "litellm_params.vertex_credentials"), line,
                      source + " names a file that cannot be read (" + cloud.vertex_credentials + ")" + consequence);
    cloud.vertex_credentials = text.value_or("");
  } else {
    c.warn(join(path, "litellm_params.vertex_credentials"), line,
           std::string("vertex_ai deployment has no service-account credentials (vertex_credentials or "
                       "GOOGLE_APPLICATION_CREDENTIALS)") + consequence);
  }
  if (cloud.vertex_project.empty())
    c.warn(join(path, "litellm_params.vertex_project"), line,
           std::string("vertex_ai deployment has no project (vertex_project or VERTEXAI_PROJECT)") + consequence);
}

const std::array<Field<Draft>, 25> kModelInfo{{
    {{"model_list[].model_info.id", "string", "`<model_name>/<n>`", "Deployment id", S::supported,
      "Unique (a duplicate is an error). A generated id uses n = the deployment's index in its group, so it is "
      "stable while the file's order is; a clash with an explicit id gets a `~2`, `~3` … suffix."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         if (s->empty()) {
           c.error(p, line_of(v, l), "id must not be empty");
         } else {
           x.d.id = *s;
           x.id_line = line_of(v, l);
         }
       }
     }},
    {{"model_list[].model_info.base_model", "string", "\"\"", "Model name for price lookup", S::supported, ""},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.base_model = *s;
     }},
    {{"model_list[].model_info.max_input_tokens", "integer ≥ 1", "the price table's", "Context window", S::supported,
      "Used for context-window fallbacks and admission."},
     TG_READ { x.d.max_input_tokens = c.integer(v, p, l, 1); }},
    {{"model_list[].model_info.max_output_tokens", "integer ≥ 1", "the price table's", "Most output tokens",
      S::supported, "Worst-case output when the request sets no `max_tokens`."},
     TG_READ { x.d.max_output_tokens = c.integer(v, p, l, 1); }},
    {{"model_list[].model_info.max_tokens", "integer ≥ 1", "—", "Legacy name of max_output_tokens", S::supported,
      "Used when `max_output_tokens` is absent."},
     TG_READ { x.max_tokens_alias = c.integer(v, p, l, 1); }},
    {{"model_list[].model_info.access_groups", "list of strings", "[]", "Access groups", S::supported,
      "Keys and teams may be granted a whole access group."},
     TG_READ {
       if (auto list = c.string_list(v, p, l)) x.d.access_groups = std::move(*list);
     }},
    {{"model_list[].model_info.rpm", "integer ≥ 0", "—", "Requests per minute", S::supported,
      "Used when litellm_params has no `rpm`."},
     TG_READ { x.info_rpm = c.integer(v, p, l); }},
    {{"model_list[].model_info.tpm", "integer ≥ 0", "—", "Tokens per minute", S::supported,
      "Used when litellm_params has no `tpm`."},
     TG_READ { x.info_tpm = c.integer(v, p, l); }},
    {{"model_list[].model_info.<price key>", "decimal $", "—", "The deployment's own price", S::supported,
      "Every price key of litellm_params, used key by key when litellm_params has none. A negative value or one "
      "that is not a number is an error; YAML floats (`1.5e-06`) and strings are both exact."}},
    {{"model_list[].model_info.mode", "`chat`, `completion`, `embedding`, …", "none (chat)", "Kind of model",
      S::supported,
      "`embedding`: the deployment serves /v1/embeddings only; `chat` or `completion`: no embeddings; other modes "
      "(and none) leave it to the provider (providers::adapter_for). Also chooses the cheap request `GET /health` "
      "sends this deployment (docs/health_checks.md): `chat` (and `completion`, or none) one message with "
      "max_tokens 1; other modes are skipped by health checks."},
     TG_READ {
       if (auto s = c.str(v, p, l)) x.d.mode = *s;
     }},
    {{"model_list[].model_info.health_check_timeout", "seconds > 0", "general_settings.health_check_timeout",
      "Bound of one health check call", S::supported,
      "How long `GET /health` (and a background round) waits for this deployment's answer before listing it "
      "unhealthy with a timeout."},
     TG_READ { x.d.health_check_timeout = c.seconds(v, p, l, false); }},
    {{"model_list[].model_info.first_token_timeout_ms", "ms ≥ 1", "none", "Stream: time to the first token",
      S::supported,
      "Tollgate's: this deployment's limit to the first content or tool-call delta of a stream (as "
      "`fallback_policy.<layer>.budgets.first_token_timeout_ms`; the smaller applies)."},
     TG_READ {
       if (auto d = c.millis(v, p, l, 1)) x.d.first_token_timeout = *d;
     }},
    {{"model_list[].model_info.stream_idle_timeout_ms", "ms ≥ 1", "none", "Stream: longest silence", S::supported,
      "Tollgate's: this deployment's limit on the silence between two stream events (as "
      "`fallback_policy.<layer>.budgets.stream_idle_timeout_ms`; the smaller applies)."},
     TG_READ {
       if (auto d = c.millis(v, p, l, 1)) x.d.stream_idle_timeout = *d;
     }},
    {{"model_list[].model_info.supports_assistant_prefill", "bool", "the provider's (docs/streaming.md)",
      "Continues a final assistant message", S::supported,
      "Whether this deployment may be asked to continue a stream another deployment cut (issue 13): the text "
      "already delivered is sent as a final assistant message it continues. Default true for `anthropic/`, "
      "`bedrock/` Anthropic models and `mistral/` (sent with `prefix: true`), false for the others; set true on an "
      "OpenAI-compatible server that continues a final assistant message (sent with vLLM's "
      "`continue_final_message: true, add_generation_prompt: false`)."},
     TG_READ { x.d.supports_assistant_prefill = c.boolean(v, p, l); }},
    {{"model_list[].model_info.description", "string", "—", "Shown in LiteLLM's UI", S::no_effect, ""}},
    {{"model_list[].model_info.metadata", "map", "—", "Free-form", S::no_effect, ""}},
    {{"model_list[].model_info.db_model", "bool", "false", "Set by LiteLLM for models in its database",
      S::no_effect, ""}},
    {{"model_list[].model_info.tier", "string", "—", "LiteLLM's UI tier", S::no_effect, ""}},
    {{"model_list[].model_info.litellm_provider", "string", "—", "Provider of the price entry", S::no_effect,
      "The provider comes from litellm_params.model."}},
    {{"model_list[].model_info.key", "string", "—", "Price-map key", S::no_effect, ""}},
    {{"model_list[].model_info.created_at", "time", "—", "Bookkeeping", S::no_effect, ""}},
    {{"model_list[].model_info.updated_at", "time", "—", "Bookkeeping", S::no_effect, ""}},
    {{"model_list[].model_info.created_by", "string", "—", "Bookkeeping", S::no_effect, ""}},
    {{"model_list[].model_info.updated_by", "string", "—", "Bookkeeping", S::no_effect, ""}},
    {{"model_list[].model_info.supports_<capability>", "bool", "—", "Capability flags", S::no_effect,
      "`supports_vision`, `supports_function_calling`, …: requests are forwarded whatever they use."}},
}};

const std::array<Field<Draft>, 5> kEntry{{
    {{"model_list[].model_name", "string", "required", "Client-visible model group", S::supported,
      "May be a wildcard (`*`, `openai/*`, `anthropic/claude-3-*`): see Wildcard routing."},
     TG_READ {
       if (auto s = c.str(v, p, l)) {
         if (s->empty()) c.error(p, line_of(v, l), "model_name must not be empty");
         else x.d.model_name = *s;  // a wildcard (`*`, `openai/*`) serves the names it matches
       }
       x.has_name = true;
     }},
    {{"model_list[].litellm_params", "map", "required", "How the deployment is called", S::supported, "Below."},
     TG_READ {
       x.has_params = true;
       x.model_line = l;
       // A deployment's secrets and URLs from unset variables are left unset (LiteLLM reads
       // them as None and fails the deployment when it is called), with a warning.
       c.set_lenient_env(true);
       c.unset_env.clear();
       load_section<Draft>(c, kLitellmParams, v, p, l, x, kUnknownLitellmKey, litellm_params_pattern);
       c.set_lenient_env(false);
     }},
    {{"model_list[].model_info", "map", "—", "Facts about the deployment", S::supported, "Below."},
     TG_READ { load_section<Draft>(c, kModelInfo, v, p, l, x, kUnknownLitellmKey, model_info_pattern); }},
    {{"model_list[].rpm", "integer ≥ 0", "—", "Requests per minute (entry level)", S::supported,
      "Used when litellm_params and model_info have no `rpm`."},
     TG_READ { x.entry_rpm = c.integer(v, p, l); }},
    {{"model_list[].tpm", "integer ≥ 0", "—", "Tokens per minute (entry level)", S::supported,
      "Used when litellm_params and model_info have no `tpm`."},
     TG_READ { x.entry_tpm = c.integer(v, p, l); }},
}};

#undef TG_READ

/// AWS deployments (bedrock/, sagemaker/, sagemaker_chat/): credentials the params did not give
/// come from the standard AWS variables (as boto3 and LiteLLM read them); LiteLLM's
/// `bedrock/converse/<model>` form names the Converse route Tollgate always uses. A deployment
/// that cannot be signed for loads with a warning and fails each call with 401.
void load_aws(LoadContext& c, Deployment& d, const std::string& mpath, int line) {
  auto env = [&](std::string& field, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) {
      if (!field.empty()) return;
      if (auto v = c.lookup_env(n); v && !v->empty()) field = *v;
    }
  };
  const bool key_from_env = d.cloud.aws_access_key_id.empty();
  env(d.cloud.aws_access_key_id, {"AWS_ACCESS_KEY_ID"});
  env(d.cloud.aws_secret_access_key, {"AWS_SECRET_ACCESS_KEY"});
  if (key_from_env) env(d.cloud.aws_session_token, {"AWS_SESSION_TOKEN"});  // the token goes with its key
  env(d.cloud.aws_region_name, {"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_REGION_NAME"});
  if (d.provider == ProviderKind::bedrock && starts_with(d.upstream_model, "converse/"))
    d.upstream_model = d.upstream_model.substr(9);
  std::string missing;
  if (d.cloud.aws_access_key_id.empty()) missing += "aws_access_key_id (AWS_ACCESS_KEY_ID)";
  if (d.cloud.aws_secret_access_key.empty())
    missing += std::string(missing.empty() ? "" : ", ") + "aws_secret_access_key (AWS_SECRET_ACCESS_KEY)";
  if (d.cloud.aws_region_name.empty())
    missing += std::string(missing.empty() ? "" : ", ") + "aws_region_name (AWS_REGION)";
  if (!missing.empty())
    c.warn(mpath, line, "AWS credentials missing: " + missing +
                            ": requests routed to this deployment fail with 401 deployment_misconfigured, nothing sent");
}

}  // namespace

void load_deployment(LoadContext& c, const YAML::Node& entry, const std::string& path, int line_in, Config& cfg) {
  const int line = line_of(entry, line_in);
  if (!entry.IsMap()) {
    c.error(path, line, std::string("expected a map with model_name and litellm_params, got ") + type_name(entry));
    return;
  }
  Draft x;
  x.model_line = line;
  x.id_line = line;
  x.errors_before = c.errors.size();
  load_section<Draft>(c, kEntry, entry, path, line, x, kUnknownLitellmKey);
  Deployment& d = x.d;
  if (!d.max_output_tokens && x.max_tokens_alias) d.max_output_tokens = x.max_tokens_alias;
  if (!d.rpm) d.rpm = x.info_rpm ? x.info_rpm : x.entry_rpm;
  if (!d.tpm) d.tpm = x.info_tpm ? x.info_tpm : x.entry_tpm;
  if (!x.has_name) c.error(join(path, "model_name"), line, "model_name is required");
  if (!x.has_params) c.error(join(path, "litellm_params"), line, "litellm_params is required");
  else if (!x.model && c.errors.size() == x.errors_before)
    c.error(join(path, "litellm_params.model"), x.model_line, "model is required");
  if (!x.model || d.model_name.empty()) return;
  // From here on a failure still names the group, so fallbacks to it are not reported twice.
  c.broken_groups.insert(d.model_name);

  // Provider: custom_llm_provider, else the "provider/" prefix, else claude* → anthropic.
  const std::string mpath = join(path, "litellm_params.model");
  std::string prefix;
  std::string upstream = *x.model;
  if (x.custom_provider) {
    prefix = *x.custom_provider;
    if (starts_with(upstream, prefix + "/")) upstream = upstream.substr(prefix.size() + 1);
  } else if (auto slash = x.model->find('/'); slash != std::string::npos) {
    prefix = x.model->substr(0, slash);
    upstream = x.model->substr(slash + 1);
  } else {
    prefix = starts_with(*x.model, "claude") ? "anthropic" : "openai";
  }
  // A deployment that cannot be called is kept, with a warning (LiteLLM loads it and fails it
  // when a request reaches it); its group's other deployments and fallbacks still serve.
  // `unusable` empty: its provider is not implemented (400 unsupported_provider); else why its
  // config cannot be called (500 deployment_misconfigured).
  auto keep_uncallable = [&](std::string unusable) {
    d.provider_prefix = prefix;
    d.provider = ProviderKind::unsupported;
    d.unusable = std::move(unusable);
    d.upstream_model = upstream.empty() ? *x.model : upstream;
    merge_costs(c, x.param_costs, x.info_costs, d);
    c.broken_groups.erase(d.model_name);
    c.id_lines.push_back(d.id.empty() ? 0 : x.id_line);
    c.deployment_paths.push_back(path);
    cfg.model_list.push_back(std::move(d));
  };
  const ProviderInfo* info = find_provider(prefix);
  if (!info) {
    c.warn(x.custom_provider ? join(path, "litellm_params.custom_llm_provider") : mpath, x.model_line,
         "provider \"" + prefix + "\" is not supported by tollgate: requests routed to this deployment fail with 400 "
         "unsupported_provider; its group's other deployments and fallbacks still serve (supported: " +
             supported_prefixes() + ")");
    keep_uncallable("");
    return;
  }
  auto keep_unusable = [&](const std::string& wpath, const std::string& why, int wline = 0) {
    c.warn(wpath, wline > 0 ? wline : x.model_line, why + ": requests routed to this deployment fail with 500 deployment_misconfigured; "
                                  "its group's other deployments and fallbacks still serve");
    keep_uncallable(why);
  };
  if (!c.unset_env.empty()) {
    // As LiteLLM reads an unset variable (None): the file loads, the deployment fails when
    // called. Tollgate does not fall back to a provider default key or URL in its place.
    std::string names;
    for (const auto& u : c.unset_env) names += (names.empty() ? "" : ", ") + u.name + " (" + u.path + ")";
    const auto first = c.unset_env.front();
    c.unset_env.clear();
    keep_unusable(first.path, "environment variable(s) not set: " + names, first.line);
    return;
  }
  if (upstream.empty()) {
    keep_unusable(mpath, "model name after the provider prefix is empty");
    return;
  }
  if (is_wildcard(upstream) && !is_wildcard(d.model_name)) {
    // The `*` of the upstream model is what the name's `*` matched: a name without one gives it
    // nothing, and "*" would be sent upstream as a model.
    c.error(mpath, x.model_line,
            "\"" + *x.model + "\" has a `*` but model_name \"" + d.model_name +
                "\" has none, so the `*` would match nothing (wildcard routing needs model_name: \"" +
                (prefix.empty() ? std::string("*") : prefix + "/*") + "\" or similar)");
    return;
  }
  d.provider_prefix = prefix;
  d.provider = info->kind;
  d.upstream_model = upstream;

  // Provider defaults from the environment, as LiteLLM reads them.
  auto from_env = [&](const std::array<std::string_view, 2>& names) -> std::optional<std::string> {
    for (std::string_view n : names)
      if (!n.empty())
        if (auto v = c.lookup_env(n); v && !v->empty()) return v;
    return std::nullopt;
  };
  if (!x.has_api_key)
    if (auto k = from_env(info->key_env)) d.api_key = *k;
  if (!x.has_api_base) {
    if (auto b = from_env(info->base_env)) d.api_base = *b;
    else d.api_base = std::string(info->default_api_base);
  }
  if (d.provider == ProviderKind::vertex_ai) resolve_vertex(c, d, path, x.model_line);
  if (d.provider == ProviderKind::azure && !x.has_api_version)
    if (auto v = c.lookup_env("AZURE_API_VERSION")) d.api_version = *v;

  if (d.provider == ProviderKind::bedrock || d.provider == ProviderKind::sagemaker) load_aws(c, d, mpath, x.model_line);

  while (!d.api_base.empty() && d.api_base.back() == '/') d.api_base.pop_back();
  if (prefix == "huggingface") apply_huggingface_routes(d);
  const std::string bpath = join(path, "litellm_params.api_base");
  if (d.api_base.empty() && info->requires_api_base) {
    keep_unusable(bpath, "api_base is required for provider \"" + prefix + "\"");
    return;
  }
  if (!d.api_base.empty() && !starts_with(d.api_base, "http://") &&
      !starts_with(d.api_base, "https://")) {
    keep_unusable(bpath, "api_base must start with http:// or https://, got \"" + d.api_base + "\"");
    return;
  }
  // litellm_params prices win over model_info ones.
  merge_costs(c, x.param_costs, x.info_costs, d);

  c.broken_groups.erase(d.model_name);
  c.id_lines.push_back(d.id.empty() ? 0 : x.id_line);
  c.deployment_paths.push_back(path);
  cfg.model_list.push_back(std::move(d));
}

void append_deployment_settings(std::vector<SettingInfo>& out) {
  append_infos<Draft>(kEntry, out);
  append_infos<Draft>(kLitellmParams, out);
  append_infos<Draft>(kModelInfo, out);
}

}  // namespace tollgate::config::detail
