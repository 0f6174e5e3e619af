#include "config/config.hpp"

#include <array>
#include <charconv>
#include <unordered_set>

namespace tollgate::config {

std::vector<std::string> Config::model_groups() const {
  std::vector<std::string> groups;
  std::unordered_set<std::string> seen;
  for (const Deployment& d : model_list) {
    if (seen.insert(d.model_name).second) groups.push_back(d.model_name);
  }
  return groups;
}

std::optional<FailureClass> litellm_exception_class(std::string_view exception) {
  static constexpr std::pair<std::string_view, FailureClass> kMap[] = {
      {"BadRequestError", FailureClass::caller_fix_required},
      {"AuthenticationError", FailureClass::deployment_misconfigured},
      {"TimeoutError", FailureClass::unknown_outcome},
      {"RateLimitError", FailureClass::retryable_capacity},
      {"ContentPolicyViolationError", FailureClass::content_policy},
      {"InternalServerError", FailureClass::transient_provider_error},
  };
  for (const auto& [name, cls] : kMap)
    if (name == exception) return cls;
  return std::nullopt;
}

std::optional<TierCostKey> parse_tier_cost_key(std::string_view key) {
  static constexpr std::array<std::pair<std::string_view, TierCostField>, 4> kFields{{
      {"input_cost_per_token", TierCostField::input_cost_per_token},
      {"output_cost_per_token", TierCostField::output_cost_per_token},
      {"cache_read_input_token_cost", TierCostField::cache_read_input_token_cost},
      {"cache_creation_input_token_cost", TierCostField::cache_creation_input_token_cost},
  }};
  constexpr std::string_view kAbove = "_above_";
  constexpr std::string_view kSuffix = "k_tokens";
  for (const auto& [name, field] : kFields) {
    if (!key.starts_with(name)) continue;
    std::string_view rest = key.substr(name.size());
    if (!rest.starts_with(kAbove) || !rest.ends_with(kSuffix)) continue;
    const std::string_view digits = rest.substr(kAbove.size(), rest.size() - kAbove.size() - kSuffix.size());
    if (digits.empty() || digits.size() > 9) continue;
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc{} || end != digits.data() + digits.size() || n <= 0) continue;
    return TierCostKey{field, n * 1000};
  }
  return std::nullopt;
}

std::string Problem::to_string() const {
  std::string out;
  if (!path.empty()) out += path;
  if (line > 0) {
    if (!out.empty()) out += ' ';
    out += "(line " + std::to_string(line) + ")";
  }
  if (!out.empty()) out += ": ";
  out += message;
  return out;
}

}  // namespace tollgate::config
