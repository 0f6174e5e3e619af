#pragma once
/// The output bound of one upstream attempt (DESIGN.md "Budget admission": the reservation is the
/// contract with the upstream). What the caller asked for is read once per request; for each
/// attempt the plan says what the bound would be with no budget in the way (the caller's limit
/// capped at the model's maximum, else the model's maximum) and the least worth sending; admission
/// then reserves within that range and the bound written into the upstream request is the one
/// the grant pays for (docs/budgets.md "The output bound").

#include <cstdint>
#include <expected>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "budget/cost.hpp"
#include "budget/ledger.hpp"
#include "budget/pricing.hpp"
#include "config/config.hpp"
#include "core/error.hpp"
#include "providers/call_api.hpp"

namespace tollgate::pipeline {

/// What the caller asked of the output, from an OpenAI chat request body.
struct OutputRequest {
  /// The caller's limit per choice, tokens: `max_completion_tokens`, else `max_tokens`; nullopt = none.
  std::optional<std::int64_t> max_tokens;
  /// `n`, the number of choices (1 when absent).
  std::int64_t choices = 1;
  /// `service_tier` as requested ("auto", "default", "flex", "priority"); empty when absent.
  std::string service_tier;
  /// The operation generates no output tokens (embeddings): the bound is 0 and the worst case
  /// is the input's cost alone.
  bool no_output = false;
};

/// Reads and validates `max_completion_tokens`, `max_tokens`, `n` and `service_tier`.
/// Errors (400 invalid_request_error naming the field, OpenAI's wording): a limit or `n` that is
/// not an integer, or below 1 (`n` also above 128); a `service_tier` that is not a string.
/// A null value counts as absent.
std::expected<OutputRequest, core::Error> read_output_request(const boost::json::object& body);

/// read_output_request, plus the caller's own `max_tokens` / `max_completion_tokens` members
/// (those present and not null) into `fields`, so that attempts reserving nothing can send them
/// as the caller did. Errors as read_output_request (then `out` and `fields` are unchanged).
std::optional<core::Error> read_caller_output(const boost::json::object& body, OutputRequest& out,
                                              boost::json::object& fields);

/// The output-bound settings of `tollgate_settings` (docs/config.md).
struct OutputBoundSettings {
  bool refuse_unaffordable = false;  ///< budget_output_policy: refuse
  std::int64_t min_tokens = 16;      ///< min_output_tokens
  int share_percent = 25;            ///< budget_reservation_share_percent
  static OutputBoundSettings from(const config::TollgateSettings& t);
};

/// One attempt's worst case as a function of its output bound.
struct AttemptPlan {
  budget::WorstCaseRates rates;  ///< the input's worst case (pico-dollars) and the dearest output price per token
  std::int64_t choices = 1;      ///< `n`: the bound is per choice, the worst case counts every choice
  std::int64_t want = 0;   ///< output bound per choice with no budget in the way, tokens
  std::int64_t least = 0;  ///< the smallest bound per choice worth sending, tokens (<= want)
  /// Output tokens the bound does not limit but the provider bills as output: predicted tokens
  /// the answer did not use (OpenAI Predicted Outputs), at most the `prediction`'s size in bytes.
  std::int64_t unbounded_output = 0;
  /// {cost at `least`, cost at `want`, share}: what admission may reserve, nano-dollars.
  budget::AmountRange range;
  bool ceiling_capped = false;  ///< cap_at lowered range.max (the request's max_request_cost)
  /// The worst case with a bound of `per_choice` tokens: input, per_choice × choices and the
  /// unbounded output, nano-dollars (saturating).
  [[nodiscard]] budget::Nanos cost_at(std::int64_t per_choice) const;
  /// The largest bound per choice (least..want) whose worst case fits in `amount` nano-dollars.
  [[nodiscard]] std::int64_t tokens_for(budget::Nanos amount) const;
  /// Lowers range.max to `ceiling` (the request's remaining max_request_cost); false when even
  /// range.min does not fit (the attempt must be refused).
  bool cap_at(budget::Nanos ceiling);
};

/// The input bound of `chat` for a deployment priced `price` of model `model` (its media rules:
/// budget/media_tokens.hpp; empty = the price's table key), tokens. The attempt loop computes it
/// once per request per (model, context limit): retries and fallbacks reuse it.
/// `api`: the client API `chat` is in (its input fields: `messages` for chat, `input` for
/// embeddings, `prompt`/`suffix` for completions: budget/operation_bounds.hpp). `hidden_input`:
/// the provider adds input the body does not show (ChatCall::hidden_input): the bound is at least
/// the model's context limit (max_input_tokens; unknown: budget::kUnknownMediaTokenBound).
std::int64_t input_bound_for(const budget::ResolvedPrice& price, const boost::json::object& chat, std::string_view model,
                             providers::CallApi api = providers::CallApi::chat, bool hidden_input = false);

/// Plans an attempt of `chat` with `input_bound` input tokens at most to a deployment priced
/// `price`, for a caller who asked `out`. The bound with no budget in the way: the caller's
/// limit capped at the model's max_output_tokens, else the model's max_output_tokens, else
/// budget::kDefaultOutputTokenBound. The least: min(want, settings.min_tokens), or `want` itself
/// when the caller set a limit and settings.refuse_unaffordable. `web_search_calls`: server-side
/// web searches the attempt will be billed for whatever it generates (OpenAI's search models
/// search on every request), reserved with the input. `out.no_output`: want = least = 0.
/// Meaningful for priced deployments only.
AttemptPlan plan_attempt(const budget::ResolvedPrice& price, std::int64_t input_bound, const boost::json::object& chat,
                         const OutputRequest& out, const OutputBoundSettings& settings,
                         std::int64_t web_search_calls = 0);

}  // namespace tollgate::pipeline
