// gemini/ and vertex_ai/ deployments: prefixes, LiteLLM's environment variables, and Vertex's
// project, location and service-account key (a path read at load, or the JSON itself).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "config/config.hpp"
#include "load_helpers.hpp"

namespace tollgate::config {
namespace {

using ::testing::HasSubstr;
using testing_helpers::all;
using testing_helpers::load;
using testing_helpers::only;

TEST(GoogleDeployments, GeminiPrefixAndKeyFromTheEnvironment) {
  LoadResult r = load(R"(
model_list:
  - model_name: g
    litellm_params: {model: gemini/gemini-2.5-flash}
  - model_name: g2
    litellm_params: {model: gemini/gemini-2.5-pro, api_key: own, api_base: "http://127.0.0.1:9/"}
)", {{"GOOGLE_API_KEY", "from-google-env"}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
  const auto& d = r.config->model_list;
  EXPECT_EQ(d[0].provider, ProviderKind::gemini);
  EXPECT_EQ(d[0].upstream_model, "gemini-2.5-flash");
  EXPECT_EQ(d[0].api_key, "from-google-env");
  EXPECT_EQ(d[1].api_key, "own");
  EXPECT_EQ(d[1].api_base, "http://127.0.0.1:9");
  LoadResult both = load("model_list:\n  - model_name: g\n    litellm_params: {model: gemini/x}\n",
                         {{"GOOGLE_API_KEY", "second"}, {"GEMINI_API_KEY", "first"}});
  EXPECT_EQ(both.config->model_list[0].api_key, "first");
}

TEST(GoogleDeployments, VertexParamsFileAndEnvironment) {
  const std::string path = ::testing::TempDir() + "/tollgate-vertex-key.json";
  {
    std::ofstream f(path);
    f << R"({"type":"service_account","client_email":"a@b","private_key":"k"})";
  }
  LoadResult r = load(R"(
model_list:
  - model_name: v
    litellm_params: {model: vertex_ai/gemini-2.5-pro, vertex_project: p1, vertex_location: europe-west4, vertex_credentials: )" + path + R"(}
  - model_name: v2
    litellm_params:
      model: vertex_ai_beta/gemini-2.5-flash
      vertex_credentials: '{"type":"service_account","client_email":"c@d","private_key":"k2"}'
  - model_name: v3
    litellm_params: {model: vertex_ai/gemini-2.5-flash}
)", {{"VERTEXAI_PROJECT", "env-project"}, {"VERTEXAI_LOCATION", "us-east5"}, {"GOOGLE_APPLICATION_CREDENTIALS", path}});
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
  const auto& d = r.config->model_list;
  EXPECT_EQ(d[0].provider, ProviderKind::vertex_ai);
  EXPECT_EQ(d[0].cloud.vertex_project, "p1");
  EXPECT_EQ(d[0].cloud.vertex_location, "europe-west4");
  EXPECT_THAT(d[0].cloud.vertex_credentials, HasSubstr("a@b"));  // the file's text
  EXPECT_EQ(d[1].provider, ProviderKind::vertex_ai);
  EXPECT_EQ(d[1].cloud.vertex_project, "env-project");
  EXPECT_EQ(d[1].cloud.vertex_location, "us-east5");
  EXPECT_THAT(d[1].cloud.vertex_credentials, HasSubstr("c@d"));  // the JSON as given
  EXPECT_THAT(d[2].cloud.vertex_credentials, HasSubstr("a@b"));  // GOOGLE_APPLICATION_CREDENTIALS
  std::remove(path.c_str());
}

TEST(GoogleDeployments, VertexWithoutProjectOrKeyLoadsWithWarnings) {
  LoadResult r = load(R"(
model_list:
  - model_name: v
    litellm_params: {model: vertex_ai/gemini-2.5-pro}
  - model_name: w
    litellm_params: {model: vertex_ai/gemini-2.5-pro, vertex_project: p, vertex_credentials: /surely/not/here.json}
)");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_THAT(only(r.warnings, "model_list[0].litellm_params.vertex_credentials").message,
              HasSubstr("no service-account credentials"));
  EXPECT_THAT(only(r.warnings, "model_list[0].litellm_params.vertex_project").message, HasSubstr("401 deployment_misconfigured"));
  EXPECT_THAT(only(r.warnings, "model_list[1].litellm_params.vertex_credentials").message, HasSubstr("cannot be read"));
  // Kept callable: the attempt answers 401 deployment_misconfigured (circuit, alert), not 400/500.
  for (const auto& d : r.config->model_list) {
    EXPECT_EQ(d.provider, ProviderKind::vertex_ai);
    EXPECT_TRUE(d.unusable.empty());
  }
  EXPECT_TRUE(r.config->model_list[1].cloud.vertex_credentials.empty());
}

}  // namespace
}  // namespace tollgate::config
