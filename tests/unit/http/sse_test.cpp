#include "http/sse.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace tollgate::http {
namespace {

std::vector<SseEvent> parse_all(std::string_view stream) {
  SseParser p;
  auto events = p.feed(stream);
  EXPECT_FALSE(p.failed());
  return events;
}

void expect_same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].event, b[i].event) << i;
    EXPECT_EQ(a[i].data, b[i].data) << i;
    EXPECT_EQ(a[i].id, b[i].id) << i;
    EXPECT_EQ(a[i].retry, b[i].retry) << i;
  }
}

// Feeds the stream cut at every pair of positions (three pieces) and byte by byte.
void expect_split_invariant(std::string_view stream) {
  const auto whole = parse_all(stream);
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    for (std::size_t j = i; j <= stream.size(); ++j) {
      SseParser p;
      std::vector<SseEvent> got;
      auto sink = [&got](SseEvent&& e) { got.push_back(std::move(e)); };
      p.feed(stream.substr(0, i), sink);
      p.feed(stream.substr(i, j - i), sink);
      p.feed(stream.substr(j), sink);
      SCOPED_TRACE(testing::Message() << "cuts at " << i << "," << j);
      expect_same(whole, got);
    }
  }
  SseParser p;
  std::vector<SseEvent> got;
  for (char c : stream) {
    p.feed(std::string_view(&c, 1), [&got](SseEvent&& e) { got.push_back(std::move(e)); });
  }
  expect_same(whole, got);
}

TEST(SseParser, OpenAiStyleDataEventsAndDone) {
  const auto ev = parse_all(
      "data: {\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\n"
      "data: [DONE]\n\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].event, "");
  EXPECT_EQ(ev[0].data, "{\"object\":\"chat.completion.chunk\",\"choices\":[]}");
  EXPECT_EQ(ev[1].data, "[DONE]");
}

TEST(SseParser, AnthropicStyleNamedEvents) {
  const auto ev = parse_all(
      "event: message_start\n"
      "data: {\"type\":\"message_start\"}\n\n"
      "event: ping\n"
      "data: {\"type\": \"ping\"}\n\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].event, "message_start");
  EXPECT_EQ(ev[0].data, "{\"type\":\"message_start\"}");
  EXPECT_EQ(ev[1].event, "ping");
}

TEST(SseParser, SplitAtEveryBoundaryGivesIdenticalEvents) {
  expect_split_invariant(
      "\xEF\xBB\xBF"
      ": keep-alive\r\n"
      "event: message_start\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "id: 7\rretry: 1500\rdata: x\rdata:y\r\r"
      "data: multi\n"
      "data: line\n\n"
      "event: e\n"
      "data\n\n"
      "data: [DONE]\n\n");
}

TEST(SseParser, LineEndingsCrlfCrLfAreEquivalent) {
  const auto lf = parse_all("event: a\ndata: 1\ndata: 2\n\n");
  const auto crlf = parse_all("event: a\r\ndata: 1\r\ndata: 2\r\n\r\n");
  const auto cr = parse_all("event: a\rdata: 1\rdata: 2\r\r");
  ASSERT_EQ(lf.size(), 1u);
  EXPECT_EQ(lf[0].data, "1\n2");
  expect_same(lf, crlf);
  expect_same(lf, cr);
}

TEST(SseParser, CrAtChunkEndFollowedByLfIsOneTerminator) {
  SseParser p;
  std::vector<SseEvent> got;
  auto sink = [&got](SseEvent&& e) { got.push_back(std::move(e)); };
  p.feed("data: a\r", sink);
  p.feed("\n\r", sink);  // LF completes the CRLF; CR is the blank line
  ASSERT_EQ(got.size(), 1u);
  p.feed("\n", sink);  // belongs to the previous CR: no extra blank line
  p.feed("data: b\n\n", sink);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].data, "b");
}

TEST(SseParser, CommentsAndUnknownFieldsIgnored) {
  const auto ev = parse_all(": this is a comment\nfoo: bar\ndata: x\n:another\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "x");
  EXPECT_EQ(ev[0].event, "");
}

TEST(SseParser, OnlyOneLeadingSpaceStripped) {
  const auto ev = parse_all("data:  two spaces\ndata:none\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, " two spaces\nnone");
}

TEST(SseParser, EmptyDataFieldDispatchesEmptyString) {
  // "data" alone appends an empty value + LF: the buffer is non-empty, so it dispatches "".
  const auto ev = parse_all("data\n\ndata:\n\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].data, "");
  EXPECT_EQ(ev[1].data, "");
}

TEST(SseParser, EventWithoutDataIsNotDispatchedAndTypeResets) {
  const auto ev = parse_all("event: lonely\n\ndata: after\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].event, "");  // the event type buffer was reset by the blank line
  EXPECT_EQ(ev[0].data, "after");
}

TEST(SseParser, IdPersistsAndRetryParsed) {
  const auto ev =
      parse_all("id: 1\nretry: 3000\ndata: a\n\ndata: b\n\nid\nretry: x1\ndata: c\n\n");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].id, "1");
  EXPECT_EQ(ev[0].retry, 3000);
  EXPECT_EQ(ev[1].id, "1");
  EXPECT_FALSE(ev[1].retry.has_value());
  EXPECT_EQ(ev[2].id, "");  // "id" with empty value resets the last event id
  EXPECT_FALSE(ev[2].retry.has_value());
}

TEST(SseParser, IdWithNulIsIgnored) {
  using namespace std::string_view_literals;
  const auto ev = parse_all("id: 5\ndata: a\n\nid: x\0y\ndata: b\n\n"sv);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].id, "5");
}

