#pragma once
/// A request's budgets (seed 003, "Put a budget in front of retries"; issue 4 §3): how many
/// retries and fallbacks it may still spend, its latency deadline, the minimum time left for an
/// attempt to start, and its cost ceiling over all attempts' reservations. Set per model group
/// (fallback_policy), tightened per key (key metadata `tollgate_request_budget`) and per request
/// (x-tollgate-* headers); tightening only: the smallest value wins, a looser one is ignored.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "budget/money.hpp"
#include "config/config.hpp"

namespace tollgate::policy {

using std::chrono::milliseconds;

/// The effective limits of one request.
struct RequestBudget {
  int max_retries = 2;                           ///< retries, all groups together
  int max_fallbacks = 5;                         ///< fallback targets (each counts once)
  milliseconds deadline{600000};                 ///< from acceptance to the last byte
  milliseconds min_time_left{0};                 ///< no attempt starts with less time left
  budget::Nanos max_request_cost = budget::kMaxNanos;  ///< sum of all attempts' reservations; kMaxNanos = none
  /// Streams (issue 13 §2): from an attempt's start to its first content or tool-call delta (not
  /// its first event); nullopt = no limit. Hit before anything reached the client, the request
  /// moves to the next deployment or fallback at once.
  std::optional<milliseconds> first_token_timeout;
  /// Streams: the longest silence between two upstream reads; nullopt = no limit.
  std::optional<milliseconds> stream_idle_timeout;
  /// Streams (issue 13 §4): output events held back before the client sees any, so that a
  /// failure within them is retried unseen; kHoldWholeAnswer = the whole answer; 0 = none.
  std::int64_t stream_holdback = 0;
};

/// RequestBudget::stream_holdback for "all": nothing is relayed before the stream's end.
inline constexpr std::int64_t kHoldWholeAnswer = INT64_MAX;

/// The binding one of two optional limits: the smaller, or the one that is set (nullopt: neither).
inline std::optional<milliseconds> tighter_limit(std::optional<milliseconds> a, std::optional<milliseconds> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

/// A tightening request: each present field may lower the budget's value, never raise it.
struct BudgetOverride {
  std::optional<int> max_retries;
  std::optional<int> max_fallbacks;
  std::optional<milliseconds> deadline;
  std::optional<budget::Nanos> max_request_cost;
  std::optional<milliseconds> first_token_timeout;
  std::optional<milliseconds> stream_idle_timeout;
  /// Hold-back is the one field an override may raise (more integrity, more latency), never lower.
  std::optional<std::int64_t> stream_holdback;
};

/// The configured budget of `group`: `fallback_policy.model_groups.<group>.budgets` over
/// `fallback_policy.defaults.budgets` over the router's settings (num_retries, max_fallbacks,
/// timeout). A max_request_cost that does not parse is ignored (the loader rejects it first).
RequestBudget configured_budget(const config::Config& cfg, std::string_view group);

/// Applies `o` to `b`, keeping the smaller value of each field. Each field of `o` that would
/// loosen the budget is left out and described in `ignored` ("x-tollgate-max-retries: 5 > 2").
RequestBudget tighten(RequestBudget b, const BudgetOverride& o, std::vector<std::string>* ignored = nullptr);

/// Header names of a per-request override (all optional):
/// x-tollgate-max-retries (int >= 0), x-tollgate-max-fallbacks (int >= 0),
/// x-tollgate-deadline-ms (int > 0), x-tollgate-max-request-cost (decimal dollars),
/// x-tollgate-first-token-timeout-ms and x-tollgate-stream-idle-timeout-ms (int > 0),
/// x-tollgate-stream-holdback (int >= 0 output events, or "all").
inline constexpr const char* kHeaderMaxRetries = "x-tollgate-max-retries";
inline constexpr const char* kHeaderMaxFallbacks = "x-tollgate-max-fallbacks";
inline constexpr const char* kHeaderDeadlineMs = "x-tollgate-deadline-ms";
inline constexpr const char* kHeaderMaxRequestCost = "x-tollgate-max-request-cost";
inline constexpr const char* kHeaderFirstTokenTimeoutMs = "x-tollgate-first-token-timeout-ms";
inline constexpr const char* kHeaderStreamIdleTimeoutMs = "x-tollgate-stream-idle-timeout-ms";
inline constexpr const char* kHeaderStreamHoldback = "x-tollgate-stream-holdback";
/// Every per-request override header, in the order above.
inline constexpr const char* kOverrideHeaders[] = {kHeaderMaxRetries,     kHeaderMaxFallbacks,
                                                   kHeaderDeadlineMs,     kHeaderMaxRequestCost,
                                                   kHeaderFirstTokenTimeoutMs, kHeaderStreamIdleTimeoutMs,
                                                   kHeaderStreamHoldback};

/// Parses one override field from its header (or key-metadata) text into `o`.
/// Returns an error message naming the field when the value is malformed (the API answers 400).
std::optional<std::string> parse_override_field(std::string_view name, std::string_view value, BudgetOverride& o);

/// Reads a key's metadata (JSON object text) field `tollgate_request_budget`
/// ({"max_retries", "max_fallbacks", "deadline_ms", "max_request_cost", "first_token_timeout_ms",
/// "stream_idle_timeout_ms", "stream_holdback_tokens"}, numbers or strings) into
/// `o`. A missing or non-object field changes nothing. Returns one message per malformed value
/// (that value is ignored: the caller logs it).
std::vector<std::string> read_key_budget(std::string_view metadata_json, BudgetOverride& o);

}  // namespace tollgate::policy
