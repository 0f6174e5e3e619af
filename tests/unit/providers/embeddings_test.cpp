// Embeddings on the Gemini API, Vertex AI, Ollama and Cohere (providers/gemini/embeddings.hpp,
// ollama/embeddings.hpp, cohere/embeddings.hpp): which adapter the seam returns, the upstream
// requests built from an OpenAI embeddings body, the answers read back as an OpenAI `list` with
// their usage, the base64 encoding of the vectors, and the refusal of token-array inputs.
#include "providers/embedding_inputs.hpp"
#include "providers/embeddings_list.hpp"
#include "providers/cohere/embeddings.hpp"
#include "providers/gemini/embeddings.hpp"
#include "providers/ollama/embeddings.hpp"
#include "providers/provider.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
using providers::CallApi;
namespace json = boost::json;

namespace {

config::Deployment deployment(config::ProviderKind kind, std::string prefix, std::string model) {
  config::Deployment d;
  d.provider = kind;
  d.provider_prefix = std::move(prefix);
  d.api_base = "http://up:1";
  d.api_key = "k-1";
  d.upstream_model = std::move(model);
  d.model_name = "group";
  d.id = "dep-1";
  return d;
}

json::object body(const char* text) { return json::parse(text).as_object(); }

const providers::Provider& embeddings_of(const config::Deployment& d) {
  const auto* a = providers::adapter_for(d, CallApi::embeddings);
  EXPECT_NE(a, nullptr);
  return *a;
}

std::string target_of(const http::OutgoingRequest& r) { return r.target.path_and_query; }

}  // namespace

TEST(ProviderEmbeddings, EachProviderServesEmbeddingsWithItsOwnAdapter) {
  for (auto [kind, prefix] : {std::pair{config::ProviderKind::gemini, "gemini"}, {config::ProviderKind::vertex_ai, "vertex_ai"},
                              {config::ProviderKind::ollama, "ollama"}, {config::ProviderKind::ollama_chat, "ollama_chat"},
                              {config::ProviderKind::cohere, "cohere"}}) {
    const auto d = deployment(kind, prefix, "m");
    const auto* e = providers::adapter_for(d, CallApi::embeddings);
    ASSERT_NE(e, nullptr) << prefix;
    EXPECT_NE(e, providers::adapter_for(d, CallApi::chat)) << prefix;
    EXPECT_EQ(e->stream_decoder(d, false), nullptr) << prefix;
    EXPECT_EQ(providers::adapter_for(d, CallApi::completions), nullptr) << prefix;
  }
  EXPECT_EQ(&embeddings_of(deployment(config::ProviderKind::ollama, "ollama", "m")),
            &embeddings_of(deployment(config::ProviderKind::ollama_chat, "ollama_chat", "m")));
}

TEST(ProviderEmbeddings, GeminiSendsEmbedContentForOneInputAndBatchForMany) {
  const auto d = deployment(config::ProviderKind::gemini, "gemini", "gemini-embedding-001");
  const auto& a = embeddings_of(d);
  auto one = body(R"({"model":"g","input":"hello","dimensions":8,"encoding_format":"base64"})");
  auto r = a.build_request(d, one, false);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(target_of(*r), "/v1beta/models/gemini-embedding-001:embedContent");
  EXPECT_EQ(json::parse(r->body), json::parse(R"({"model":"models/gemini-embedding-001","content":{"parts":[{"text":"hello"}]},"outputDimensionality":8})"));
  bool keyed = false;
  for (const auto& [k, v] : r->headers) keyed = keyed || (k == "x-goog-api-key" && v == "k-1");
  EXPECT_TRUE(keyed);
  auto many = body(R"({"model":"g","input":["a","b"]})");
  r = a.build_request(d, many, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(target_of(*r), "/v1beta/models/gemini-embedding-001:batchEmbedContents");
  const auto sent = json::parse(r->body).as_object();
  ASSERT_EQ(sent.at("requests").as_array().size(), 2u);
  EXPECT_EQ(sent.at("requests").as_array()[1], json::parse(R"({"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]}})"));
}

TEST(ProviderEmbeddings, GeminiAnswersAreListsWithoutUsage) {
  auto p = providers::gemini::gemini_embed_response(R"({"embedding":{"values":[0.5,-0.25]}})", "gemini-embedding-001");
  ASSERT_TRUE(p) << p.error();
  EXPECT_FALSE(p->usage.reported) << "the Gemini API reports no usage: the reservation is charged";
  EXPECT_EQ(p->completion, json::parse(R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],
                                           "model":"gemini-embedding-001"})")) << "no usage member: none is made up";
  p = providers::gemini::gemini_embed_response(R"({"embeddings":[{"values":[1]},{"values":[2,3]}]})", "m");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->completion.at("data").as_array()[1].as_object().at("index"), 1);
  EXPECT_FALSE(providers::gemini::gemini_embed_response(R"({"embeddings":[{"values":[]}]})", "m"));
  EXPECT_FALSE(providers::gemini::gemini_embed_response(R"({"candidates":[]})", "m"));
  EXPECT_FALSE(providers::gemini::gemini_embed_response("not json", "m"));
}

