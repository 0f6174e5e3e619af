#include "http/stream_frames.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "http/aws_eventstream.hpp"

namespace tollgate::http {

namespace {

class SseFrames final : public FrameParser {
 public:
  bool feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) override {
    return parser_.feed(bytes, [&](const SseEvent& ev) { on_event(ev); });
  }

 private:
  SseParser parser_;
};

/// NDJSON (https://github.com/ndjson/ndjson-spec): lines end in LF (a CR before it is dropped);
/// blank lines are skipped.
class NdjsonFrames final : public FrameParser {
 public:
  static constexpr std::size_t kMaxLine = std::size_t{1} << 20;

  bool feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) override {
    if (failed_) return false;
    while (!bytes.empty()) {
      const auto nl = bytes.find('\n');
      const auto part = bytes.substr(0, nl);
      if (line_.size() + part.size() > kMaxLine) {
        failed_ = true;
        line_.clear();
        return false;
      }
      line_.append(part);
      if (nl == std::string_view::npos) break;
      bytes.remove_prefix(nl + 1);
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      if (!line_.empty()) {
        ev_.data = std::move(line_);
        on_event(ev_);
        ev_.data.clear();
      }
      line_.clear();
    }
    return true;
  }

 private:
  std::string line_;
  SseEvent ev_;
  bool failed_ = false;
};

/// AWS event-stream messages as events: `event` = `:event-type` for events, `:exception-type`
/// for exceptions (`id` = "exception"), `:error-code` for errors (`id` = "error", `data` = the
/// `:error-message` as `{"message":...}`); `data` = the payload.
class AwsEventStreamFrames final : public FrameParser {
 public:
  bool feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) override {
    return parser_.feed(bytes, [&](const EventStreamMessage& m) {
      const std::string_view type = m.header(":message-type");
      ev_.id.clear();
      if (type == "exception") {
        ev_.event = std::string(m.header(":exception-type"));
        ev_.id = "exception";
        ev_.data = m.payload;
      } else if (type == "error") {
        ev_.event = std::string(m.header(":error-code"));
        ev_.id = "error";
        std::string msg;
        for (const char c : m.header(":error-message"))
          if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) msg.push_back(c);
        ev_.data = "{\"message\":\"" + msg + "\"}";
      } else {
        ev_.event = std::string(m.header(":event-type"));
        ev_.data = m.payload;
      }
      on_event(ev_);
    });
  }

 private:
  EventStreamParser parser_;
  SseEvent ev_;
};

/// Substring match, case-insensitive: as lenient as the relay always was with SSE
/// ("text/event-stream; charset=utf-8", odd spacing and case all pass).
bool media_is(std::string_view content_type, std::string_view want) {
  return std::search(content_type.begin(), content_type.end(), want.begin(), want.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != content_type.end();
}

}  // namespace

std::unique_ptr<FrameParser> make_frame_parser(StreamFraming framing) {
  switch (framing) {
    case StreamFraming::sse: return std::make_unique<SseFrames>();
    case StreamFraming::ndjson: return std::make_unique<NdjsonFrames>();
    case StreamFraming::aws_eventstream: return std::make_unique<AwsEventStreamFrames>();
  }
  return nullptr;
}

bool content_type_matches(StreamFraming framing, std::string_view content_type) {
  switch (framing) {
    case StreamFraming::sse: return media_is(content_type, "text/event-stream");
    case StreamFraming::ndjson:
      return media_is(content_type, "application/x-ndjson") || media_is(content_type, "application/json");
    case StreamFraming::aws_eventstream: return media_is(content_type, "application/vnd.amazon.eventstream");
  }
  return false;
}

std::string_view media_type(StreamFraming framing) {
  switch (framing) {
    case StreamFraming::sse: return "text/event-stream";
    case StreamFraming::ndjson: return "application/x-ndjson";
    case StreamFraming::aws_eventstream: return "application/vnd.amazon.eventstream";
  }
  return "";
}

}  // namespace tollgate::http
