// PriceTable::parse_litellm_json: LiteLLM's model_prices_and_context_window.json → a PriceTable.
// (https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json; the field
// names are LiteLLM's, see the doc comments of ModelPrice.)

#include "budget/json_text.hpp"
#include "budget/price_fields.hpp"
#include "budget/pricing.hpp"

#include <map>

namespace tollgate::budget {
namespace {

using detail::JsonText;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string where(std::string_view key, std::string_view field) {
  std::string out = "entry \"" + std::string(key) + "\"";
  if (!field.empty()) out += ": " + std::string(field);
  return out;
}

std::expected<PerTokenPrice, std::string> price_of(const JsonText& v, std::string_view key, std::string_view field) {
  if (v.kind != JsonText::Kind::number) {
    return std::unexpected(where(key, field) + ": expected a number, got " + std::string(detail::kind_name(v.kind)));
  }
  auto p = parse_price_per_token(v.text);
  if (!p) return std::unexpected(where(key, field) + ": " + p.error());
  return *p;
}

/// A token count: a non-negative integral JSON number (2000000.0 and 2e6 are integral); 0 = not given.
std::expected<std::optional<std::int64_t>, std::string> count_of(const JsonText& v, std::string_view key,
                                                                 std::string_view field) {
  const auto bad = [&](std::string why) { return std::unexpected(where(key, field) + ": " + why); };
  if (v.kind != JsonText::Kind::number) {
    return bad("expected a non-negative integer, got " + std::string(detail::kind_name(v.kind)));
  }
  // parse_dollars reads any exact decimal; an integer count is a whole number of dollars.
  auto n = parse_dollars(v.text);
  if (!n) return bad("expected a non-negative integer, got " + v.text);
  if (*n % kNanosPerDollar != 0) return bad("expected an integer, got " + v.text);
  const std::int64_t tokens = *n / kNanosPerDollar;
  if (tokens == 0) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{tokens};
}

bool nonzero_number(const JsonText& v) {
  if (v.kind != JsonText::Kind::number) return false;
  auto p = parse_price_per_token(v.text);
  return p && p->picos > 0;
}

struct Converted {
  std::optional<ModelPrice> price;  ///< nullopt = skipped (no token price)
};

std::expected<Converted, std::string> convert(std::string_view key, const JsonText& entry,
                                              const LitellmJsonOptions& options) {
  detail::PriceDraft draft;
  bool has_token_price = false;   // input_cost_per_token or output_cost_per_token present
  bool carried_nonzero = false;   // a price we import is > 0
  bool dropped_nonzero = false;   // a price we do not import (per image, second, ...) is > 0
  std::optional<std::int64_t> max_in, max_out, max_tokens;
  std::string source;
  for (const auto& [field, v] : entry.members) {
    if (const auto f = detail::price_field(field)) {
      auto p = price_of(v, key, field);
      if (!p) return std::unexpected(p.error());
      draft.set(*f, *p);
      if (*f == detail::PriceField::input || *f == detail::PriceField::output) has_token_price = true;
      carried_nonzero = carried_nonzero || p->picos > 0;
    } else if (const auto t = config::parse_tier_cost_key(field)) {
      auto p = price_of(v, key, field);
      if (!p) return std::unexpected(p.error());
      draft.tiers[t->above_input_tokens][static_cast<std::size_t>(t->field)] = *p;
      carried_nonzero = carried_nonzero || p->picos > 0;
    } else if (field == "search_context_cost_per_query") {
      if (v.kind != JsonText::Kind::object) {
        return std::unexpected(where(key, field) + ": expected an object, got " + std::string(detail::kind_name(v.kind)));
      }
      if (const JsonText* medium = v.find("search_context_size_medium")) {
        auto p = price_of(*medium, key, field + ".search_context_size_medium");
        if (!p) return std::unexpected(p.error());
        draft.set(detail::PriceField::web_search_call, *p);
        carried_nonzero = carried_nonzero || p->picos > 0;
      }
    } else if (field == "max_input_tokens" || field == "max_output_tokens" || field == "max_tokens") {
      auto c = count_of(v, key, field);
      if (!c) return std::unexpected(c.error());
      (field == "max_input_tokens" ? max_in : field == "max_output_tokens" ? max_out : max_tokens) = *c;
    } else if (field == "source") {
      if (v.kind == JsonText::Kind::string && !v.text.empty()) source = v.text;
    } else if (field.find("cost") != std::string::npos) {
      // A price Tollgate does not model (per image, pixel, second, character, query, batch...):
      // read only to tell a token-priced model from one priced per something else.
      dropped_nonzero = dropped_nonzero || nonzero_number(v);
      if (v.kind == JsonText::Kind::object) {
        for (const auto& [sub, sv] : v.members) dropped_nonzero = dropped_nonzero || nonzero_number(sv);
      }
    }
  }
  if (!has_token_price || (!carried_nonzero && dropped_nonzero)) return Converted{};
  ModelPrice price;
  detail::apply(draft, price);
  price.max_input_tokens = max_in;
  price.max_output_tokens = max_out ? max_out : max_tokens;
  price.source = source.empty() ? options.source : source;
  price.as_of = options.as_of.empty() ? "unknown" : options.as_of;
  if (price.source.empty()) price.source = "unknown";
  return Converted{std::move(price)};
}

}  // namespace

std::expected<PriceTable, std::string> PriceTable::parse_litellm_json(std::string_view json,
                                                                     const LitellmJsonOptions& options,
                                                                     std::size_t* skipped) {
  auto doc = detail::parse_json_text(json);
  if (!doc) return std::unexpected(doc.error());
  if (doc->kind != JsonText::Kind::object) {
    return std::unexpected("expected a JSON object of model name → entry, got " +
                           std::string(detail::kind_name(doc->kind)));
  }
  PriceTable table;
  std::map<std::string, bool> written_lower;  // table key → its JSON key was already lower-case
  std::size_t skipped_count = 0;
  for (const auto& [name, entry] : doc->members) {
    if (name == "sample_spec") continue;
    if (name.empty()) return std::unexpected(where(name, "") + ": empty model name");
    if (entry.kind != JsonText::Kind::object) {
      return std::unexpected(where(name, "") + ": expected an object, got " + std::string(detail::kind_name(entry.kind)));
    }
    auto converted = convert(name, entry, options);
    if (!converted) return std::unexpected(converted.error());
    if (!converted->price) {
      ++skipped_count;
      continue;
    }
    std::string key = lower(name);
    const bool is_lower = key == name;
    ModelPrice& price = *converted->price;
    price.matched_key = key;
    if (auto it = written_lower.find(key); it != written_lower.end()) {
      // Two spellings of one model ("BAAI/bge" and "baai/bge"): the lower-case one wins, else the first.
      if (it->second || !is_lower) continue;
      it->second = true;
      table.entries_.insert_or_assign(key, std::move(price));
      continue;
    }
    written_lower.emplace(key, is_lower);
    table.entries_.emplace(std::move(key), std::move(price));
  }
  if (skipped) *skipped = skipped_count;
  return table;
}

}  // namespace tollgate::budget
