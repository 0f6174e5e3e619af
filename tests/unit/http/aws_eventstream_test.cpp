// The AWS event-stream framing: round trip, split anywhere, CRC faults, size limits.
#include "http/aws_eventstream.hpp"
#include "http/stream_frames.hpp"

#include <gtest/gtest.h>

using namespace tollgate::http;

namespace {

std::string event(std::string type, std::string payload) {
  return encode_event_stream_message({{":event-type", type}, {":content-type", "application/json"}, {":message-type", "event"}},
                                     payload);
}

}  // namespace

TEST(AwsEventStream, Crc32MatchesTheIeeeCheckValue) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);  // the CRC-32/ISO-HDLC check value
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("6789", crc32("12345")), 0xCBF43926u);
}

TEST(AwsEventStream, DecodesAKnownMessage) {
  // The smallest valid message: no headers, no payload (total 16 bytes).
  const std::string m = encode_event_stream_message({}, "");
  ASSERT_EQ(m.size(), 16u);
  EXPECT_EQ(static_cast<unsigned char>(m[3]), 16);
  // Prelude CRC of {0,0,0,16,0,0,0,0} is 0x05C248EB (the AWS SDK test vector for an empty message).
  EXPECT_EQ(crc32(m.substr(0, 8)), 0x05C248EBu);
  EventStreamParser p;
  int n = 0;
  EXPECT_TRUE(p.feed(m, [&](const EventStreamMessage& msg) {
    ++n;
    EXPECT_TRUE(msg.headers.empty());
    EXPECT_TRUE(msg.payload.empty());
  }));
  EXPECT_EQ(n, 1);
}

TEST(AwsEventStream, SplitAnywhereGivesTheSameMessages) {
  const std::string bytes = event("messageStart", R"({"role":"assistant"})") +
                            event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"Hi"}})") +
                            event("metadata", R"({"usage":{"inputTokens":3,"outputTokens":1}})");
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    EventStreamParser p;
    std::vector<std::string> types, payloads;
    auto cb = [&](const EventStreamMessage& m) {
      types.emplace_back(m.header(":event-type"));
      payloads.push_back(m.payload);
    };
    ASSERT_TRUE(p.feed(std::string_view(bytes).substr(0, cut), cb));
    ASSERT_TRUE(p.feed(std::string_view(bytes).substr(cut), cb));
    ASSERT_EQ(types.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(types[1], "contentBlockDelta");
    EXPECT_EQ(payloads[2], R"({"usage":{"inputTokens":3,"outputTokens":1}})");
  }
  // Byte by byte.
  EventStreamParser p;
  int n = 0;
  for (char c : bytes) ASSERT_TRUE(p.feed(std::string_view(&c, 1), [&](const EventStreamMessage&) { ++n; }));
  EXPECT_EQ(n, 3);
}

TEST(AwsEventStream, MessageCrcMismatchFailsAfterTheGoodOnes) {
  std::string bad = event("contentBlockDelta", R"({"delta":{"text":"x"}})");
  bad[bad.size() - 6] ^= 0x01;  // a payload byte: the message CRC no longer matches
  EventStreamParser p;
  int n = 0;
  EXPECT_FALSE(p.feed(event("messageStart", "{}") + bad, [&](const EventStreamMessage&) { ++n; }));
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.error(), "message CRC mismatch");
  EXPECT_FALSE(p.feed(event("messageStart", "{}"), [&](const EventStreamMessage&) { ++n; }));
  EXPECT_EQ(n, 1);
}

TEST(AwsEventStream, PreludeCrcMismatchFailsBeforeBuffering) {
  std::string m = event("messageStart", "{}");
  m[2] ^= 0x10;  // total length corrupted
  EventStreamParser p;
  EXPECT_FALSE(p.feed(m.substr(0, 12), [](const EventStreamMessage&) {}));
  EXPECT_EQ(p.error(), "prelude CRC mismatch");
}

TEST(AwsEventStream, OversizedMessageIsRefused) {
  const std::string big = event("contentBlockDelta", std::string(5000, 'a'));
  EventStreamParser p(4096);
  EXPECT_FALSE(p.feed(big.substr(0, 12), [](const EventStreamMessage&) {}));
  EXPECT_NE(p.error().find("over the limit"), std::string::npos);
}

TEST(AwsEventStream, HeadersLongerThanTheMessageAreRefused) {
  std::string m = encode_event_stream_message({}, "payload");
  // headers length := 200, with a correct prelude CRC and message CRC: structurally impossible.
  m[7] = static_cast<char>(200);
  const std::uint32_t pc = crc32(m.substr(0, 8));
  for (int i = 0; i < 4; ++i) m[8 + i] = static_cast<char>((pc >> (24 - 8 * i)) & 0xFF);
  const std::uint32_t mc = crc32(m.substr(0, m.size() - 4));
  for (int i = 0; i < 4; ++i) m[m.size() - 4 + i] = static_cast<char>((mc >> (24 - 8 * i)) & 0xFF);
  EventStreamParser p;
  EXPECT_FALSE(p.feed(m, [](const EventStreamMessage&) {}));
  EXPECT_EQ(p.error(), "headers longer than the message");
}

TEST(AwsEventStream, FrameParserMapsEventsAndExceptions) {
  auto parser = make_frame_parser(StreamFraming::aws_eventstream);
  ASSERT_NE(parser, nullptr);
  const std::string bytes =
      event("contentBlockDelta", R"({"delta":{"text":"a"}})") +
      encode_event_stream_message({{":exception-type", "throttlingException"}, {":message-type", "exception"}},
                                  R"({"message":"slow down"})");
  std::vector<SseEvent> got;
  EXPECT_TRUE(parser->feed(bytes, [&](const SseEvent& e) { got.push_back(e); }));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].event, "contentBlockDelta");
  EXPECT_EQ(got[0].id, "");
  EXPECT_EQ(got[1].event, "throttlingException");
  EXPECT_EQ(got[1].id, "exception");
  EXPECT_EQ(got[1].data, R"({"message":"slow down"})");
  EXPECT_TRUE(content_type_matches(StreamFraming::aws_eventstream, "application/vnd.amazon.eventstream"));
}
