// Decoding embeddings and legacy completions bodies (api/operation_decode.hpp): OpenAI's input
// rules, and the output bound the reservation pays for.
#include "api/operation_decode.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
namespace json = boost::json;

namespace {

json::object o(const char* text) { return json::parse(text).as_object(); }

/// The error's param, or "" when the body is valid.
std::string embeddings_error(const char* text) {
  auto b = o(text);
  pipeline::ChatCall call;
  auto e = api::decode_embeddings(b, call);
  if (e) {
    EXPECT_EQ(e->status, 400);
  }
  return e ? e->param : std::string();
}

std::string completions_error(const char* text) {
  auto b = o(text);
  pipeline::ChatCall call;
  auto e = api::decode_completions(b, call);
  if (e) {
    EXPECT_EQ(e->status, 400);
  }
  return e ? e->param : std::string();
}

}  // namespace

TEST(DecodeEmbeddings, AcceptsEveryInputShape) {
  EXPECT_EQ(embeddings_error(R"({"input":"hi"})"), "");
  EXPECT_EQ(embeddings_error(R"({"input":["a","b"],"encoding_format":"base64","dimensions":256})"), "");
  EXPECT_EQ(embeddings_error(R"({"input":[1,2,3]})"), "");
  EXPECT_EQ(embeddings_error(R"({"input":[[1,2],[3]],"encoding_format":"float"})"), "");
}

TEST(DecodeEmbeddings, RefusesBadInputNamingTheParameter) {
  EXPECT_EQ(embeddings_error(R"({})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":""})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":[]})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":42})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":["a",3]})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":["a",""]})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":[[1,-2]]})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":[[]]})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":{"text":"a"}})"), "input");
  EXPECT_EQ(embeddings_error(R"({"input":"a","encoding_format":"int8"})"), "encoding_format");
  EXPECT_EQ(embeddings_error(R"({"input":"a","dimensions":0})"), "dimensions");
  EXPECT_EQ(embeddings_error(R"({"input":"a","dimensions":"256"})"), "dimensions");
  EXPECT_EQ(embeddings_error(R"({"input":"a","stream":true})"), "stream");
}

TEST(DecodeEmbeddings, TooManyInputsIsRefused) {
  json::array many;
  for (int i = 0; i < 2049; ++i) many.emplace_back("x");
  json::object b{{"input", many}};
  pipeline::ChatCall call;
  auto e = api::decode_embeddings(b, call);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "input");
}

TEST(DecodeEmbeddings, HasNoOutputBoundAndNeverStreams) {
  auto b = o(R"({"input":"hi","stream":false})");
  pipeline::ChatCall call;
  ASSERT_FALSE(api::decode_embeddings(b, call));
  EXPECT_EQ(call.api, providers::CallApi::embeddings);
  EXPECT_TRUE(call.output.no_output);
  EXPECT_FALSE(call.stream);
  EXPECT_FALSE(b.contains("stream"));
}

TEST(DecodeCompletions, DefaultLimitIsSixteenAndWrittenIntoTheRequest) {
  auto b = o(R"({"prompt":"Say hi"})");
  pipeline::ChatCall call;
  ASSERT_FALSE(api::decode_completions(b, call));
  EXPECT_EQ(call.api, providers::CallApi::completions);
  EXPECT_EQ(call.output.max_tokens, 16);
  EXPECT_EQ(call.output.choices, 1);
  EXPECT_EQ(b.at("max_tokens").as_int64(), 16);
  EXPECT_EQ(call.caller_output_fields.at("max_tokens").as_int64(), 16);
}

TEST(DecodeCompletions, BoundCountsBestOfAndEveryPrompt) {
  auto b = o(R"({"prompt":"x","max_tokens":50,"n":2,"best_of":5})");
  pipeline::ChatCall call;
  ASSERT_FALSE(api::decode_completions(b, call));
  EXPECT_EQ(call.output.max_tokens, 50);
  EXPECT_EQ(call.output.choices, 5);  // best_of completions are generated and billed
  auto batch = o(R"({"prompt":["a","b","c"],"max_tokens":10,"n":2})");
  pipeline::ChatCall call2;
  ASSERT_FALSE(api::decode_completions(batch, call2));
  EXPECT_EQ(call2.output.choices, 6);
  auto tokens = o(R"({"prompt":[1,2,3],"max_tokens":10})");
  pipeline::ChatCall call3;
  ASSERT_FALSE(api::decode_completions(tokens, call3));
  EXPECT_EQ(call3.output.choices, 1);
}

TEST(DecodeCompletions, StreamOptionsAreRead) {
  auto b = o(R"({"prompt":"x","stream":true,"stream_options":{"include_usage":true}})");
  pipeline::ChatCall call;
  ASSERT_FALSE(api::decode_completions(b, call));
  EXPECT_TRUE(call.stream);
  EXPECT_TRUE(call.include_usage);
}

TEST(DecodeCompletions, RefusesBadInputNamingTheParameter) {
  EXPECT_EQ(completions_error(R"({})"), "prompt");
  EXPECT_EQ(completions_error(R"({"prompt":[]})"), "prompt");
  EXPECT_EQ(completions_error(R"({"prompt":7})"), "prompt");
  EXPECT_EQ(completions_error(R"({"prompt":"x","max_tokens":0})"), "max_tokens");
  EXPECT_EQ(completions_error(R"({"prompt":"x","max_tokens":"9"})"), "max_tokens");
  EXPECT_EQ(completions_error(R"({"prompt":"x","n":129})"), "n");
  EXPECT_EQ(completions_error(R"({"prompt":"x","n":3,"best_of":2})"), "best_of");
  EXPECT_EQ(completions_error(R"({"prompt":"x","best_of":21})"), "best_of");
  EXPECT_EQ(completions_error(R"({"prompt":"x","best_of":2,"stream":true})"), "best_of");
  EXPECT_EQ(completions_error(R"({"prompt":"x","echo":"yes"})"), "echo");
  EXPECT_EQ(completions_error(R"({"prompt":"x","suffix":3})"), "suffix");
  EXPECT_EQ(completions_error(R"({"prompt":"x","logprobs":6})"), "logprobs");
  EXPECT_EQ(completions_error(R"({"prompt":"x","stream":"yes"})"), "stream");
}
