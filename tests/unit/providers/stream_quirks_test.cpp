// OpenAI-compatible servers' stream quirks (docs/quirks.md): the OpenAI stream decoder accepts a
// whole answer without [DONE] and repairs tool-call indexes; the Anthropic view tells the truth
// about delivered tool calls.
#include "providers/anthropic/translate.hpp"
#include "providers/provider.hpp"
#include "providers/tool_call_index.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
namespace json = boost::json;
using providers::anthropic::AnthropicSseEvent;
using providers::anthropic::ChatStreamToMessages;

namespace {

struct Stream {
  std::unique_ptr<providers::StreamDecoder> d;
  std::vector<std::string> out;
  Stream() {
    config::Deployment dep;
    dep.provider = config::ProviderKind::openai;
    d = providers::provider_for(config::ProviderKind::openai).stream_decoder(dep, true);
  }
  void send(std::string data) {
    http::SseEvent ev;
    ev.data = std::move(data);
    d->on_event(ev, out);
  }
};

std::string tool_chunk(std::string call) {
  return R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[)" + call +
         R"(]},"finish_reason":null}]})";
}

std::vector<std::int64_t> indexes(const std::vector<std::string>& chunks) {
  std::vector<std::int64_t> out;
  for (const auto& c : chunks) {
    auto v = json::parse(c);
    for (const auto& t : v.at("choices").at(0).at("delta").at("tool_calls").as_array())
      out.push_back(t.at("index").as_int64());
  }
  return out;
}

const char* kFinishStop = R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})";
const char* kUsage = R"({"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}})";

}  // namespace

TEST(StreamQuirks, NoDoneAfterFinishAndUsageIsAWholeAnswer) {
  Stream s;
  s.send(R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})");
  s.send(kFinishStop);
  s.send(kUsage);
  EXPECT_FALSE(s.d->finished());
  EXPECT_TRUE(s.d->accept_end_without_terminator(s.out));
  EXPECT_TRUE(s.d->finished());
  EXPECT_TRUE(s.d->usage_final());
  EXPECT_EQ(s.d->usage().completion_tokens, 7);
}

TEST(StreamQuirks, NoDoneWithoutUsageOrFinishIsCut) {
  Stream a;
  a.send(kFinishStop);
  EXPECT_FALSE(a.d->accept_end_without_terminator(a.out));  // no usage: the bill is unknown
  EXPECT_FALSE(a.d->finished());
  Stream b;
  b.send(R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})");
  b.send(kUsage);
  EXPECT_FALSE(b.d->accept_end_without_terminator(b.out));  // no finish reason: cut
}

TEST(StreamQuirks, ParallelCallsAllAtIndexZeroGetTheirOwnIndex) {
  Stream s;  // Ollama: github.com/ollama/ollama/issues/15457
  s.send(tool_chunk(R"({"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}})"));
  s.send(tool_chunk(R"({"index":0,"id":"call_b","type":"function","function":{"name":"f","arguments":"{}"}})"));
  EXPECT_EQ(indexes(s.out), (std::vector<std::int64_t>{0, 1}));
}

TEST(StreamQuirks, DeltasWithoutIndexAreIndexedByCall) {
  Stream s;  // Ollama < 0.4.7: github.com/ollama/ollama/issues/7881
  s.send(tool_chunk(R"({"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"x\""}})"));
  s.send(tool_chunk(R"({"function":{"arguments":": 1}"}})"));
  s.send(tool_chunk(R"({"id":"call_b","type":"function","function":{"name":"f","arguments":"{}"}})"));
  EXPECT_EQ(indexes(s.out), (std::vector<std::int64_t>{0, 0, 1}));
}

TEST(StreamQuirks, OpenAisOwnIndexesAreRelayedUnchanged) {
  Stream s;
  const std::string first = tool_chunk(R"({"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}})");
  const std::string more = tool_chunk(R"({"index":0,"function":{"arguments":"{}"}})");
  const std::string open = R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null}}]})";
  s.send(open);
  s.send(first);
  s.send(more);
  ASSERT_EQ(s.out.size(), 3u);
  EXPECT_EQ(s.out[0], open);  // byte for byte
  EXPECT_EQ(s.out[1], first);
  EXPECT_EQ(s.out[2], more);
}

TEST(StreamQuirks, AStreamWithoutRoleGetsAssistantOnItsFirstDelta) {
  Stream s;
  s.send(R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a","role":null}}]})");
  s.send(R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"b"}}]})");
  ASSERT_EQ(s.out.size(), 2u);
  EXPECT_EQ(json::parse(s.out[0]).at("choices").at(0).at("delta").at("role"), "assistant");
  EXPECT_EQ(json::parse(s.out[0]).at("choices").at(0).at("delta").at("content"), "a");
  EXPECT_FALSE(json::parse(s.out[1]).at("choices").at(0).at("delta").as_object().contains("role"));
}

TEST(StreamQuirks, ToolCallsFinishedWithStopAreToolUseInTheAnthropicStream) {
  ChatStreamToMessages conv("m");
  std::vector<AnthropicSseEvent> ev;
  conv.on_chunk(json::parse(tool_chunk(R"({"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}})")).as_object(), ev);
  conv.on_chunk(json::parse(tool_chunk(R"({"index":0,"id":"call_b","type":"function","function":{"name":"f","arguments":"{}"}})")).as_object(), ev);
  conv.on_chunk(json::parse(kFinishStop).as_object(), ev);
  conv.on_chunk(json::parse(kUsage).as_object(), ev);
  int tool_blocks = 0;
  std::string stop;
  for (const auto& [name, data] : ev) {
    auto v = json::parse(data);
    if (name == "content_block_start" && v.at("content_block").at("type") == "tool_use") ++tool_blocks;
    if (name == "message_delta") stop = v.at("delta").at("stop_reason").as_string();
  }
  EXPECT_EQ(tool_blocks, 2);  // a new id is a new call, whatever its index
  EXPECT_EQ(stop, "tool_use");
}

TEST(StreamQuirks, ToolCallsFinishedWithStopAreToolUseInTheAnthropicBody) {
  auto chat = json::parse(R"({"id":"x","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,
    "tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}}],
    "usage":{"prompt_tokens":3,"completion_tokens":4}})").as_object();
  auto msg = providers::anthropic::chat_response_to_messages(chat, "m");
  EXPECT_EQ(msg.at("stop_reason"), "tool_use");
  chat["choices"].as_array()[0].as_object()["finish_reason"] = "length";  // a cut input stays a cut
  EXPECT_EQ(providers::anthropic::chat_response_to_messages(chat, "m").at("stop_reason"), "max_tokens");
  auto text = json::parse(R"({"id":"x","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]})").as_object();
  EXPECT_EQ(providers::anthropic::chat_response_to_messages(text, "m").at("stop_reason"), "end_turn");
}
