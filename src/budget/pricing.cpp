#include "budget/pricing.hpp"

#include <yaml-cpp/yaml.h>

#include "budget/price_fields.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

namespace tollgate::budget {
namespace {

__extension__ typedef __int128 i128;

// One source of truth: data/prices.yaml, copied verbatim into pricing.inc as a raw string
// (a unit test compares the two byte for byte).
constexpr std::string_view kBundledYaml =
#include "budget/pricing.inc"
    ;

// Prefixes whose bare model names carry that provider's own list prices (docs/pricing.md).
// vertex_ai: Vertex AI lists Gemini at the Gemini API's prices (LiteLLM keys them by the bare name too).
// text-completion-openai/ is OpenAI's own /completions endpoint (LiteLLM): OpenAI's prices.
constexpr std::array<std::string_view, 16> kKnownProviderPrefixes = {
    "openai", "azure",     "azure_ai", "anthropic", "gemini",      "vertex_ai",
    "vertex_ai_beta",      "mistral",  "mistralai", "groq",        "xai",
    "deepseek",            "text-completion-openai", "bedrock",    "cohere", "cohere_chat"};

/// Bedrock cross-region inference profile ids are the model id behind a geography
/// ("us.anthropic.claude-3-5-sonnet-20241022-v2:0"); they are billed at the model's price.
constexpr std::array<std::string_view, 8> kBedrockGeoPrefixes = {"us.", "eu.", "apac.", "us-gov.", "global.", "jp.", "au.", "ca."};

std::string_view strip_bedrock_geo(std::string_view model) {
  if (!model.starts_with("bedrock/")) return {};
  const std::string_view id = model.substr(8);
  for (auto geo : kBedrockGeoPrefixes)
    if (id.starts_with(geo)) return id.substr(geo.size());
  return {};
}

// Every deployment cost key names a field of the table format.
static_assert([] {
  for (const auto& k : config::kDeploymentCostKeys) {
    if (!detail::price_field(k.key)) return false;
  }
  return true;
}());

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string at_line(const YAML::Node& n) {
  const auto mark = n.Mark();
  return mark.line >= 0 ? " (line " + std::to_string(mark.line + 1) + ")" : "";
}

std::expected<PerTokenPrice, std::string> read_price(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) return std::unexpected(path + at_line(n) + ": expected a decimal string");
  auto p = parse_price_per_token(n.Scalar());
  if (!p) return std::unexpected(path + at_line(n) + ": " + p.error());
  return *p;
}

std::expected<std::int64_t, std::string> read_count(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) return std::unexpected(path + at_line(n) + ": expected a positive integer");
  const std::string& s = n.Scalar();
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size() || v <= 0) {
    return std::unexpected(path + at_line(n) + ": expected a positive integer, got '" + s + "'");
  }
  return v;
}

std::expected<std::string, std::string> read_text(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar() || n.Scalar().empty()) return std::unexpected(path + at_line(n) + ": expected a non-empty string");
  return n.Scalar();
}

std::expected<PriceTier, std::string> read_tier(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) return std::unexpected(path + at_line(node) + ": expected a mapping");
  PriceTier tier;
  bool has_above = false, has_in = false, has_out = false;
  for (const auto& kv : node) {
    const std::string field = kv.first.Scalar();
    const std::string fpath = path + "." + field;
    if (field == "above_input_tokens") {
      auto v = read_count(kv.second, fpath);
      if (!v) return std::unexpected(v.error());
      tier.above_input_tokens = *v;
      has_above = true;
    } else if (field == "input_cost_per_token" || field == "output_cost_per_token" ||
               field == "cache_read_input_token_cost" || field == "cache_creation_input_token_cost") {
      auto p = read_price(kv.second, fpath);
      if (!p) return std::unexpected(p.error());
      if (field == "input_cost_per_token") {
        tier.input = *p;
        has_in = true;
      } else if (field == "output_cost_per_token") {
        tier.output = *p;
        has_out = true;
      } else if (field == "cache_read_input_token_cost") {
        tier.cached_input = *p;
      } else {
        tier.cache_write = *p;
      }
    } else {
      return std::unexpected(fpath + at_line(kv.first) + ": unknown field");
    }
  }
  if (!has_above) return std::unexpected(path + ".above_input_tokens: missing");
  if (!has_in) return std::unexpected(path + ".input_cost_per_token: missing");
  if (!has_out) return std::unexpected(path + ".output_cost_per_token: missing");
  return tier;
}

