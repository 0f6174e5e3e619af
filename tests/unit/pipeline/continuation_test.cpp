// ClientStream (pipeline/continuation.hpp): what a relayed stream delivered, and a continuation's
// chunks rewritten into the client's stream (issue 13 §3).
#include "pipeline/continuation.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace tollgate::pipeline {
namespace {

namespace json = boost::json;

std::string chat(std::string_view id, std::string_view delta, std::string_view finish = "null") {
  return std::string(R"({"id":")") + std::string(id) + R"(","object":"chat.completion.chunk","created":7,"choices":[{"index":0,"delta":)" +
         std::string(delta) + R"(,"finish_reason":)" + std::string(finish) + "}]}";
}

TEST(ClientStream, ContinuationChunksKeepTheIdDropTheRepeatedRoleAndTheLeadingSpace) {
  ClientStream s(false);
  std::string a = chat("orig", R"({"role":"assistant","content":""})");
  std::string b = chat("orig", R"({"content":"Hello "})");
  EXPECT_TRUE(s.relay(a));
  EXPECT_TRUE(s.relay(b));
  EXPECT_TRUE(s.continuable());
  EXPECT_EQ(s.prefill(), "Hello");
  s.cut(core::Error::gateway(502, "api_error", "cut", "stream_truncated"));
  EXPECT_TRUE(s.continuing());
  std::string role = chat("other", R"({"role":"assistant","content":""})");
  EXPECT_FALSE(s.relay(role)) << "the continuation's preamble is not relayed";
  std::string w = chat("other", R"({"content":" world"})");
  ASSERT_TRUE(s.relay(w));
  auto v = json::parse(w).as_object();
  EXPECT_EQ(v["id"].as_string(), "orig");
  EXPECT_EQ(v["choices"].as_array()[0].as_object()["delta"].as_object()["content"].as_string(), "world");
  std::string end = chat("other", "{}", R"("stop")");
  ASSERT_TRUE(s.relay(end)) << "a finish reason is relayed";
  EXPECT_EQ(s.text(), "Hello world");
}

TEST(ClientStream, AToolCallOrASecondChoiceIsNotContinuable) {
  ClientStream s(false);
  std::string a = chat("x", R"({"content":"Let me look"})");
  s.relay(a);
  EXPECT_TRUE(s.continuable());
  std::string t = chat("x", R"({"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]})");
  s.relay(t);
  EXPECT_FALSE(s.continuable());

  ClientStream m(false);
  std::string c1 = R"({"id":"x","choices":[{"index":1,"delta":{"content":"b"}}]})";
  std::string c0 = chat("x", R"({"content":"a"})");
  m.relay(c0);
  m.relay(c1);
  EXPECT_FALSE(m.continuable());

  ClientStream empty(false);
  std::string r = chat("x", R"({"role":"assistant"})");
  empty.relay(r);
  EXPECT_FALSE(empty.continuable()) << "nothing of the answer delivered: nothing to continue";
}

TEST(ClientStream, NativeContinuationJoinsTheOpenTextBlock) {
  ClientStream s(true);
  std::vector<std::string> first = {
      R"({"type":"message_start","message":{"id":"msg_1","role":"assistant","content":[]}})",
      R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one two "}})",
  };
  for (auto& c : first) EXPECT_TRUE(s.relay(c));
  EXPECT_EQ(s.prefill(), "one two");
  s.cut(core::Error::gateway(502, "api_error", "cut", "stream_truncated"));
  std::string start = R"({"type":"message_start","message":{"id":"msg_2"}})";
  EXPECT_FALSE(s.relay(start));
  std::string ping = R"({"type":"ping"})";
  EXPECT_FALSE(s.relay(ping));
  std::string block = R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})";
  EXPECT_FALSE(s.relay(block)) << "the client's text block goes on";
  std::string delta = R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" three"}})";
  ASSERT_TRUE(s.relay(delta));
  auto v = json::parse(delta).as_object();
  EXPECT_EQ(v["index"].as_int64(), 0);
  EXPECT_EQ(v["delta"].as_object()["text"].as_string(), "three");
  std::string stop = R"({"type":"message_stop"})";
  EXPECT_TRUE(s.relay(stop));
  EXPECT_EQ(s.text(), "one two three");
}

TEST(ClientStream, NativeContinuationAfterAClosedBlockStartsTheNextIndex) {
  ClientStream s(true);
  std::vector<std::string> first = {
      R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done."}})",
      R"({"type":"content_block_stop","index":0})",
  };
  for (auto& c : first) s.relay(c);
  s.cut(core::Error::gateway(502, "api_error", "cut", "stream_truncated"));
  std::string block = R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})";
  ASSERT_TRUE(s.relay(block));
  EXPECT_EQ(json::parse(block).as_object()["index"].as_int64(), 1);
}

TEST(ClientStream, GarbageIsRelayedAsIs) {
  ClientStream s(false);
  std::string g = "not json";
  EXPECT_TRUE(s.relay(g));
  EXPECT_EQ(g, "not json");
  EXPECT_FALSE(s.continuable());
}

}  // namespace
}  // namespace tollgate::pipeline
