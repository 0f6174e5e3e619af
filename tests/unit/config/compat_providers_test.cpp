// The providers of issue 12 §5 in the loader's table: ollama/, ollama_chat/, cohere/,
// huggingface/ (LiteLLM's URL rules, config/huggingface.hpp) and mistralai/.
#include <gtest/gtest.h>

#include "load_helpers.hpp"

using namespace tollgate::config;
using namespace tollgate::config::testing_helpers;

namespace {

const Deployment& only_deployment(const LoadResult& r) {
  EXPECT_TRUE(r.ok()) << all(r.errors);
  return r.config->model_list.at(0);
}

std::string one(std::string_view model, std::string_view extra = "") {
  return "model_list:\n  - model_name: g\n    litellm_params:\n      model: " + std::string(model) + "\n" + std::string(extra);
}

}  // namespace

TEST(CompatProviders, OllamaDefaultsAndEnv) {
  auto r = load(one("ollama_chat/llama3.1"));
  const auto& d = only_deployment(r);
  EXPECT_EQ(d.provider, ProviderKind::ollama_chat);
  EXPECT_EQ(d.api_base, "http://localhost:11434");
  EXPECT_EQ(d.upstream_model, "llama3.1");
  auto g = load(one("ollama/llama2"), {{"OLLAMA_API_BASE", "http://gpu-box:11434/"}});
  EXPECT_EQ(only_deployment(g).provider, ProviderKind::ollama);
  EXPECT_EQ(only_deployment(g).api_base, "http://gpu-box:11434");
}

TEST(CompatProviders, CohereAndMistralAlias) {
  auto c = load(one("cohere/command-r"), {{"COHERE_API_KEY", "co-key"}});
  EXPECT_EQ(only_deployment(c).provider, ProviderKind::cohere);
  EXPECT_EQ(only_deployment(c).api_base, "https://api.cohere.com");
  EXPECT_EQ(only_deployment(c).api_key, "co-key");
  auto m = load(one("mistralai/mistral-small"), {{"MISTRAL_API_KEY", "mk"}});
  EXPECT_EQ(only_deployment(m).provider, ProviderKind::openai);
  EXPECT_EQ(only_deployment(m).api_base, "https://api.mistral.ai/v1");
  EXPECT_EQ(only_deployment(m).api_key, "mk");
}

TEST(CompatProviders, HuggingFaceRoutes) {
  // A TGI server / Inference Endpoint given by api_base: LiteLLM appends /v1/chat/completions.
  auto tgi = load(one("huggingface/tgi", "      api_base: http://tgi:8080\n"));
  EXPECT_EQ(only_deployment(tgi).api_base, "http://tgi:8080/v1");
  auto v1 = load(one("huggingface/tgi", "      api_base: http://tgi:8080/v1/\n"));
  EXPECT_EQ(only_deployment(v1).api_base, "http://tgi:8080/v1");
  auto full = load(one("huggingface/x", "      api_base: https://e.endpoints.huggingface.cloud/v1/chat/completions\n"));
  EXPECT_EQ(only_deployment(full).api_base, "https://e.endpoints.huggingface.cloud/v1");
  // The model is the endpoint's URL.
  auto url = load(one("huggingface/https://abc.us-east-1.aws.endpoints.huggingface.cloud"));
  EXPECT_EQ(only_deployment(url).api_base, "https://abc.us-east-1.aws.endpoints.huggingface.cloud/v1");
  EXPECT_EQ(only_deployment(url).upstream_model, "tgi");
  // The HF router: hf-inference for <org>/<model>, the OpenAI-compatible router with a provider.
  auto hf = load(one("huggingface/meta-llama/Llama-3.1-8B-Instruct"), {{"HF_TOKEN", "hf_x"}});
  EXPECT_EQ(only_deployment(hf).api_base, "https://router.huggingface.co/hf-inference/models/meta-llama/Llama-3.1-8B-Instruct/v1");
  EXPECT_EQ(only_deployment(hf).upstream_model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(only_deployment(hf).api_key, "hf_x");
  auto routed = load(one("huggingface/together/deepseek-ai/DeepSeek-R1"), {{"HUGGINGFACE_API_KEY", "hf_y"}});
  EXPECT_EQ(only_deployment(routed).api_base, "https://router.huggingface.co/v1");
  EXPECT_EQ(only_deployment(routed).upstream_model, "deepseek-ai/DeepSeek-R1:together");
  EXPECT_EQ(only_deployment(routed).api_key, "hf_y");
}
