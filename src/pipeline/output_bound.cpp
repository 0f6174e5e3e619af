#include "pipeline/output_bound.hpp"

#include <algorithm>
#include <limits>

#include <boost/json.hpp>

#include "budget/operation_bounds.hpp"
#include "budget/token_bounds.hpp"

namespace tollgate::pipeline {
namespace json = boost::json;

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

/// OpenAI's own 400 for a bad integer parameter (param = the field).
core::Error bad_integer(std::string_view field, std::string_view why) {
  return core::Error::caller(400, "invalid_request_error",
                             "Invalid '" + std::string(field) + "': " + std::string(why), std::string(field),
                             "invalid_value");
}

/// A positive integer field: nullopt when absent or null, an error when it is anything else
/// than an integer >= 1 (integral doubles such as 100.0 are accepted, as JSON has no integer type).
std::expected<std::optional<std::int64_t>, core::Error> positive_field(const json::object& o, std::string_view key,
                                                                       std::int64_t max) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<std::int64_t>{};
  std::int64_t n = 0;
  if (const auto* i = v->if_int64()) n = *i;
  else if (const auto* u = v->if_uint64()) n = *u > static_cast<std::uint64_t>(kInt64Max) ? kInt64Max : static_cast<std::int64_t>(*u);
  else if (const auto* d = v->if_double(); d && *d >= -9.2e18 && *d <= 9.2e18 && static_cast<double>(static_cast<std::int64_t>(*d)) == *d)
    n = static_cast<std::int64_t>(*d);
  else
    return std::unexpected(bad_integer(key, "expected an integer, but got " + std::string(v->is_string() ? "a string" : v->is_bool() ? "a boolean" : "a non-integer") + " instead."));
  if (n < 1)
    return std::unexpected(bad_integer(key, "integer below minimum value. Expected a value >= 1, but got " + std::to_string(n) + " instead."));
  if (n > max)
    return std::unexpected(bad_integer(key, "integer above maximum value. Expected a value <= " + std::to_string(max) + ", but got " + std::to_string(n) + " instead."));
  return std::optional<std::int64_t>(n);
}

}  // namespace

std::expected<OutputRequest, core::Error> read_output_request(const json::object& body) {
  OutputRequest out;
  auto mct = positive_field(body, "max_completion_tokens", kInt64Max);
  if (!mct) return std::unexpected(std::move(mct.error()));
  auto mt = positive_field(body, "max_tokens", kInt64Max);
  if (!mt) return std::unexpected(std::move(mt.error()));
  // Both given: the newer field is the one OpenAI honours (it refuses the pair on reasoning models).
  out.max_tokens = *mct ? *mct : *mt;
  auto n = positive_field(body, "n", 128);
  if (!n) return std::unexpected(std::move(n.error()));
  out.choices = n->value_or(1);
  if (const auto* st = body.if_contains("service_tier"); st && !st->is_null()) {
    if (!st->is_string())
      return std::unexpected(core::Error::caller(400, "invalid_request_error", "Invalid 'service_tier': expected a string.",
                                                 "service_tier", "invalid_value"));
    out.service_tier = std::string(st->as_string());
  }
  return out;
}

std::optional<core::Error> read_caller_output(const json::object& body, OutputRequest& out, json::object& fields) {
  auto read = read_output_request(body);
  if (!read) return std::move(read.error());
  out = std::move(*read);
  fields.clear();
  for (const char* k : {"max_tokens", "max_completion_tokens"})
    if (const auto* v = body.if_contains(k); v && !v->is_null()) fields[k] = *v;
  return std::nullopt;
}

OutputBoundSettings OutputBoundSettings::from(const config::TollgateSettings& t) {
  OutputBoundSettings s;
  s.refuse_unaffordable = t.budget_output_policy == config::TollgateSettings::BudgetOutputPolicy::refuse;
  s.min_tokens = t.min_output_tokens;
  s.share_percent = t.budget_reservation_share_percent;
  return s;
}

std::int64_t AttemptPlan::tokens_for(budget::Nanos amount) const {
  const std::int64_t affordable = budget::affordable_output_tokens(rates, amount);
  const std::int64_t total = affordable > unbounded_output ? affordable - unbounded_output : 0;
  return std::clamp<std::int64_t>(total / std::max<std::int64_t>(choices, 1), least, want);
}

budget::Nanos AttemptPlan::cost_at(std::int64_t per_choice) const {
  const std::int64_t n = std::max<std::int64_t>(choices, 1);
  const std::int64_t all = per_choice > kInt64Max / n ? kInt64Max : per_choice * n;
  return budget::worst_case_cost(rates, all > kInt64Max - unbounded_output ? kInt64Max : all + unbounded_output);
}

bool AttemptPlan::cap_at(budget::Nanos ceiling) {
  if (ceiling < range.min) return false;
  if (ceiling < range.max) {
    range.max = ceiling;
    ceiling_capped = true;
  }
  return true;
}

std::int64_t input_bound_for(const budget::ResolvedPrice& price, const json::object& chat, std::string_view model,
                             providers::CallApi api, bool hidden_input) {
  if (api == providers::CallApi::embeddings) return budget::embeddings_input_bound(chat);
  if (api == providers::CallApi::completions) return budget::completions_input_bound(chat);
  const budget::InputBoundContext ctx{model.empty() ? std::string_view(price.price.matched_key) : model,
                                      price.price.max_input_tokens};
  const std::int64_t shown = budget::input_token_upper_bound(chat, ctx);
  if (!hidden_input) return shown;
  const auto& limit = price.price.max_input_tokens;
  return std::max(shown, limit && *limit > 0 ? *limit : budget::kUnknownMediaTokenBound);
}

AttemptPlan plan_attempt(const budget::ResolvedPrice& price, std::int64_t input_bound, const json::object& chat,
                         const OutputRequest& out, const OutputBoundSettings& settings,
                         std::int64_t web_search_calls) {
  AttemptPlan plan;
  plan.choices = std::max<std::int64_t>(out.choices, 1);
  const auto model_max = price.price.max_output_tokens;
  if (out.max_tokens) plan.want = model_max && *model_max > 0 ? std::min(*out.max_tokens, *model_max) : *out.max_tokens;
  else plan.want = model_max && *model_max > 0 ? *model_max : budget::kDefaultOutputTokenBound;
  if (out.no_output) plan.want = 0;
  plan.least = out.max_tokens && settings.refuse_unaffordable ? plan.want
                                                              : std::min(plan.want, std::max<std::int64_t>(settings.min_tokens, 1));
  plan.rates = budget::worst_case_rates(price.price, input_bound, out.service_tier);
  if (web_search_calls > 0 && price.price.web_search_call) {
    const auto fee = budget::cost(web_search_calls, *price.price.web_search_call);  // nanos, rounded up
    const std::int64_t picos = fee > kInt64Max / budget::kPicosPerNano ? kInt64Max : fee * budget::kPicosPerNano;
    plan.rates.input_picos = plan.rates.input_picos > kInt64Max - picos ? kInt64Max : plan.rates.input_picos + picos;
  }
  // Rejected predicted tokens are billed as output beside the bound; each is at least a byte of
  // the prediction (a token is at least one byte).
  if (const auto* p = chat.if_contains("prediction")) plan.unbounded_output = budget::string_bytes(*p);
  plan.range = budget::AmountRange{plan.cost_at(plan.least), plan.cost_at(plan.want), settings.share_percent};
  return plan;
}

}  // namespace tollgate::pipeline
