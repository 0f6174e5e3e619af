// Fuzz target: the AWS event-stream decoder (http/aws_eventstream.hpp) that reads Bedrock
// ConverseStream and SageMaker response streams.
//
// Input: byte 0 = split seed, then the stream bytes (the seeds are real messages, CRCs included,
// so the fuzzer also gets past the CRC checks through the corpus and the round trip below).
//
// Properties:
// - split invariance: messages, failure and error text do not depend on where the bytes are cut;
// - decode(encode(m)) == m: every decoded message re-encoded with encode_event_stream_message
//   (its string headers) decodes to the same headers and payload; and the raw input used as a
//   payload (with a header made of its first bytes) round-trips too.
#include <vector>

#include "fuzz_support.hpp"
#include "http/aws_eventstream.hpp"

namespace {

using tollgate::http::EventStreamMessage;
using tollgate::http::EventStreamParser;

struct Decoded {
  std::vector<EventStreamMessage> messages;
  bool failed = false;
  std::string error;
};

Decoded decode(std::string_view bytes, std::size_t piece) {
  EventStreamParser p(1 << 20);
  Decoded d;
  for (std::size_t pos = 0; pos < bytes.size(); pos += piece)
    p.feed(bytes.substr(pos, piece), [&](const EventStreamMessage& m) { d.messages.push_back(m); });
  d.failed = p.failed();
  d.error = p.error();
  return d;
}

bool same(const EventStreamMessage& a, const EventStreamMessage& b) {
  return a.headers == b.headers && a.payload == b.payload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = tollgate::fuzz::as_text(data, size);
  const std::uint8_t seed = tollgate::fuzz::take_byte(in);

  const auto whole = decode(in, in.size() + 1);
  const auto split = decode(in, 1 + seed % 64);
  TG_FUZZ_CHECK(whole.failed == split.failed);
  TG_FUZZ_CHECK(whole.error == split.error);
  TG_FUZZ_CHECK(whole.messages.size() == split.messages.size());
  for (std::size_t i = 0; i < whole.messages.size(); ++i) TG_FUZZ_CHECK(same(whole.messages[i], split.messages[i]));
  if (whole.failed) TG_FUZZ_CHECK(!whole.error.empty());

  for (const auto& m : whole.messages) {
    const auto bytes = tollgate::http::encode_event_stream_message(m.headers, m.payload);
    const auto again = decode(bytes, bytes.size() + 1);
    TG_FUZZ_CHECK(!again.failed);
    TG_FUZZ_CHECK(again.messages.size() == 1);
    TG_FUZZ_CHECK(same(again.messages[0], m));
  }

  // The input as a payload, with one string header whose name and value are the input's first
  // bytes (within the encoding's bounds: a name of 1..255 bytes, a value below 64 KiB).
  if (in.size() < (1u << 19)) {
    const std::size_t name_len = 1 + seed % std::min<std::size_t>(255, in.size() + 1);
    std::string name(in.substr(0, name_len));
    if (name.empty()) name = ":event-type";
    const std::string value(in.substr(0, std::min<std::size_t>(in.size(), 65535)));
    EventStreamMessage m;
    m.headers = {{name, value}};
    m.payload = std::string(in);
    const auto bytes = tollgate::http::encode_event_stream_message(m.headers, m.payload);
    const auto again = decode(bytes, 1 + seed % 7);
    TG_FUZZ_CHECK(!again.failed);
    TG_FUZZ_CHECK(again.messages.size() == 1);
    TG_FUZZ_CHECK(same(again.messages[0], m));
    TG_FUZZ_CHECK(again.messages[0].header(name) == value);
  }
  return 0;
}