TEST(SseParser, BomOnlyStrippedAtStart) {
  const auto ev = parse_all("\xEF\xBB\xBF" "data: a\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "a");
  // A partial BOM followed by other bytes is ordinary text: the line becomes an unknown field.
  const auto ev2 = parse_all("\xEF\xBB" "data: a\n\ndata: b\n\n");
  ASSERT_EQ(ev2.size(), 1u);
  EXPECT_EQ(ev2[0].data, "b");
}

TEST(SseParser, FinishDetectsTruncatedEvent) {
  {
    SseParser p;
    EXPECT_EQ(p.feed("data: complete\n\n").size(), 1u);
    EXPECT_FALSE(p.finish());
  }
  {
    SseParser p;
    EXPECT_TRUE(p.feed("data: complete\n\ndata: {\"trunc").size() == 1u);
    EXPECT_TRUE(p.finish());  // unterminated line
  }
  {
    SseParser p;
    EXPECT_TRUE(p.feed("data: complete\n\nevent: x\ndata: y\n").size() == 1u);
    EXPECT_TRUE(p.finish());  // no blank line after the last event
  }
  {
    SseParser p;
    EXPECT_TRUE(p.feed("data: a\n\n: ping comment\n").size() == 1u);
    EXPECT_FALSE(p.finish());  // comments are not events
  }
}

TEST(SseParser, FinishResetsForReuse) {
  SseParser p;
  p.feed("id: 9\ndata: partial");
  EXPECT_TRUE(p.finish());
  const auto ev = p.feed("data: fresh\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "fresh");
  EXPECT_EQ(ev[0].id, "");
}

TEST(SseParser, OversizedLineFails) {
  SseParser p(64);
  EXPECT_EQ(p.feed("data: ok\n\n").size(), 1u);
  const std::string big(100, 'x');
  std::vector<SseEvent> got;
  EXPECT_FALSE(p.feed("data: " + big, [&](SseEvent&& e) { got.push_back(std::move(e)); }));
  EXPECT_TRUE(p.failed());
  EXPECT_FALSE(p.feed("\n\ndata: later\n\n", [&](SseEvent&& e) { got.push_back(std::move(e)); }));
  EXPECT_TRUE(got.empty());
}

TEST(SseParser, OversizedLineFailsWhenSplit) {
  SseParser p(64);
  for (int i = 0; i < 20 && !p.failed(); ++i) p.feed("xxxxxxxx");
  EXPECT_TRUE(p.failed());
}

TEST(SseParser, LineAtLimitAccepted) {
  SseParser p(16);
  const auto ev = p.feed("data: 0123456789\n\n");  // exactly 16 bytes before LF
  EXPECT_FALSE(p.failed());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "0123456789");
}

TEST(SseParser, OversizedEventDataFails) {
  SseParser p(64, 100);
  for (int i = 0; i < 20; ++i) p.feed("data: 0123456789\n");
  EXPECT_TRUE(p.failed());
}

TEST(SseParser, EventsDeliveredBeforeFault) {
  SseParser p(32);
  std::vector<SseEvent> got;
  EXPECT_FALSE(p.feed("data: a\n\ndata: " + std::string(64, 'z') + "\n\n",
                      [&](SseEvent&& e) { got.push_back(std::move(e)); }));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "a");
}

TEST(SseParser, CallbackMayKeepEventsAcrossDispatches) {
  SseParser p;
  std::vector<SseEvent> kept;
  p.feed("event: a\ndata: 1\n\nevent: b\ndata: 2\n\n",
         [&](SseEvent&& e) { kept.push_back(e); });  // copy, leaving e intact
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].event, "a");
  EXPECT_EQ(kept[1].event, "b");
  EXPECT_EQ(kept[1].data, "2");
}

TEST(SseFormat, DataOnly) {
  EXPECT_EQ(format_sse("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(format_sse("[DONE]"), "data: [DONE]\n\n");
  EXPECT_EQ(format_sse(""), "data: \n\n");
}

TEST(SseFormat, EmbeddedNewlinesBecomeDataLines) {
  EXPECT_EQ(format_sse("a\nb\r\nc\rd"), "data: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(format_sse("a\n"), "data: a\ndata: \n\n");
}

TEST(SseFormat, NamedEvent) {
  EXPECT_EQ(format_sse_event("message_stop", "{\"type\":\"message_stop\"}"),
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  EXPECT_EQ(format_sse_event("bad\nname", "x"), "event: bad\ndata: x\n\n");
  std::string out;
  append_sse_event(out, "", "x");
  append_sse_event(out, "e", "y");
  EXPECT_EQ(out, "data: x\n\nevent: e\ndata: y\n\n");
}

TEST(SseFormat, RoundTripThroughParser) {
  const std::vector<std::pair<std::string, std::string>> in = {
      {"message_start", "{\"x\":1}"}, {"", "line1\nline2"}, {"e", ""}, {"", "[DONE]"}};
  std::string wire;
  for (const auto& [e, d] : in) wire += format_sse_event(e, d);
  const auto ev = parse_all(wire);
  ASSERT_EQ(ev.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(ev[i].event, in[i].first);
    EXPECT_EQ(ev[i].data, in[i].second);
  }
}

}  // namespace
}  // namespace tollgate::http