std::expected<ModelPrice, std::string> read_entry(const std::string& key, const YAML::Node& node) {
  const std::string path = "models." + key;
  if (!node.IsMap()) return std::unexpected(path + at_line(node) + ": expected a mapping");
  ModelPrice price;
  price.matched_key = key;
  detail::PriceDraft draft;
  std::optional<PriceTier> tier;
  for (const auto& kv : node) {
    const std::string field = kv.first.Scalar();
    const std::string fpath = path + "." + field;
    const YAML::Node& v = kv.second;
    if (const auto f = detail::price_field(field)) {
      auto p = read_price(v, fpath);
      if (!p) return std::unexpected(p.error());
      draft.set(*f, *p);
    } else if (field == "max_input_tokens" || field == "max_output_tokens") {
      auto c = read_count(v, fpath);
      if (!c) return std::unexpected(c.error());
      (field == "max_input_tokens" ? price.max_input_tokens : price.max_output_tokens) = *c;
    } else if (field == "tier") {
      auto t = read_tier(v, fpath);
      if (!t) return std::unexpected(t.error());
      tier = *t;
    } else if (field == "source" || field == "as_of") {
      auto t = read_text(v, fpath);
      if (!t) return std::unexpected(t.error());
      (field == "source" ? price.source : price.as_of) = *t;
    } else {
      return std::unexpected(fpath + at_line(kv.first) + ": unknown field");
    }
  }
  if (!draft.at(detail::PriceField::input)) return std::unexpected(path + ".input_cost_per_token: missing");
  if (!draft.at(detail::PriceField::output)) return std::unexpected(path + ".output_cost_per_token: missing");
  if (price.source.empty()) return std::unexpected(path + ".source: missing");
  if (price.as_of.empty()) return std::unexpected(path + ".as_of: missing");
  detail::apply(draft, price);
  price.long_prompt_tier = tier;
  return price;
}

/// A YAML double-quoted scalar (JSON-compatible escapes), so any key or text round-trips.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

void write_price(std::string& out, std::string_view indent, std::string_view key, PerTokenPrice p) {
  out += indent;
  out += key;
  out += ": ";
  out += quoted(format_price_per_token(p));
  out += '\n';
}

// Longest key K such that `model` == K + ('-' | '@') + rest.
const ModelPrice* longest_prefix(const std::map<std::string, ModelPrice, std::less<>>& entries,
                                 std::string_view model) {
  for (std::size_t pos = model.size(); pos-- > 0;) {
    if (model[pos] != '-' && model[pos] != '@') continue;
    if (auto it = entries.find(model.substr(0, pos)); it != entries.end()) return &it->second;
  }
  return nullptr;
}

std::string_view strip_known_prefix(std::string_view model) {
  const auto slash = model.find('/');
  if (slash == std::string_view::npos) return model;
  const auto prefix = model.substr(0, slash);
  for (auto known : kKnownProviderPrefixes) {
    if (prefix == known) return model.substr(slash + 1);
  }
  return model;
}

}  // namespace

bool ModelPrice::is_zero() const noexcept {
  auto zero = [](const std::optional<PerTokenPrice>& p) { return !p || p->picos == 0; };
  const bool tier_zero = !long_prompt_tier || (long_prompt_tier->input.picos == 0 && long_prompt_tier->output.picos == 0 &&
                                               zero(long_prompt_tier->cached_input) && zero(long_prompt_tier->cache_write));
  auto service_zero = [&](const std::optional<ServiceTierPrice>& t) {
    return !t || (t->input.picos == 0 && t->output.picos == 0 && zero(t->cached_input));
  };
  return input.picos == 0 && output.picos == 0 && zero(cached_input) && zero(cache_write) && zero(cache_write_1h) &&
         zero(reasoning) && zero(audio_input) && zero(audio_output) && zero(image_output) && zero(web_search_call) &&
         tier_zero && service_zero(priority) && service_zero(flex);
}

std::string_view PriceTable::bundled_yaml() noexcept { return kBundledYaml; }

const PriceTable& PriceTable::bundled() {
  static const PriceTable table = [] {
    auto parsed = parse(kBundledYaml);
    if (!parsed) {
      std::fprintf(stderr, "tollgate: the bundled price table is invalid: %s\n", parsed.error().c_str());
      std::abort();
    }
    return std::move(*parsed);
  }();
  return table;
}

