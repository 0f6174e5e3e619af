#include "policy/failure.hpp"

#include <gtest/gtest.h>

using namespace tollgate::policy;

namespace {
Outcome status(int s, std::string code = {}, std::string type = {}, std::string message = {}) {
  Outcome o;
  o.status = s;
  o.error_code = std::move(code);
  o.error_type = std::move(type);
  o.message = std::move(message);
  return o;
}
Outcome transport(TransportEvent e) {
  Outcome o;
  o.transport = e;
  return o;
}
}  // namespace

TEST(Classifier, DefaultTable) {
  struct Case {
    Outcome outcome;
    FailureClass want;
  };
  const Case cases[] = {
      {status(429, "rate_limit_exceeded", "requests"), FailureClass::retryable_capacity},
      {status(429, "insufficient_quota", "insufficient_quota"), FailureClass::commercial_limit},
      {status(400, {}, "billing_error"), FailureClass::commercial_limit},
      {status(402), FailureClass::commercial_limit},
      {status(503), FailureClass::retryable_capacity},
      {status(529, {}, "overloaded_error"), FailureClass::retryable_capacity},
      {status(504), FailureClass::retryable_capacity},
      {status(500), FailureClass::transient_provider_error},
      {status(502), FailureClass::transient_provider_error},
      {status(400, {}, "invalid_request_error"), FailureClass::caller_fix_required},
      {status(404, "model_not_found"), FailureClass::caller_fix_required},
      {status(413), FailureClass::caller_fix_required},
      {status(422), FailureClass::caller_fix_required},
      {status(400, "context_length_exceeded", "invalid_request_error"), FailureClass::context_overflow},
      {status(400, {}, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
       FailureClass::context_overflow},
      {status(400, "content_filter"), FailureClass::content_policy},
      {status(400, "content_policy_violation"), FailureClass::content_policy},
      {status(401, "invalid_api_key"), FailureClass::deployment_misconfigured},
      {status(403), FailureClass::deployment_misconfigured},
      {transport(TransportEvent::connect_failed), FailureClass::transient_provider_error},
      {transport(TransportEvent::failed_before_send), FailureClass::transient_provider_error},
      {transport(TransportEvent::malformed_body), FailureClass::transient_provider_error},
      {transport(TransportEvent::oversized_body), FailureClass::transient_provider_error},
      {transport(TransportEvent::reset_after_send), FailureClass::unknown_outcome},
      {transport(TransportEvent::timeout_after_send), FailureClass::unknown_outcome},
  };
  for (const auto& c : cases)
    EXPECT_EQ(classify(c.outcome), c.want) << "status " << c.outcome.status << " code " << c.outcome.error_code
                                           << " -> " << to_string(classify(c.outcome));
}

TEST(Classifier, ActionsFollowSeed003) {
  EXPECT_EQ(default_action(FailureClass::retryable_capacity), Action::retry_then_fallback);
  EXPECT_EQ(default_action(FailureClass::transient_provider_error), Action::retry_then_fallback);
  EXPECT_EQ(default_action(FailureClass::caller_fix_required), Action::fail_fast);
  EXPECT_EQ(default_action(FailureClass::commercial_limit), Action::stop_and_alert);
  EXPECT_EQ(default_action(FailureClass::context_overflow), Action::context_window_fallback);
  EXPECT_EQ(default_action(FailureClass::content_policy), Action::content_policy_fallback);
  EXPECT_EQ(default_action(FailureClass::deployment_misconfigured), Action::next_deployment);
}
