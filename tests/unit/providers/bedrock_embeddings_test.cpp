// Bedrock embeddings (InvokeModel): model families, refusals before sending, request bodies,
// answers into OpenAI's embeddings shape, base64 encoding of the vectors.
#include "policy/failure.hpp"
#include "providers/bedrock/embeddings.hpp"
#include "providers/embeddings_list.hpp"
#include "providers/provider.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

using namespace tollgate;
using namespace tollgate::providers;
using namespace tollgate::providers::bedrock;
namespace json = boost::json;

namespace {

json::object obj(std::string_view s) { return json::parse(s).as_object(); }

config::Deployment deployment(std::string model) {
  config::Deployment d;
  d.id = "emb.1";
  d.model_name = "emb";
  d.provider = config::ProviderKind::bedrock;
  d.provider_prefix = "bedrock";
  d.upstream_model = std::move(model);
  d.cloud.aws_access_key_id = "AKIDEXAMPLE";
  d.cloud.aws_secret_access_key = "secret";
  d.cloud.aws_region_name = "us-east-1";
  return d;
}

}  // namespace

TEST(BedrockEmbeddings, FamilyFromTheModelId) {
  EXPECT_EQ(embed_family("amazon.titan-embed-text-v2:0"), EmbedFamily::titan_v2);
  EXPECT_EQ(embed_family("arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0"), EmbedFamily::titan_v2);
  EXPECT_EQ(embed_family("amazon.titan-embed-text-v1"), EmbedFamily::titan_v1);
  EXPECT_EQ(embed_family("amazon.titan-embed-g1-text-02"), EmbedFamily::titan_v1);
  EXPECT_EQ(embed_family("cohere.embed-english-v3"), EmbedFamily::cohere);
  EXPECT_EQ(embed_family("us.cohere.embed-multilingual-v3"), EmbedFamily::cohere);
  EXPECT_FALSE(embed_family("anthropic.claude-3-haiku-20240307-v1:0"));
  EXPECT_FALSE(embed_family("cohere.command-r-v1:0"));
}

TEST(BedrockEmbeddings, ServedOnlyForEmbeddingModels) {
  const auto titan = deployment("amazon.titan-embed-text-v2:0");
  const auto* a = adapter_for(titan, CallApi::embeddings);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a, &provider_for(config::ProviderKind::bedrock));  // not the Converse adapter
  EXPECT_EQ(adapter_for(deployment("anthropic.claude-3-haiku-20240307-v1:0"), CallApi::embeddings), nullptr);
  EXPECT_EQ(a->stream_decoder(titan, false), nullptr);
  EXPECT_FALSE(a->relays_openai_body());
  auto no_keys = titan;
  no_keys.cloud.aws_secret_access_key.clear();
  ASSERT_TRUE(a->credentials_error(no_keys));
  EXPECT_NE(a->credentials_error(no_keys)->find("aws_secret_access_key"), std::string::npos);
}

TEST(BedrockEmbeddings, RefusalsNameTheLimit) {
  EXPECT_FALSE(embeddings_refusal(EmbedFamily::titan_v2, obj(R"({"input":"hi"})")));
  EXPECT_FALSE(embeddings_refusal(EmbedFamily::titan_v2, obj(R"({"input":["hi"],"dimensions":512})")));
  auto many = embeddings_refusal(EmbedFamily::titan_v2, obj(R"({"input":["a","b"]})"));
  ASSERT_TRUE(many);
  EXPECT_EQ(many->param, "input");
  EXPECT_NE(many->message.find("at most 1 input"), std::string::npos);
  auto dims = embeddings_refusal(EmbedFamily::titan_v2, obj(R"({"input":"a","dimensions":300})"));
  ASSERT_TRUE(dims);
  EXPECT_EQ(dims->param, "dimensions");
  EXPECT_NE(dims->message.find("256, 512 or 1024"), std::string::npos);
  EXPECT_TRUE(embeddings_refusal(EmbedFamily::titan_v1, obj(R"({"input":"a","dimensions":1024})")));
  EXPECT_FALSE(embeddings_refusal(EmbedFamily::titan_v1, obj(R"({"input":"a","dimensions":1536})")));
  auto tokens = embeddings_refusal(EmbedFamily::cohere, obj(R"({"input":[1,2,3]})"));
  ASSERT_TRUE(tokens);
  EXPECT_NE(tokens->message.find("token ids"), std::string::npos);
  EXPECT_TRUE(embeddings_refusal(EmbedFamily::titan_v2, obj(R"({"input":[[1,2],[3]]})")));
  EXPECT_FALSE(embeddings_refusal(EmbedFamily::cohere, obj(R"({"input":["a","b","c"]})")));
  json::array texts(kCohereMaxTexts + 1, json::value("x"));
  auto over = embeddings_refusal(EmbedFamily::cohere, json::object{{"input", texts}});
  ASSERT_TRUE(over);
  EXPECT_NE(over->message.find("at most 96"), std::string::npos);
  // Through the adapter (the attempt asks it before anything is sent).
  const auto d = deployment("amazon.titan-embed-text-v2:0");
  EXPECT_TRUE(adapter_for(d, CallApi::embeddings)->refuse_request(d, obj(R"({"input":["a","b"]})")));
}