std::expected<PriceTable, std::string> PriceTable::parse(std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return std::unexpected(std::string("price table: invalid YAML: ") + e.what());
  }
  if (!root.IsMap()) return std::unexpected("price table: expected a mapping with `version` and `models`");
  PriceTable table;
  bool has_models = false;
  for (const auto& kv : root) {
    const std::string field = kv.first.Scalar();
    if (field == "version") {
      if (!kv.second.IsScalar() || kv.second.Scalar() != "1") {
        return std::unexpected("version" + at_line(kv.second) + ": unsupported price table version (expected 1)");
      }
    } else if (field == "models") {
      has_models = true;
      if (!kv.second.IsMap()) return std::unexpected("models" + at_line(kv.second) + ": expected a mapping");
      for (const auto& entry : kv.second) {
        const std::string key = entry.first.Scalar();
        if (key.empty() || key != lower(key)) {
          return std::unexpected("models." + key + at_line(entry.first) + ": keys must be non-empty and lower-case");
        }
        auto price = read_entry(key, entry.second);
        if (!price) return std::unexpected(price.error());
        if (!table.entries_.emplace(key, std::move(*price)).second) {
          return std::unexpected("models." + key + at_line(entry.first) + ": duplicate key");
        }
      }
    } else {
      return std::unexpected(field + at_line(kv.first) + ": unknown field");
    }
  }
  if (!has_models) return std::unexpected("models: missing");
  return table;
}

PriceTable PriceTable::merged(const PriceTable& base, const PriceTable& overlay) {
  PriceTable out = base;
  for (const auto& [key, price] : overlay.entries_) out.entries_.insert_or_assign(key, price);
  return out;
}

std::string PriceTable::to_yaml(std::string_view header) const {
  std::string out;
  while (!header.empty()) {
    const auto nl = header.find('\n');
    out += "# ";
    out += header.substr(0, nl);
    out += '\n';
    header = nl == std::string_view::npos ? std::string_view{} : header.substr(nl + 1);
  }
  out += "version: 1\nmodels:\n";
  if (entries_.empty()) out.insert(out.size() - 1, " {}");
  for (const auto& [key, p] : entries_) {
    out += "  " + quoted(key) + ":\n";
    for (const auto& f : detail::kPriceFields) {
      if (const auto v = detail::get(p, f.field)) write_price(out, "    ", f.key, *v);
    }
    if (p.max_input_tokens) out += "    max_input_tokens: " + std::to_string(*p.max_input_tokens) + "\n";
    if (p.max_output_tokens) out += "    max_output_tokens: " + std::to_string(*p.max_output_tokens) + "\n";
    if (const auto& t = p.long_prompt_tier) {
      out += "    tier:\n      above_input_tokens: " + std::to_string(t->above_input_tokens) + "\n";
      write_price(out, "      ", "input_cost_per_token", t->input);
      write_price(out, "      ", "output_cost_per_token", t->output);
      if (t->cached_input) write_price(out, "      ", "cache_read_input_token_cost", *t->cached_input);
      if (t->cache_write) write_price(out, "      ", "cache_creation_input_token_cost", *t->cache_write);
    }
    out += "    source: " + quoted(p.source) + "\n";
    out += "    as_of: " + quoted(p.as_of) + "\n";
  }
  return out;
}

std::optional<ModelPrice> PriceTable::lookup(std::string_view model) const {
  const std::string full = lower(model);
  const std::string_view stripped = strip_known_prefix(full);
  if (auto it = entries_.find(full); it != entries_.end()) return it->second;
  if (auto it = entries_.find(stripped); it != entries_.end()) return it->second;
  if (const auto* p = longest_prefix(entries_, full)) return *p;
  if (const auto* p = longest_prefix(entries_, stripped)) return *p;
  if (const std::string_view g = strip_bedrock_geo(full); !g.empty()) {
    if (auto it = entries_.find(g); it != entries_.end()) return it->second;
    if (const auto* p = longest_prefix(entries_, g)) return *p;
  }
  return std::nullopt;
}

std::string_view to_string(PriceStatus status) noexcept {
  switch (status) {
    case PriceStatus::priced: return "priced";
    case PriceStatus::priced_zero: return "priced_zero";
    case PriceStatus::unpriced: return "unpriced";
  }
  return "unpriced";
}

