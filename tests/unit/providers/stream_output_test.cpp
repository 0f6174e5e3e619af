// Which relayed chunks carry output (providers::StreamDecoder::carries_output): the stream relay
// holds the others back, so that a first-token limit or an early failure stays unseen.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "http/sse.hpp"
#include "providers/chat_chunks.hpp"
#include "providers/provider.hpp"

using tollgate::providers::chat_chunk_carries_output;

TEST(StreamOutput, ChatChunksWithOutput) {
  for (const char* c : {
           R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})",
           R"({"choices":[{"delta":{"content" : "x"}}]})",
           R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":""}}]}}]})",
           R"({"choices":[{"delta":{"reasoning_content":"thinking"}}]})",
           R"({"choices":[{"delta":{"refusal":"no"}}]})",
       })
    EXPECT_TRUE(chat_chunk_carries_output(c)) << c;
}

TEST(StreamOutput, PreambleChunksWithout) {
  for (const char* c : {
           R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})",
           R"({"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":null}}]})",
           R"({"choices":[{"delta":{"tool_calls":[]}}]})",
           R"({"choices":[{"delta":{}}],"usage":null})",
           R"({"id":"x","choices":[]})",
           // A key inside text is escaped: not a member.
           R"({"choices":[{"delta":{"role":"assistant","content":""}}],"note":"\"content\":\"x\""})",
       })
    EXPECT_FALSE(chat_chunk_carries_output(c)) << c;
}

// Found by fuzz_upstream_decode (tests/fuzz/regressions/upstream_decode/): the native Anthropic
// relay (a /v1/messages call to an Anthropic deployment) passed every event's data on, so an
// upstream's `data: [DONE]` (OpenAI's sentinel, which the relay lets through as readable) reached
// an Anthropic client as a non-JSON event, and so did anything after message_stop.
TEST(StreamOutput, TheNativeAnthropicRelayPassesOnlyTheMessagesEvents) {
  tollgate::config::Deployment d;
  d.provider = tollgate::config::ProviderKind::anthropic;
  d.upstream_model = "claude-sonnet-4-5";
  const auto* p = tollgate::providers::adapter_for(d, tollgate::providers::CallApi::messages);
  ASSERT_NE(p, nullptr);
  auto dec = p->stream_decoder(d, true);
  std::vector<std::string> out;
  const auto feed = [&](const char* event, const char* data) {
    dec->on_event(tollgate::http::SseEvent{event, data, {}, {}}, out);
  };
  feed("message_start", R"({"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3,"output_tokens":0}}})");
  feed("", "[DONE]");
  feed("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})");
  feed("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}})");
  feed("message_stop", R"({"type":"message_stop"})");
  EXPECT_TRUE(dec->finished());
  feed("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"late"}})");
  feed("", "[DONE]");
  ASSERT_EQ(out.size(), 4u);
  for (const auto& e : out) EXPECT_EQ(e.front(), '{') << e;
  EXPECT_EQ(out.back(), R"({"type":"message_stop"})");
}
