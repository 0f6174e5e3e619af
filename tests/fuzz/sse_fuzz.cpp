// Fuzz target: the SSE parser (http/sse.hpp) that reads every upstream SSE stream, and the
// writer that formats the gateway's own streams.
//
// Input: byte 0 = split seed (where the stream is cut between feed calls), then the stream bytes.
//
// Properties:
// - split invariance: the events of the bytes fed in pieces (cut anywhere: inside a CRLF, a
//   BOM, a line) equal the events of the bytes fed at once, and so does the failed state;
// - parse(format(x)) == x: formatting the parsed events with format_sse_event and parsing the
//   result gives back the same event names and data;
// - parse(format(name, data)) == (name cut at its first line end, data with CRLF/CR as LF) for
//   the raw input used as one event's data;
// - finish() says whether a partial event was pending and resets the parser.
#include <vector>

#include "fuzz_support.hpp"
#include "http/sse.hpp"

namespace {

using tollgate::http::SseEvent;
using tollgate::http::SseParser;

std::vector<SseEvent> parse_all(std::string_view bytes, bool* failed = nullptr) {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed(bytes, [&](SseEvent&& e) { out.push_back(std::move(e)); });
  if (failed) *failed = p.failed();
  return out;
}

bool same(const SseEvent& a, const SseEvent& b) {
  return a.event == b.event && a.data == b.data && a.id == b.id && a.retry == b.retry;
}

std::string normalize_newlines(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = tollgate::fuzz::as_text(data, size);
  const std::uint8_t seed = tollgate::fuzz::take_byte(in);

  bool whole_failed = false;
  const auto whole = parse_all(in, &whole_failed);

  // Split invariance: pieces of 1..seed+1 bytes, sizes varying with the position.
  {
    SseParser p;
    std::vector<SseEvent> pieces;
    std::size_t pos = 0, k = 0;
    while (pos < in.size()) {
      const std::size_t n = std::min<std::size_t>(in.size() - pos, 1 + (seed + 7 * k++) % (seed + 1u));
      p.feed(in.substr(pos, n), [&](SseEvent&& e) { pieces.push_back(std::move(e)); });
      pos += n;
    }
    TG_FUZZ_CHECK(p.failed() == whole_failed);
    TG_FUZZ_CHECK(pieces.size() == whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) TG_FUZZ_CHECK(same(pieces[i], whole[i]));
    p.finish();
    TG_FUZZ_CHECK(!p.failed() && p.last_event_id().empty());  // reset for reuse
  }

  // parse(format(x)) == x for the parsed events (names and data; ids and retry are not written).
  {
    std::string formatted;
    for (const auto& e : whole) tollgate::http::append_sse_event(formatted, e.event, e.data);
    const auto again = parse_all(formatted);
    TG_FUZZ_CHECK(again.size() == whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      TG_FUZZ_CHECK(again[i].event == whole[i].event);
      TG_FUZZ_CHECK(again[i].data == whole[i].data);
    }
  }

  // The raw input as one event: its first line as the name, all of it as the data.
  if (in.size() <= SseParser::default_max_line_bytes) {
    std::string_view name = in.substr(0, std::min<std::size_t>(in.size(), seed));
    const auto bytes = tollgate::http::format_sse_event(name, in);
    const auto events = parse_all(bytes);
    TG_FUZZ_CHECK(events.size() == 1);
    const auto eol = name.find_first_of("\r\n");
    TG_FUZZ_CHECK(events[0].event == name.substr(0, eol));
    TG_FUZZ_CHECK(events[0].data == normalize_newlines(in));
    SseParser p;
    p.feed(bytes.substr(0, bytes.size() - 1), [](SseEvent&&) {});
    TG_FUZZ_CHECK(p.finish());  // the blank line never came: a partial event was pending
  }
  return 0;
}