ResolvedPrice resolve_deployment_price(const config::Deployment& d, const PriceTable& table) {
  std::optional<ModelPrice> from_table;
  if (!d.base_model.empty()) {
    from_table = table.lookup(d.base_model);
  } else if (!d.provider_prefix.empty()) {
    // lookup() strips known provider prefixes itself; an unknown one (vllm/, ollama/, together_ai/)
    // is a host whose prices we do not know, so its model stays unpriced even when the bare name
    // is a provider's model.
    from_table = table.lookup(d.provider_prefix + "/" + d.upstream_model);
  } else {
    from_table = table.lookup(d.upstream_model);
  }

  const auto invalid = [](std::string_view name, const std::string& why) {
    return ResolvedPrice{PriceStatus::unpriced, {}, "unpriced: invalid " + std::string(name) + ": " + why};
  };
  detail::PriceDraft draft;
  for (const auto& key : config::kDeploymentCostKeys) {
    const std::optional<std::string>& text = d.*key.field;
    if (!text) continue;
    auto p = parse_price_per_token(*text);
    if (!p) return invalid(key.key, p.error());
    draft.set(*detail::price_field(key.key), *p);
  }
  if (const auto& t = d.long_prompt_tier_cost) {
    auto& tier = draft.tiers[t->above_input_tokens];
    const std::array<std::pair<const std::optional<std::string>*, std::string_view>, detail::kTierFieldCount> fields{{
        {&t->input_cost_per_token, "input_cost_per_token_above_tier"},
        {&t->output_cost_per_token, "output_cost_per_token_above_tier"},
        {&t->cache_read_input_token_cost, "cache_read_input_token_cost_above_tier"},
        {&t->cache_creation_input_token_cost, "cache_creation_input_token_cost_above_tier"},
    }};
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (!*fields[i].first) continue;
      auto p = parse_price_per_token(**fields[i].first);
      if (!p) return invalid(fields[i].second, p.error());
      tier[i] = *p;
    }
  }

  const bool has_in = draft.at(detail::PriceField::input).has_value();
  const bool has_out = draft.at(detail::PriceField::output).has_value();
  ResolvedPrice r;
  if (has_in && has_out) {
    // A full override: the operator's price, whatever the table says (limits excepted).
    r.price.source = "config";
    if (from_table) {
      r.price.max_input_tokens = from_table->max_input_tokens;
      r.price.max_output_tokens = from_table->max_output_tokens;
    }
    detail::apply(draft, r.price);
    r.how = "config override";
  } else if (draft.any()) {
    if (!from_table) {
      return ResolvedPrice{PriceStatus::unpriced, {},
                           has_in || has_out
                               ? std::string("unpriced: only ") + (has_in ? "input" : "output") +
                                     "_cost_per_token is configured and the model is not in the price table"
                               : std::string("unpriced: price overrides without input_cost_per_token and "
                                             "output_cost_per_token need a price table entry, and the model is "
                                             "not in the price table")};
    }
    r.price = *from_table;
    if (has_in || has_out) {
      // A partial override changes the base price; the table's prices defined relative to it
      // (cache reads and writes, the long-prompt tier, service tiers) no longer hold, so drop them:
      // those tokens then cost the overridden base price unless configured too.
      r.price.cached_input.reset();
      r.price.cache_write.reset();
      r.price.cache_write_1h.reset();
      r.price.long_prompt_tier.reset();
      r.price.priority.reset();
      r.price.flex.reset();
    }
    detail::apply(draft, r.price);
    r.how = "config override + table: " + from_table->matched_key;
  } else if (from_table) {
    r.price = *from_table;
    r.how = "table: " + from_table->matched_key;
  } else if (d.provider == config::ProviderKind::ollama || d.provider == config::ProviderKind::ollama_chat) {
    // A model served by the operator's own Ollama: LiteLLM prices ollama/* at 0 (its table's
    // ollama/ entries are all 0); an explicit 0, not an unknown price.
    r.price.source = "ollama (self-hosted)";
    r.how = "free: ollama (self-hosted)";
  } else {
    return ResolvedPrice{PriceStatus::unpriced, {}, "unpriced"};
  }
  if (d.max_input_tokens) r.price.max_input_tokens = d.max_input_tokens;
  if (d.max_output_tokens) r.price.max_output_tokens = d.max_output_tokens;
  r.status = r.price.is_zero() ? PriceStatus::priced_zero : PriceStatus::priced;
  return r;
}

}  // namespace tollgate::budget
