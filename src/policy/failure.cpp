#include "policy/failure.hpp"

#include <algorithm>
#include <cctype>

namespace tollgate::policy {
namespace {

using FC = FailureClass;

/// Classes in matching priority order (failure.hpp): the specific beats the generic.
constexpr FC kPriority[] = {
    FC::commercial_limit,         FC::context_overflow,   FC::content_policy,
    FC::deployment_misconfigured, FC::retryable_capacity, FC::transient_provider_error,
    FC::caller_fix_required,      FC::unknown_outcome,
};
static_assert(std::size(kPriority) == config::kFailureClassCount);

constexpr std::size_t idx(FC c) { return static_cast<std::size_t>(c); }

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool contains_ci(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return false;  // an empty pattern would match everything
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return lower(a) == lower(b); });
  return it != hay.end();
}

bool equals_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

template <class T>
bool has(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// Removes from `v` every element equal (by `eq`) to one of `taken`.
template <class T, class Eq>
void remove_all(std::vector<T>& v, const std::vector<T>& taken, Eq eq) {
  std::erase_if(v, [&](const T& x) {
    return std::any_of(taken.begin(), taken.end(), [&](const T& t) { return eq(x, t); });
  });
}

/// One class's default rule, in the shape of a config override.
config::ClassRuleConfig rule(FC c, std::vector<int> status, std::vector<std::string> codes,
                             std::vector<std::string> messages, std::vector<TransportEvent> transport, Action action) {
  config::ClassRuleConfig r;
  r.cls = c;
  r.status = std::move(status);
  r.codes = std::move(codes);
  r.messages = std::move(messages);
  r.transport = std::move(transport);
  r.action = action;
  return r;
}

/// The default table (failure.hpp; docs/failure_policy.md), as data: an empty table with every
/// class's rule given in full.
ClassTable build_defaults() {
  using TE = TransportEvent;
  const std::vector<config::ClassRuleConfig> rules = {
      // AWS exception names (Bedrock, SageMaker: x-amzn-ErrorType) beside the OpenAI/Anthropic codes.
      rule(FC::retryable_capacity, {408, 429, 503, 504, 529},
           {"rate_limit_exceeded", "rate_limit_error", "overloaded_error", "ThrottlingException",
            "ModelNotReadyException", "ServiceUnavailableException", "ModelTimeoutException",
            "ServiceQuotaExceededException"},
           {}, {}, Action::retry_then_fallback),
      rule(FC::transient_provider_error, {500, 502},
           {"InternalServerException", "ModelErrorException", "ModelStreamErrorException"}, {},
           {TE::connect_failed, TE::failed_before_send, TE::malformed_body, TE::oversized_body},
           Action::retry_with_circuit),
      rule(FC::caller_fix_required, {400, 404, 413, 422}, {}, {}, {}, Action::fail_fast),
      // Providers without a code say it in words (Anthropic: "prompt is too long: N tokens > M maximum").
      rule(FC::context_overflow, {}, {"context_length_exceeded"},
           {"context length", "context window", "prompt is too long", "too many tokens",
            "input is too long", "too many input tokens"},
           {}, Action::fallback),
      rule(FC::content_policy, {}, {"content_filter", "content_policy_violation"},
           {"content management policy", "content policy", "content filtering policy"}, {}, Action::fallback),
      rule(FC::commercial_limit, {402},
           {"insufficient_quota", "billing_error", "organization_spend_limit_exceeded", "billing_hard_limit_reached",
            "billing_not_active", "quota_exceeded"},
           {}, {}, Action::stop_and_alert),
      rule(FC::deployment_misconfigured, {401, 403},
           {"AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException",
            "ExpiredTokenException", "IncompleteSignatureException", "ResourceNotFoundException",
            // Ollama's 404 "model ... not found": the model is the deployment's (providers/ollama).
            "ollama_model_not_found"},
           {}, {}, Action::next_deployment),
      rule(FC::unknown_outcome, {}, {}, {}, {TE::reset_after_send, TE::timeout_after_send},
           Action::retry_then_fallback),
  };
  return ClassTable{}.with(rules);
}

}  // namespace

const ClassTable& ClassTable::defaults() {
  static const ClassTable table = build_defaults();
  return table;
}

ClassTable ClassTable::with(const std::vector<config::ClassRuleConfig>& overrides) const {
  ClassTable t = *this;
  for (const config::ClassRuleConfig& o : overrides) {
    const std::size_t me = idx(o.cls);
    if (me >= t.rules_.size()) continue;
    // A list named by an override claims its entries: they leave every other class's list, so
    // that "move 503 to caller_fix_required" works whatever the priority order says.
    for (std::size_t other = 0; other < t.rules_.size(); ++other) {
      if (other == me) continue;
      ClassRule& r = t.rules_[other];
      if (o.status) remove_all(r.status, *o.status, std::equal_to<>{});
      if (o.codes) remove_all(r.codes, *o.codes, std::equal_to<>{});
      if (o.messages) remove_all(r.messages, *o.messages, [](const std::string& a, const std::string& b) { return equals_ci(a, b); });
      if (o.transport) remove_all(r.transport, *o.transport, std::equal_to<>{});
    }
    ClassRule& mine = t.rules_[me];
    if (o.status) mine.status = *o.status;
    if (o.codes) mine.codes = *o.codes;
    if (o.messages) mine.messages = *o.messages;
    if (o.transport) mine.transport = *o.transport;
    if (o.action) mine.action = *o.action;
  }
  return t;
}

FailureClass ClassTable::classify(const Outcome& o) const {
  // (1) transport event
  if (o.transport != TransportEvent::none) {
    for (FC c : kPriority)
      if (has(rules_[idx(c)].transport, o.transport)) return c;
  }
  // (2) error code / type, exact
  if (!o.error_code.empty() || !o.error_type.empty()) {
    for (FC c : kPriority) {
      for (const std::string& code : rules_[idx(c)].codes) {
        if (code.empty()) continue;
        if (code == o.error_code || code == o.error_type) return c;
      }
    }
  }
  // (3) message substrings, 4xx only
  const int s = o.status;
  if (s >= 400 && s < 500 && !o.message.empty()) {
    for (FC c : kPriority)
      for (const std::string& m : rules_[idx(c)].messages)
        if (contains_ci(o.message, m)) return c;
  }
  // (4) status
  if (s != 0) {
    for (FC c : kPriority)
      if (has(rules_[idx(c)].status, s)) return c;
  }
  // (5) no rule
  if (s >= 500 && s < 600) return FC::transient_provider_error;
  if (s >= 400 && s < 500) return FC::caller_fix_required;
  // A 1xx/2xx/3xx counted as a failure (the body was not usable), or no response at all.
  return FC::transient_provider_error;
}

FailureClass classify(const Outcome& outcome) { return ClassTable::defaults().classify(outcome); }

Action default_action(FailureClass c) { return ClassTable::defaults().action(c); }

bool counts_against_deployment(FailureClass c) {
  switch (c) {
    case FC::retryable_capacity:
    case FC::transient_provider_error:
    case FC::unknown_outcome:
    case FC::deployment_misconfigured:
    case FC::commercial_limit:
      return true;
    case FC::caller_fix_required:
    case FC::context_overflow:
    case FC::content_policy:
      return false;
  }
  return false;
}

}  // namespace tollgate::policy
