// The usage of an OpenAI-style stream is the bill only when it is the last word of the stream.
#include "providers/provider.hpp"

#include <gtest/gtest.h>

using namespace tollgate;

namespace {

struct Stream {
  std::unique_ptr<providers::StreamDecoder> d;
  std::vector<std::string> out;
  Stream() {
    config::Deployment dep;
    dep.provider = config::ProviderKind::openai;
    d = providers::provider_for(config::ProviderKind::openai).stream_decoder(dep, false);
  }
  void send(std::string data) {
    http::SseEvent ev;
    ev.data = std::move(data);
    d->on_event(ev, out);
  }
};

const char* kToken = R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"w "}}],"usage":null})";
const char* kUsage = R"({"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":100}})";

}  // namespace

TEST(StreamUsage, TheFinalUsageChunkIsTheBill) {
  Stream s;
  for (int i = 0; i < 3; ++i) s.send(kToken);
  s.send(kUsage);
  s.send("[DONE]");
  EXPECT_TRUE(s.d->usage_final());
  EXPECT_EQ(s.d->usage().completion_tokens, 100);
}

TEST(StreamUsage, AUsageReportedEarlyThenMoreTokensIsNotTheBill) {
  Stream s;
  s.send(R"({"id":"c","choices":[{"index":0,"delta":{"content":""}}],"usage":{"prompt_tokens":5,"completion_tokens":0}})");
  for (int i = 0; i < 1000; ++i) s.send(kToken);
  s.send("[DONE]");
  EXPECT_TRUE(s.d->usage().reported);
  EXPECT_FALSE(s.d->usage_final());  // settled as unknown: the whole reservation
}

TEST(StreamUsage, AUsageObjectBesideANullOneIsRead) {
  Stream s;
  s.send(kToken);
  s.send(R"({"id":"c","meta":{"usage":null},"choices":[],"usage": {"prompt_tokens":5,"completion_tokens":100}})");
  s.send("[DONE]");
  EXPECT_TRUE(s.d->usage_final());
  EXPECT_EQ(s.d->usage().completion_tokens, 100);
}

TEST(StreamUsage, CumulativeUsageOnEveryChunkEndsWithTheLastOne) {
  Stream s;
  for (int i = 1; i <= 5; ++i)
    s.send(R"({"id":"c","choices":[{"index":0,"delta":{"content":"w "}}],"usage":{"prompt_tokens":5,"completion_tokens":)" +
           std::to_string(i) + "}}");
  EXPECT_TRUE(s.d->usage_final());
  EXPECT_EQ(s.d->usage().completion_tokens, 5);
}
