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

TEST(ClientStream, OnlyTheWhitespaceThePrefillDroppedIsStripped) {
  // The client has "def f():\n" and the prefill "def f():"; the continuation repeats the
  // newline and then indents: the newline goes, the indentation stays.
  ClientStream s(false);
  std::string a = chat("x", R"({"content":"def f():\n"})");
  s.relay(a);
  s.cut(core::Error::gateway(502, "api_error", "cut", "stream_truncated"));
  std::string nl = chat("y", R"({"content":"\n"})");
  EXPECT_FALSE(s.relay(nl)) << "only the repeated newline: nothing left to relay";
  std::string body = chat("y", R"({"content":"    return 1"})");
  ASSERT_TRUE(s.relay(body));
  EXPECT_EQ(json::parse(body).as_object()["choices"].as_array()[0].as_object()["delta"].as_object()["content"].as_string(),
            "    return 1");
  EXPECT_EQ(s.text(), "def f():\n    return 1");

  // A continuation that does not repeat the whitespace keeps all of its text.
  ClientStream t(false);
  std::string b = chat("x", R"({"content":"Hello "})");
  t.relay(b);
  t.cut(core::Error::gateway(502, "api_error", "cut", "stream_truncated"));
  std::string w = chat("y", R"({"content":"world"})");
  t.relay(w);
  EXPECT_EQ(t.text(), "Hello world");
}

TEST(ClientStream, WhitespaceOnlyOrAFinishedAnswerIsNotContinuable) {
  ClientStream ws(false);
  std::string a = chat("x", R"({"content":"  \n"})");
  ws.relay(a);
  EXPECT_FALSE(ws.continuable()) << "an empty prefill continues nothing";

  ClientStream done(false);
  std::string b = chat("x", R"({"content":"All of it."})");
  std::string f = chat("x", "{}", R"("stop")");
  done.relay(b);
  EXPECT_TRUE(done.continuable());
  done.relay(f);
  EXPECT_TRUE(done.finished());
  EXPECT_FALSE(done.continuable()) << "the finish reached the client: nothing is continued after it";

  ClientStream nat(true);
  std::string start = R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})";
  std::string d = R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x y"}})";
  std::string md = R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}})";
  nat.relay(start);
  nat.relay(d);
  EXPECT_EQ(nat.text_events(), 1);
  nat.relay(md);
  EXPECT_TRUE(nat.finished());
}

TEST(ClientStream, NativeContinuationThatOpensWithAnotherBlockClosesTheClientsTextBlock) {
  ClientStream s(true);
  std::vector<std::string> first = {
      R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half"}})",
  };
  s.relay_all(first);
  ASSERT_EQ(first.size(), 2u);
  s.cut(core::Error::gateway(502, "api_error", "cut", "stream_truncated"));
  std::vector<std::string> next = {
      R"({"type":"message_start","message":{"id":"msg_2"}})",
      R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})",
  };
  s.relay_all(next);
  ASSERT_EQ(next.size(), 2u);
  auto stop = json::parse(next[0]).as_object();
  EXPECT_EQ(stop["type"].as_string(), "content_block_stop");
  EXPECT_EQ(stop["index"].as_int64(), 0);
  EXPECT_EQ(json::parse(next[1]).as_object()["index"].as_int64(), 1) << "the continuation's block after the client's";

  // A continuation that ends without any block: the open text block is closed before the end.
  ClientStream e(true);
  std::vector<std::string> a = {
      R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half"}})",
  };
  e.relay_all(a);
  e.cut(core::Error::gateway(502, "api_error", "cut", "stream_truncated"));
  std::vector<std::string> end = {R"({"type":"message_delta","delta":{"stop_reason":"end_turn"}})",
                                  R"({"type":"message_stop"})"};
  e.relay_all(end);
  ASSERT_EQ(end.size(), 3u);
  EXPECT_EQ(json::parse(end[0]).as_object()["type"].as_string(), "content_block_stop");
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
