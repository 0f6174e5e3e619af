// Which relayed chunks carry output (providers::StreamDecoder::carries_output): the stream relay
// holds the others back, so that a first-token limit or an early failure stays unseen.
#include <gtest/gtest.h>

#include "providers/chat_chunks.hpp"

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