TEST(ProviderEmbeddings, VertexPredictsAndReportsTheTokenCounts) {
  auto d = deployment(config::ProviderKind::vertex_ai, "vertex_ai", "text-embedding-005");
  d.cloud.vertex_project = "proj";
  d.cloud.vertex_location = "europe-west4";
  const auto& a = embeddings_of(d);
  EXPECT_NE(a.authorizer(), nullptr) << "the same OAuth token step as Vertex chat";
  auto b = body(R"({"model":"v","input":["a","bc"],"dimensions":256})");
  auto r = a.build_request(d, b, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(target_of(*r), "/v1/projects/proj/locations/europe-west4/publishers/google/models/text-embedding-005:predict");
  EXPECT_EQ(json::parse(r->body), json::parse(R"({"instances":[{"content":"a"},{"content":"bc"}],"parameters":{"outputDimensionality":256}})"));
  auto p = providers::gemini::vertex_embed_response(
      R"({"predictions":[{"embeddings":{"statistics":{"truncated":false,"token_count":3},"values":[0.1]}},
                         {"embeddings":{"statistics":{"token_count":4.0},"values":[0.2]}}]})", "text-embedding-005");
  ASSERT_TRUE(p) << p.error();
  EXPECT_TRUE(p->usage.reported);
  EXPECT_EQ(p->usage.prompt_tokens, 7);
  EXPECT_EQ(p->completion.at("usage"), json::parse(R"({"prompt_tokens":7,"total_tokens":7})"));
  p = providers::gemini::vertex_embed_response(R"({"predictions":[{"embeddings":{"values":[0.1]}}]})", "m");
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->usage.reported) << "a count missing: the bill is unknown";
  EXPECT_FALSE(providers::gemini::vertex_embed_response(R"({"predictions":[]})", "m"));
}

TEST(ProviderEmbeddings, OllamaEmbedCarriesInputAndDimensionsAndReadsPromptEvalCount) {
  const auto d = deployment(config::ProviderKind::ollama, "ollama", "nomic-embed-text");
  auto b = body(R"({"model":"o","input":"hi","dimensions":16})");
  auto r = embeddings_of(d).build_request(d, b, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(target_of(*r), "/api/embed");
  EXPECT_EQ(json::parse(r->body), json::parse(R"({"model":"nomic-embed-text","input":"hi","dimensions":16})"));
  auto batch = body(R"({"model":"o","input":["a","b"]})");
  EXPECT_EQ(providers::ollama::embed_body(batch, "m").value(), json::parse(R"({"model":"m","input":["a","b"]})"));
  auto p = providers::ollama::embed_response(R"({"model":"m","embeddings":[[0.1,0.2],[0.3,0.4]],"prompt_eval_count":9})", "m");
  ASSERT_TRUE(p) << p.error();
  EXPECT_TRUE(p->usage.reported);
  EXPECT_EQ(p->usage.prompt_tokens, 9);
  EXPECT_EQ(p->completion.at("data").as_array().size(), 2u);
  EXPECT_FALSE(providers::ollama::embed_response(R"({"embeddings":[["x"]]})", "m"));
}

TEST(ProviderEmbeddings, CohereEmbedAsksForFloatsAndReadsBilledUnits) {
  auto d = deployment(config::ProviderKind::cohere, "cohere", "embed-v4.0");
  auto b = body(R"({"model":"c","input":["a","b"],"dimensions":512})");
  auto r = embeddings_of(d).build_request(d, b, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(target_of(*r), "/v2/embed");
  EXPECT_EQ(json::parse(r->body), json::parse(R"({"model":"embed-v4.0","texts":["a","b"],"input_type":"search_document",
                                                  "embedding_types":["float"],"output_dimension":512})"));
  d.api_base = "https://api.cohere.com/v2/chat";  // LiteLLM's whole-URL form of the chat base
  r = embeddings_of(d).build_request(d, b, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(target_of(*r), "/v2/embed");
  auto p = providers::cohere::embed_response(
      R"({"id":"x","embeddings":{"float":[[0.5],[0.25]]},"texts":["a","b"],"meta":{"billed_units":{"input_tokens":2}}})", "embed-v4.0");
  ASSERT_TRUE(p) << p.error();
  EXPECT_TRUE(p->usage.reported);
  EXPECT_EQ(p->usage.prompt_tokens, 2);
  EXPECT_EQ(p->completion.at("model"), "embed-v4.0");
  EXPECT_FALSE(providers::cohere::embed_response(R"({"embeddings":{"int8":[[1]]}})", "m"));
}

TEST(ProviderEmbeddings, TokenArraysAreRefusedBeforeSendingByEveryTextOnlyAdapter) {
  const auto tokens = body(R"({"model":"m","input":[[1,2,3]]})");
  const auto text = body(R"({"model":"m","input":["a"]})");
  for (auto [kind, prefix] : {std::pair{config::ProviderKind::gemini, "gemini"}, {config::ProviderKind::vertex_ai, "vertex_ai"},
                              {config::ProviderKind::ollama, "ollama"}, {config::ProviderKind::cohere, "cohere"}}) {
    const auto d = deployment(kind, prefix, "m");
    const auto why = embeddings_of(d).refuse_request(d, tokens);
    ASSERT_TRUE(why) << prefix;
    EXPECT_NE(why->message.find("token-array input"), std::string::npos) << why->message;
    EXPECT_EQ(why->param, "input");
    EXPECT_FALSE(embeddings_of(d).refuse_request(d, text)) << prefix;
  }
  auto one_token_array = body(R"({"model":"m","input":[1,2,3]})");
  EXPECT_FALSE(providers::embedding_texts(one_token_array));
  EXPECT_EQ(providers::embedding_texts(text).value(), std::vector<std::string_view>{"a"});
}
