#include "policy/failure.hpp"

#include <gtest/gtest.h>

using namespace tollgate::policy;
namespace config = tollgate::config;

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
std::string describe(const Outcome& o) {
  return "status " + std::to_string(o.status) + " code '" + o.error_code + "' type '" + o.error_type + "' message '" +
         o.message + "' transport " + std::string(to_string(o.transport));
}
config::ClassRuleConfig override_of(FailureClass c) {
  config::ClassRuleConfig r;
  r.cls = c;
  return r;
}
}  // namespace

TEST(Classifier, DefaultTable) {
  struct Case {
    Outcome outcome;
    FailureClass want;
  };
  const Case cases[] = {
      // retryable_capacity: status 408 429 503 504 529, codes rate_limit_exceeded rate_limit_error overloaded_error
      {status(408), FailureClass::retryable_capacity},
      {status(429), FailureClass::retryable_capacity},
      {status(429, "rate_limit_exceeded", "requests"), FailureClass::retryable_capacity},
      {status(429, {}, "rate_limit_error"), FailureClass::retryable_capacity},
      {status(503), FailureClass::retryable_capacity},
      {status(504), FailureClass::retryable_capacity},
      {status(529, {}, "overloaded_error"), FailureClass::retryable_capacity},
      {status(529), FailureClass::retryable_capacity},
      {status(0, {}, "overloaded_error"), FailureClass::retryable_capacity},  // streamed error event
      // transient_provider_error: 500 502 + transport before send / unusable body
      {status(500), FailureClass::transient_provider_error},
      {status(500, {}, "api_error"), FailureClass::transient_provider_error},
      {status(502), FailureClass::transient_provider_error},
      {transport(TransportEvent::connect_failed), FailureClass::transient_provider_error},
      {transport(TransportEvent::failed_before_send), FailureClass::transient_provider_error},
      {transport(TransportEvent::malformed_body), FailureClass::transient_provider_error},
      {transport(TransportEvent::oversized_body), FailureClass::transient_provider_error},
      // caller_fix_required: 400 404 413 422
      {status(400, {}, "invalid_request_error"), FailureClass::caller_fix_required},
      {status(404, "model_not_found"), FailureClass::caller_fix_required},
      {status(413), FailureClass::caller_fix_required},
      {status(413, {}, "request_too_large"), FailureClass::caller_fix_required},
      {status(422), FailureClass::caller_fix_required},
      // context_overflow: code + message heuristics
      {status(400, "context_length_exceeded", "invalid_request_error"), FailureClass::context_overflow},
      {status(400, {}, "context_length_exceeded"), FailureClass::context_overflow},
      {status(400, {}, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
       FailureClass::context_overflow},
      {status(400, {}, {}, "This model's maximum Context Length is 8192 tokens"), FailureClass::context_overflow},
      {status(400, {}, {}, "input exceeds the context window"), FailureClass::context_overflow},
      {status(413, {}, {}, "Too many tokens in the request"), FailureClass::context_overflow},
      // content_policy: codes + message heuristics
      {status(400, "content_filter"), FailureClass::content_policy},
      {status(400, "content_policy_violation"), FailureClass::content_policy},
      {status(400, {}, "content_filter"), FailureClass::content_policy},
      {status(400, {}, {}, "The response was filtered due to our content management policy"),
       FailureClass::content_policy},
      {status(400, {}, {}, "rejected: violates our Content Policy"), FailureClass::content_policy},
      // commercial_limit: 402 + billing codes
      {status(402), FailureClass::commercial_limit},
      {status(429, "insufficient_quota", "insufficient_quota"), FailureClass::commercial_limit},
      {status(400, {}, "billing_error"), FailureClass::commercial_limit},
      {status(429, "organization_spend_limit_exceeded"), FailureClass::commercial_limit},
      {status(400, "billing_hard_limit_reached"), FailureClass::commercial_limit},
      {status(403, "billing_not_active"), FailureClass::commercial_limit},
      {status(429, {}, "quota_exceeded"), FailureClass::commercial_limit},
      // deployment_misconfigured: 401 403
      {status(401, "invalid_api_key"), FailureClass::deployment_misconfigured},
      {status(401, {}, "authentication_error"), FailureClass::deployment_misconfigured},
      {status(403), FailureClass::deployment_misconfigured},
      // unknown_outcome: the request was sent, the answer never came
      {transport(TransportEvent::reset_after_send), FailureClass::unknown_outcome},
      {transport(TransportEvent::timeout_after_send), FailureClass::unknown_outcome},
      // no rule: other 5xx → transient, other 4xx → caller, anything else → transient
      {status(501), FailureClass::transient_provider_error},
      {status(599), FailureClass::transient_provider_error},
      {status(409), FailureClass::caller_fix_required},
      {status(418, "teapot"), FailureClass::caller_fix_required},
      {status(200), FailureClass::transient_provider_error},
      {status(0), FailureClass::transient_provider_error},
  };
  for (const auto& c : cases)
    EXPECT_EQ(classify(c.outcome), c.want) << describe(c.outcome) << " -> " << to_string(classify(c.outcome));
}

TEST(Classifier, PrecedenceSpecificBeatsGeneric) {
  // A commercial code beats the 429 status (a second provider must not hide a billing problem).
  EXPECT_EQ(classify(status(429, "insufficient_quota")), FailureClass::commercial_limit);
  // A context code beats the 400 status.
  EXPECT_EQ(classify(status(400, "context_length_exceeded")), FailureClass::context_overflow);
  // Messages are read for 4xx only: a 500 that mentions content policy stays transient.
  EXPECT_EQ(classify(status(500, {}, {}, "content policy engine crashed")), FailureClass::transient_provider_error);
  EXPECT_EQ(classify(status(503, {}, {}, "context window service unavailable")), FailureClass::retryable_capacity);
  // A transport event beats everything in the response.
  Outcome o = status(400, "insufficient_quota");
  o.transport = TransportEvent::timeout_after_send;
  EXPECT_EQ(classify(o), FailureClass::unknown_outcome);
  // Codes beat messages: a context message with a content code is content policy.
  EXPECT_EQ(classify(status(400, "content_filter", {}, "context length")), FailureClass::content_policy);
  // Among messages, context_overflow comes before content_policy.
  EXPECT_EQ(classify(status(400, {}, {}, "content policy: prompt is too long")), FailureClass::context_overflow);
  // A message beats the status: a 404 saying "context window" is context overflow (4xx).
  EXPECT_EQ(classify(status(404, {}, {}, "context window exceeded")), FailureClass::context_overflow);
  // Codes are exact (not substrings, not case-folded).
  EXPECT_EQ(classify(status(400, "insufficient_quota_soon")), FailureClass::caller_fix_required);
  EXPECT_EQ(classify(status(400, "INSUFFICIENT_QUOTA")), FailureClass::caller_fix_required);
}

TEST(Classifier, ActionsFollowSeed003) {
  EXPECT_EQ(default_action(FailureClass::retryable_capacity), Action::retry_then_fallback);
  EXPECT_EQ(default_action(FailureClass::transient_provider_error), Action::retry_with_circuit);
  EXPECT_EQ(default_action(FailureClass::caller_fix_required), Action::fail_fast);
  EXPECT_EQ(default_action(FailureClass::commercial_limit), Action::stop_and_alert);
  EXPECT_EQ(default_action(FailureClass::context_overflow), Action::fallback);
  EXPECT_EQ(default_action(FailureClass::content_policy), Action::fallback);
  EXPECT_EQ(default_action(FailureClass::deployment_misconfigured), Action::next_deployment);
  EXPECT_EQ(default_action(FailureClass::unknown_outcome), Action::retry_then_fallback);
}

TEST(Classifier, DefaultRulesAreData) {
  const ClassTable& t = ClassTable::defaults();
  EXPECT_EQ(t.rule(FailureClass::retryable_capacity).status, (std::vector<int>{408, 429, 503, 504, 529}));
  EXPECT_EQ(t.rule(FailureClass::commercial_limit).status, (std::vector<int>{402}));
  EXPECT_EQ(t.rule(FailureClass::commercial_limit).codes.size(), 6u);
  EXPECT_EQ(t.rule(FailureClass::unknown_outcome).transport,
            (std::vector<TransportEvent>{TransportEvent::reset_after_send, TransportEvent::timeout_after_send}));
  EXPECT_EQ(t.rule(FailureClass::deployment_misconfigured).status, (std::vector<int>{401, 403}));
  EXPECT_FALSE(t.rule(FailureClass::context_overflow).messages.empty());
  EXPECT_EQ(&ClassTable::defaults(), &t);
}

TEST(Classifier, CountsAgainstDeployment) {
  EXPECT_TRUE(counts_against_deployment(FailureClass::retryable_capacity));
  EXPECT_TRUE(counts_against_deployment(FailureClass::transient_provider_error));
  EXPECT_TRUE(counts_against_deployment(FailureClass::unknown_outcome));
  EXPECT_TRUE(counts_against_deployment(FailureClass::deployment_misconfigured));
  EXPECT_TRUE(counts_against_deployment(FailureClass::commercial_limit));
  EXPECT_FALSE(counts_against_deployment(FailureClass::caller_fix_required));
  EXPECT_FALSE(counts_against_deployment(FailureClass::context_overflow));
  EXPECT_FALSE(counts_against_deployment(FailureClass::content_policy));
}

TEST(ClassOverrides, GroupMovesStatus503ToFailFast) {
  // Move 503 from retryable_capacity to caller_fix_required (action fail_fast).
  auto o = override_of(FailureClass::caller_fix_required);
  o.status = std::vector<int>{400, 404, 413, 422, 503};
  const ClassTable t = ClassTable::defaults().with({o});
  EXPECT_EQ(t.classify(status(503)), FailureClass::caller_fix_required);
  EXPECT_EQ(t.action(t.classify(status(503))), Action::fail_fast);
  // 503 left the capacity list; the rest of it is unchanged.
  EXPECT_EQ(t.rule(FailureClass::retryable_capacity).status, (std::vector<int>{408, 429, 504, 529}));
  EXPECT_EQ(t.classify(status(429)), FailureClass::retryable_capacity);
  // The default table is untouched.
  EXPECT_EQ(classify(status(503)), FailureClass::retryable_capacity);
}

TEST(ClassOverrides, ActionOnlyOverrideKeepsLists) {
  auto o = override_of(FailureClass::retryable_capacity);
  o.action = Action::fail_fast;
  const ClassTable t = ClassTable::defaults().with({o});
  EXPECT_EQ(t.action(FailureClass::retryable_capacity), Action::fail_fast);
  EXPECT_EQ(t.rule(FailureClass::retryable_capacity).status, ClassTable::defaults().rule(FailureClass::retryable_capacity).status);
  EXPECT_EQ(t.classify(status(503)), FailureClass::retryable_capacity);
  EXPECT_EQ(t.action(FailureClass::transient_provider_error), Action::retry_with_circuit);
}

TEST(ClassOverrides, AddingACode) {
  auto o = override_of(FailureClass::commercial_limit);
  auto codes = ClassTable::defaults().rule(FailureClass::commercial_limit).codes;
  codes.push_back("credit_balance_too_low");
  o.codes = codes;
  const ClassTable t = ClassTable::defaults().with({o});
  EXPECT_EQ(t.classify(status(400, {}, "credit_balance_too_low")), FailureClass::commercial_limit);
  EXPECT_EQ(t.classify(status(429, "insufficient_quota")), FailureClass::commercial_limit);
  EXPECT_EQ(t.classify(status(402)), FailureClass::commercial_limit);  // status list kept
  EXPECT_EQ(classify(status(400, {}, "credit_balance_too_low")), FailureClass::caller_fix_required);
}

TEST(ClassOverrides, ReplacingAListDropsOldEntries) {
  auto o = override_of(FailureClass::commercial_limit);
  o.codes = std::vector<std::string>{"insufficient_quota"};
  const ClassTable t = ClassTable::defaults().with({o});
  EXPECT_EQ(t.classify(status(429, "insufficient_quota")), FailureClass::commercial_limit);
  EXPECT_EQ(t.classify(status(400, "billing_error")), FailureClass::caller_fix_required);
}

TEST(ClassOverrides, MessagesAndTransport) {
  auto ctx = override_of(FailureClass::context_overflow);
  ctx.messages = std::vector<std::string>{"maximum input size"};
  auto tr = override_of(FailureClass::transient_provider_error);
  tr.transport = std::vector<TransportEvent>{TransportEvent::connect_failed, TransportEvent::timeout_after_send};
  const ClassTable t = ClassTable::defaults().with({ctx, tr});
  EXPECT_EQ(t.classify(status(400, {}, {}, "exceeds MAXIMUM INPUT SIZE")), FailureClass::context_overflow);
  EXPECT_EQ(t.classify(status(400, {}, {}, "prompt is too long")), FailureClass::caller_fix_required);
  EXPECT_EQ(t.classify(transport(TransportEvent::timeout_after_send)), FailureClass::transient_provider_error);
  EXPECT_EQ(t.classify(transport(TransportEvent::reset_after_send)), FailureClass::unknown_outcome);
  // Dropped from transient's list, malformed_body falls to the no-rule default (transient).
  EXPECT_EQ(t.classify(transport(TransportEvent::malformed_body)), FailureClass::transient_provider_error);
}

TEST(ClassOverrides, LayersApplyInOrder) {
  // defaults layer: 503 → transient with action degrade; group layer: action fallback.
  auto d = override_of(FailureClass::transient_provider_error);
  d.status = std::vector<int>{500, 502, 503};
  d.action = Action::degrade;
  auto g = override_of(FailureClass::transient_provider_error);
  g.action = Action::fallback;
  const ClassTable base = ClassTable::defaults().with({d});
  const ClassTable group = base.with({g});
  EXPECT_EQ(base.classify(status(503)), FailureClass::transient_provider_error);
  EXPECT_EQ(base.action(FailureClass::transient_provider_error), Action::degrade);
  EXPECT_EQ(group.classify(status(503)), FailureClass::transient_provider_error);
  EXPECT_EQ(group.action(FailureClass::transient_provider_error), Action::fallback);
  // A later override claiming the same status wins.
  auto back = override_of(FailureClass::retryable_capacity);
  back.status = std::vector<int>{429, 503};
  EXPECT_EQ(group.with({back}).classify(status(503)), FailureClass::retryable_capacity);
  EXPECT_EQ(group.with({back}).classify(status(504)), FailureClass::transient_provider_error);  // 5xx default
}
