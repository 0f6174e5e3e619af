#pragma once
/// Token usage of one upstream response, in the gateway's internal (OpenAI) terms.

#include "budget/usage.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <utility>

namespace tollgate::providers {

/// Token usage of one response (budget/usage.hpp: line items by token kind).
using Usage = budget::Usage;

namespace detail {
/// A non-negative JSON integer (int64/uint64, or an integral double) at `key`, else nullopt.
inline std::optional<std::int64_t> json_count(const boost::json::object& o, boost::json::string_view key) noexcept {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = v->if_int64()) return *i >= 0 ? std::optional<std::int64_t>(*i) : std::nullopt;
  if (const auto* u = v->if_uint64()) {
    return *u <= static_cast<std::uint64_t>(INT64_MAX) ? std::optional<std::int64_t>(static_cast<std::int64_t>(*u))
                                                      : std::nullopt;
  }
  if (const auto* d = v->if_double()) {
    if (*d >= 0 && *d < 9.2e18 && static_cast<double>(static_cast<std::int64_t>(*d)) == *d) {
      return static_cast<std::int64_t>(*d);
    }
  }
  return std::nullopt;
}
}  // namespace detail

/// Reads an OpenAI `usage` object (Chat Completions response or the final
/// `stream_options.include_usage` chunk): `prompt_tokens`, `completion_tokens`,
/// `prompt_tokens_details.cached_tokens`. Missing or malformed counts read as 0. A null,
/// absent (pass a null value) or non-object `usage` gives `reported == false`.
inline Usage usage_from_openai(const boost::json::value& usage) noexcept {
  Usage u;
  const auto* o = usage.if_object();
  if (o == nullptr) return u;
  u.reported = true;
  u.prompt_tokens = detail::json_count(*o, "prompt_tokens").value_or(0);
  u.completion_tokens = detail::json_count(*o, "completion_tokens").value_or(0);
  if (const auto* details = o->if_contains("prompt_tokens_details")) {
    if (const auto* d = details->if_object()) u.cached_tokens = detail::json_count(*d, "cached_tokens").value_or(0);
  }
  return u;
}

/// Writes an OpenAI `usage` object: `{"prompt_tokens","completion_tokens","total_tokens",
/// "prompt_tokens_details":{"cached_tokens"}}`, total = prompt + completion.
inline boost::json::object usage_to_openai(const Usage& u) {
  boost::json::object o;
  o.reserve(4);
  o.emplace("prompt_tokens", u.prompt_tokens);
  o.emplace("completion_tokens", u.completion_tokens);
  o.emplace("total_tokens", u.prompt_tokens + u.completion_tokens);
  boost::json::object details;
  details.emplace("cached_tokens", u.cached_tokens);
  o.emplace("prompt_tokens_details", std::move(details));
  return o;
}

}  // namespace tollgate::providers