TEST(BedrockEmbeddings, InvokeBodies) {
  EXPECT_EQ(embeddings_invoke_body(EmbedFamily::titan_v2, obj(R"({"model":"emb","input":["hello"],"dimensions":256,"encoding_format":"base64"})")),
            obj(R"({"inputText":"hello","dimensions":256,"normalize":true})"));
  EXPECT_EQ(embeddings_invoke_body(EmbedFamily::titan_v1, obj(R"({"input":"hello","dimensions":1536})")),
            obj(R"({"inputText":"hello"})"));
  EXPECT_EQ(embeddings_invoke_body(EmbedFamily::cohere, obj(R"({"input":["a","b"],"user":"u"})")),
            obj(R"({"texts":["a","b"],"input_type":"search_document"})"));
}

TEST(BedrockEmbeddings, RequestIsSignedInvokeModel) {
  const auto d = deployment("amazon.titan-embed-text-v2:0");
  auto body = obj(R"({"model":"emb","input":"hello"})");
  auto req = adapter_for(d, CallApi::embeddings)->build_request(d, body, false);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->target.host, "bedrock-runtime.us-east-1.amazonaws.com");
  EXPECT_EQ(req->target.path_and_query, "/model/amazon.titan-embed-text-v2%3A0/invoke");
  EXPECT_EQ(json::parse(req->body), json::parse(R"({"inputText":"hello","normalize":true})"));
  bool signed_ = false;
  for (const auto& [k, v] : req->headers)
    if (k == "Authorization") signed_ = v.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") && v.find("/us-east-1/bedrock/aws4_request") != std::string::npos;
  EXPECT_TRUE(signed_);
}

TEST(BedrockEmbeddings, AnswersInOpenAiShape) {
  auto titan = embeddings_from_invoke(EmbedFamily::titan_v2, R"({"embedding":[0.5,-0.25,1],"inputTextTokenCount":7})", "amazon.titan-embed-text-v2:0");
  ASSERT_TRUE(titan);
  EXPECT_EQ(titan->completion, obj(R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25,1]}],
    "model":"amazon.titan-embed-text-v2:0","usage":{"prompt_tokens":7,"total_tokens":7}})"));
  EXPECT_TRUE(titan->usage.reported);
  EXPECT_EQ(titan->usage.prompt_tokens, 7);
  EXPECT_FALSE(titan->failure);
  auto titan_no_count = embeddings_from_invoke(EmbedFamily::titan_v1, R"({"embedding":[0.5]})", "m");
  ASSERT_TRUE(titan_no_count);
  EXPECT_FALSE(titan_no_count->usage.reported);
  EXPECT_FALSE(titan_no_count->completion.contains("usage"));  // no number made up

  auto cohere = embeddings_from_invoke(EmbedFamily::cohere, R"({"embeddings":[[1,2],[3,4]],"id":"x","response_type":"embeddings_floats","texts":["a","b"]})", "cohere.embed-english-v3");
  ASSERT_TRUE(cohere);
  EXPECT_FALSE(cohere->usage.reported);  // Cohere on Bedrock reports none: the reservation is charged
  const auto& data = cohere->completion.at("data").as_array();
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[1].at("index"), 1);
  EXPECT_EQ(data[1].at("embedding"), json::parse("[3,4]"));
  auto typed = embeddings_from_invoke(EmbedFamily::cohere, R"({"embeddings":{"float":[[1]]},"id":"x"})", "m");
  ASSERT_TRUE(typed);
  EXPECT_EQ(typed->completion.at("data").as_array().size(), 1u);

  EXPECT_FALSE(embeddings_from_invoke(EmbedFamily::titan_v2, R"({"embeddings":[[1]]})", "m"));
  EXPECT_FALSE(embeddings_from_invoke(EmbedFamily::cohere, R"({"embeddings":[["x"]]})", "m"));
  EXPECT_FALSE(embeddings_from_invoke(EmbedFamily::cohere, "not json", "m"));
}

TEST(BedrockEmbeddings, ErrorsAreBedrocks) {
  const auto d = deployment("cohere.embed-english-v3");
  const auto* a = adapter_for(d, CallApi::embeddings);
  EXPECT_EQ(a->error_type_header(), "x-amzn-ErrorType");
  EXPECT_EQ(policy::classify(a->parse_typed_error(429, R"({"message":"Too many requests"})", "ThrottlingException:http://internal.amazon.com/coral/")),
            policy::FailureClass::retryable_capacity);
  EXPECT_EQ(policy::classify(a->parse_typed_error(400, R"({"message":"Input is too long for requested model."})", "ValidationException")),
            policy::FailureClass::context_overflow);
  EXPECT_EQ(policy::classify(a->parse_typed_error(403, R"({"message":"The security token included in the request is invalid."})", "UnrecognizedClientException")),
            policy::FailureClass::deployment_misconfigured);
}

TEST(EmbeddingsList, Base64IsLittleEndianFloat32) {
  // 1.0f = 0x3F800000 → bytes 00 00 80 3F; -2.0f = 0xC0000000 → 00 00 00 C0.
  EXPECT_EQ(float32_base64(json::array{1.0, -2}), "AACAPwAAAMA=");
  EXPECT_EQ(float32_base64(json::array{}), "");
  auto list = embeddings_list(json::array{json::array{1.0, -2}}, "m", Usage{});
  apply_encoding_format(obj(R"({"encoding_format":"float"})"), list);
  EXPECT_TRUE(list.at("data").at(0).at("embedding").is_array());
  apply_encoding_format(obj(R"({})"), list);
  EXPECT_TRUE(list.at("data").at(0).at("embedding").is_array());  // OpenAI's default is float
  apply_encoding_format(obj(R"({"encoding_format":"base64"})"), list);
  EXPECT_EQ(list.at("data").at(0).at("embedding"), "AACAPwAAAMA=");
}
