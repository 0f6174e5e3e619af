#include "cache/stream_answer.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace tollgate::cache {
namespace {
namespace json = boost::json;

TEST(StreamAnswer, FoldsChunksIntoTheCompletion) {
  StreamAnswer s;
  s.add(R"({"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})");
  s.add(R"({"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]})");
  s.add(R"({"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]})");
  EXPECT_FALSE(s.completion()) << "no finish reason yet";
  s.add(R"({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})");
  s.add(R"({"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})");
  auto c = s.completion();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->at("object"), "chat.completion");
  EXPECT_EQ(c->at("id"), "c1");
  EXPECT_EQ(c->at("model"), "m");
  const auto& ch = c->at("choices").as_array().at(0).as_object();
  EXPECT_EQ(ch.at("message").at("content"), "Hello");
  EXPECT_EQ(ch.at("message").at("role"), "assistant");
  EXPECT_EQ(ch.at("finish_reason"), "stop");
  EXPECT_EQ(c->at("usage").at("total_tokens"), 5);
}

TEST(StreamAnswer, MergesToolCallsByIndex) {
  StreamAnswer s;
  s.add(R"({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":""}}]}}]})");
  s.add(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]})");
  s.add(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]})");
  s.add(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})");
  auto c = s.completion();
  ASSERT_TRUE(c);
  const auto& msg = c->at("choices").as_array().at(0).at("message").as_object();
  EXPECT_TRUE(msg.at("content").is_null());
  const auto& tc = msg.at("tool_calls").as_array().at(0).as_object();
  EXPECT_EQ(tc.at("id"), "call_1");
  EXPECT_EQ(tc.at("function").at("name"), "get");
  EXPECT_EQ(tc.at("function").at("arguments"), "{\"a\":1}");
}

TEST(StreamAnswer, IncompleteOrMalformedIsNeverAnAnswer) {
  StreamAnswer none;
  EXPECT_FALSE(none.completion());
  StreamAnswer two;  // the second choice never finished
  two.add(R"({"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{"content":"b"}}]})");
  EXPECT_FALSE(two.completion());
  StreamAnswer bad;
  bad.add(R"({"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]})");
  bad.add("{not json");
  EXPECT_FALSE(bad.completion());
}

}  // namespace
}  // namespace tollgate::cache
