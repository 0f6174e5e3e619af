// Input bounds of embeddings and legacy completions requests (budget/operation_bounds.hpp).
#include "budget/operation_bounds.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
namespace json = boost::json;

namespace {
json::value v(const char* text) { return json::parse(text); }
json::object o(const char* text) { return json::parse(text).as_object(); }
}  // namespace

TEST(OperationBounds, TextCountsItsBytesTokenIdsCountExactly) {
  EXPECT_EQ(budget::prompt_token_bound(v(R"("hello")")), 5);
  EXPECT_EQ(budget::prompt_token_bound(v(R"("héllo")")), 6);  // UTF-8 bytes
  EXPECT_EQ(budget::prompt_token_bound(v(R"(["ab","cde"])")), 5);
  EXPECT_EQ(budget::prompt_token_bound(v(R"([1,2,3])")), 3);
  EXPECT_EQ(budget::prompt_token_bound(v(R"([[1,2],[3],[4,5,6]])")), 6);
  EXPECT_EQ(budget::prompt_token_bound(v("null")), 0);
}

TEST(OperationBounds, EmbeddingsBoundIsTheInputs) {
  EXPECT_EQ(budget::embeddings_input_bound(o(R"({"model":"m","input":["hi","there"],"user":"someone-long"})")), 7);
  EXPECT_EQ(budget::embeddings_input_bound(o(R"({"model":"m"})")), 0);
}

TEST(OperationBounds, CompletionsBoundCountsTheSuffixOncePerPrompt) {
  EXPECT_EQ(budget::completions_input_bound(o(R"({"prompt":"abcd"})")), 4);
  EXPECT_EQ(budget::completions_input_bound(o(R"({"prompt":"abcd","suffix":"xy"})")), 6);
  EXPECT_EQ(budget::completions_input_bound(o(R"({"prompt":["ab","cd","ef"],"suffix":"xy"})")), 12);
  EXPECT_EQ(budget::completions_input_bound(o(R"({"prompt":[1,2,3],"suffix":"xy"})")), 5);
}

TEST(OperationBounds, PromptCountTellsInputsApart) {
  EXPECT_EQ(budget::prompt_count(v(R"("one")")), 1);
  EXPECT_EQ(budget::prompt_count(v(R"([1,2,3])")), 1);
  EXPECT_EQ(budget::prompt_count(v(R"(["a","b"])")), 2);
  EXPECT_EQ(budget::prompt_count(v(R"([[1],[2],[3]])")), 3);
}

TEST(OperationBounds, LongestTokenInputIsKnownOnlyForTokenArrays) {
  EXPECT_EQ(budget::longest_token_input(v(R"([1,2,3])")), 3);
  EXPECT_EQ(budget::longest_token_input(v(R"([[1,2],[3,4,5,6],[7]])")), 4);
  EXPECT_EQ(budget::longest_token_input(v(R"("text")")), std::nullopt);
  EXPECT_EQ(budget::longest_token_input(v(R"(["text",[1]])")), std::nullopt);
}
