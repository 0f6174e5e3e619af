#include "budget/operation_bounds.hpp"

#include <algorithm>
#include <limits>

#include <boost/json.hpp>

namespace tollgate::budget {
namespace json = boost::json;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::int64_t add_sat(std::int64_t a, std::int64_t b) noexcept { return a > kMax - b ? kMax : a + b; }

bool is_token_array(const json::array& a) noexcept {
  return std::all_of(a.begin(), a.end(), [](const json::value& v) { return v.is_number(); });
}

}  // namespace

std::int64_t prompt_token_bound(const json::value& input) noexcept {
  if (const auto* s = input.if_string()) return static_cast<std::int64_t>(s->size());
  if (input.is_number()) return 1;
  std::int64_t n = 0;
  if (const auto* a = input.if_array())
    for (const auto& e : *a) n = add_sat(n, prompt_token_bound(e));
  return n;
}

std::int64_t embeddings_input_bound(const json::object& request) noexcept {
  const auto* in = request.if_contains("input");
  return in ? prompt_token_bound(*in) : 0;
}

std::int64_t completions_input_bound(const json::object& request) noexcept {
  std::int64_t n = 0, prompts = 1;
  if (const auto* p = request.if_contains("prompt")) {
    n = prompt_token_bound(*p);
    prompts = std::max<std::int64_t>(prompt_count(*p), 1);
  }
  // The suffix goes with every prompt.
  if (const auto* s = request.if_contains("suffix")) {
    const std::int64_t each = prompt_token_bound(*s);
    n = add_sat(n, each > 0 && prompts > kMax / each ? kMax : each * prompts);
  }
  return n;
}

std::int64_t prompt_count(const json::value& input) noexcept {
  const auto* a = input.if_array();
  if (a == nullptr) return 1;
  if (!a->empty() && is_token_array(*a)) return 1;
  return static_cast<std::int64_t>(a->size());
}

std::optional<std::int64_t> longest_token_input(const json::value& input) noexcept {
  const auto* a = input.if_array();
  if (a == nullptr) return std::nullopt;
  if (is_token_array(*a)) return static_cast<std::int64_t>(a->size());
  std::int64_t longest = 0;
  for (const auto& e : *a) {
    const auto* inner = e.if_array();
    if (inner == nullptr || !is_token_array(*inner)) return std::nullopt;
    longest = std::max(longest, static_cast<std::int64_t>(inner->size()));
  }
  return longest;
}

}  // namespace tollgate::budget
