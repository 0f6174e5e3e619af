// LiteLLM router settings mapped onto Tollgate's policy: retry_policy / allowed_fails_policy
// (exception names → failure classes), litellm_params.max_retries and default request
// parameters, region_name / tags.
#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "load_helpers.hpp"

using namespace tollgate::config;
using namespace tollgate::config::testing_helpers;

namespace {

constexpr std::size_t idx(FailureClass c) { return static_cast<std::size_t>(c); }

const char* kBase = R"(
model_list:
  - model_name: g
    litellm_params: {model: openai/x, api_base: "http://127.0.0.1:1/v1"}
)";

}  // namespace

TEST(RouterSettings, ExceptionNamesMapOntoFailureClasses) {
  EXPECT_EQ(litellm_exception_class("BadRequestError"), FailureClass::caller_fix_required);
  EXPECT_EQ(litellm_exception_class("AuthenticationError"), FailureClass::deployment_misconfigured);
  EXPECT_EQ(litellm_exception_class("TimeoutError"), FailureClass::unknown_outcome);
  EXPECT_EQ(litellm_exception_class("RateLimitError"), FailureClass::retryable_capacity);
  EXPECT_EQ(litellm_exception_class("ContentPolicyViolationError"), FailureClass::content_policy);
  EXPECT_EQ(litellm_exception_class("InternalServerError"), FailureClass::transient_provider_error);
  EXPECT_FALSE(litellm_exception_class("NotFoundError"));
  EXPECT_FALSE(litellm_exception_class(""));
}

TEST(RouterSettings, RetryPolicyAndAllowedFailsPolicyLoadByClass) {
  auto r = load(std::string(kBase) + R"(
router_settings:
  retry_policy: {RateLimitErrorRetries: 3, TimeoutErrorRetries: 0, NotFoundErrorRetries: 2, RateLimitError: 1}
  allowed_fails_policy: {InternalServerErrorAllowedFails: 20, ContentPolicyViolationErrorAllowedFails: 1000}
)");
  ASSERT_TRUE(r.errors.empty()) << all(r.errors);
  const auto& rs = r.config->router_settings;
  EXPECT_EQ(rs.retry_policy[idx(FailureClass::retryable_capacity)], 3);
  EXPECT_EQ(rs.retry_policy[idx(FailureClass::unknown_outcome)], 0);
  EXPECT_FALSE(rs.retry_policy[idx(FailureClass::transient_provider_error)]);
  EXPECT_EQ(rs.allowed_fails_policy[idx(FailureClass::transient_provider_error)], 20);
  EXPECT_EQ(rs.allowed_fails_policy[idx(FailureClass::content_policy)], 1000);
  // Unknown exception names (and a key without the suffix) are warned at their path.
  EXPECT_NE(only(r.warnings, "router_settings.retry_policy.NotFoundErrorRetries").message.find("unknown exception class"),
            std::string::npos);
  EXPECT_NE(only(r.warnings, "router_settings.retry_policy.RateLimitError").message.find("followed by Retries"),
            std::string::npos);
}

TEST(RouterSettings, BadPolicyValuesAreErrors) {
  auto r = load(std::string(kBase) + R"(
router_settings:
  retry_policy: {RateLimitErrorRetries: -1}
  allowed_fails_policy: [1, 2]
)");
  EXPECT_FALSE(r.config);
  only(r.errors, "router_settings.retry_policy.RateLimitErrorRetries");
  only(r.errors, "router_settings.allowed_fails_policy");
}

TEST(RouterSettings, DeploymentMaxRetriesDefaultsRegionAndTags) {
  auto r = load(R"(
model_list:
  - model_name: g
    litellm_params:
      model: openai/x
      api_base: "http://127.0.0.1:1/v1"
      max_retries: 1
      temperature: 0.2
      top_p: 1
      presence_penalty: -0.5
      frequency_penalty: 1_0.5
      seed: 1_000
      max_completion_tokens: 64
      max_tokens: 32
      region_name: eu
      tags: [free, default]
)");
  ASSERT_TRUE(r.errors.empty()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
  const auto& d = r.config->model_list[0];
  EXPECT_EQ(d.max_retries, 1);
  EXPECT_EQ(d.default_max_tokens, 32);  // max_tokens wins over max_completion_tokens
  EXPECT_EQ(d.region_name, "eu");
  EXPECT_EQ(d.tags, (std::vector<std::string>{"free", "default"}));
  const std::vector<std::pair<std::string, std::string>> want{
      {"temperature", "0.2"}, {"top_p", "1"}, {"presence_penalty", "-0.5"}, {"frequency_penalty", "10.5"}, {"seed", "1000"}};
  EXPECT_EQ(d.default_params, want);
}

TEST(RouterSettings, BadDefaultParamsAreErrorsAtTheirPath) {
  auto r = load(R"(
model_list:
  - model_name: g
    litellm_params:
      model: openai/x
      api_base: "http://127.0.0.1:1/v1"
      temperature: warm
      top_p: [1]
      max_tokens: 0
      seed: 1.5
      tags: free
)");
  EXPECT_FALSE(r.config);
  EXPECT_NE(only(r.errors, "model_list[0].litellm_params.temperature").message.find("expected a number"), std::string::npos);
  only(r.errors, "model_list[0].litellm_params.top_p");
  only(r.errors, "model_list[0].litellm_params.max_tokens");
  only(r.errors, "model_list[0].litellm_params.seed");
  only(r.errors, "model_list[0].litellm_params.tags");
}

TEST(RouterSettings, AnUpstreamWildcardUnderAPlainNameIsAnError) {
  auto r = load(R"(
model_list:
  - model_name: plain
    litellm_params: {model: "openai/*", api_base: "http://127.0.0.1:1/v1"}
)");
  EXPECT_FALSE(r.config);
  EXPECT_NE(only(r.errors, "model_list[0].litellm_params.model").message.find("the `*` would match nothing"),
            std::string::npos);
}
