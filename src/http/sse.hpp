#pragma once
/// Server-sent events (SSE): an incremental parser and writers.
///
/// Implements the event-stream interpretation rules of the WHATWG HTML Living Standard,
/// §9.2 "Server-sent events" (https://html.spec.whatwg.org/multipage/server-sent-events.html,
/// "Parsing an event stream" and "Interpreting an event stream"). Used both to read upstream
/// streams (OpenAI `data: {...}` / `data: [DONE]`, Anthropic `event: X` + `data: {...}`) and to
/// write the gateway's own streams to callers.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tollgate::http {

/// One dispatched SSE event.
///
/// - `event`: the value of the last `event:` field of the event, empty when none was given
///   (a browser would then use "message").
/// - `data`: the `data:` field values joined with "\n" (no trailing newline).
/// - `id`: the stream's last event id at dispatch time (the `id:` field persists across events,
///   per the spec; empty when never set).
/// - `retry`: the reconnection time in milliseconds from a `retry:` field seen since the previous
///   dispatch, if any (only all-ASCII-digit values that fit an `int` are accepted).
struct SseEvent {
  std::string event;
  std::string data;
  std::string id;
  std::optional<int> retry;
};

/// Incremental SSE parser: feed it bytes as they arrive, split anywhere (mid-line, between the
/// CR and LF of a CRLF, inside a leading UTF-8 BOM); it calls back once per complete event.
///
/// Rules (WHATWG HTML §9.2.5/§9.2.6): lines end in CRLF, LF or CR; a single leading U+FEFF BOM
/// is skipped; lines starting with `:` are comments; `field:value` with one leading space of
/// the value stripped, a line without `:` is a field with an empty value; `data` values are
/// appended with LF between them; a blank line dispatches the event when the data buffer is
/// non-empty (an `event:`-only block is discarded, as the spec says); unknown fields ignored.
///
/// Memory guard: a line longer than `max_line_bytes` puts the parser in a failed state
/// (`failed()`), after which `feed` ignores input and returns false — a garbage upstream cannot
/// make it buffer without bound. The data of one event is bounded by `max_event_bytes`.
///
/// Not thread-safe; one parser per stream. Cost: one scan per byte; a line that arrives whole
/// in one `feed` call is parsed in place without copying.
class SseParser {
 public:
  /// Default limit for one line (and for one event's data): 1 MiB.
  static constexpr std::size_t default_max_line_bytes = std::size_t{1} << 20;

  /// `max_line_bytes`: the longest accepted line, excluding its terminator; `max_event_bytes`:
  /// the largest accepted data buffer of one event.
  explicit SseParser(std::size_t max_line_bytes = default_max_line_bytes,
                     std::size_t max_event_bytes = 8 * default_max_line_bytes) noexcept
      : max_line_bytes_(max_line_bytes), max_event_bytes_(max_event_bytes) {}

  /// Consumes `bytes`; calls `on_event(SseEvent&&)` for every event completed by them, in
  /// order. The callback may move from the event. Returns false when the parser is (or just
  /// became) failed because of an oversized line/event; events completed before the fault
  /// have been delivered.
  template <class F>
  bool feed(std::string_view bytes, F&& on_event) {
    while (step(bytes)) {
      on_event(std::move(ready_));
      ready_.event.clear();
      ready_.data.clear();
      ready_.id.clear();
      ready_.retry.reset();
    }
    return !failed_;
  }

  /// Convenience overload: returns the events completed by `bytes` (check `failed()` after).
  std::vector<SseEvent> feed(std::string_view bytes);

  /// Signals end of stream. Returns true when a partial event was pending — bytes of an
  /// unterminated line, or fields of an event whose blank line never came — i.e. the stream
  /// was truncated mid-event. The partial event is discarded (spec: "once the end of the file
  /// is reached, any pending data must be discarded") and the parser is reset for reuse
  /// (failed state and last event id included).
  bool finish() noexcept;

  /// True after an oversized line or event; the stream should be abandoned.
  [[nodiscard]] bool failed() const noexcept { return failed_; }

  /// The last event id buffer (persists across events, per the spec).
  [[nodiscard]] const std::string& last_event_id() const noexcept { return last_id_; }

 private:
  // Consumes bytes until an event is ready in ready_ (returns true) or input runs out.
  bool step(std::string_view& bytes);
  // Applies one line (without terminator); returns true when it dispatched into ready_.
  bool process_line(std::string_view line);
  void fail() noexcept;

  std::size_t max_line_bytes_;
  std::size_t max_event_bytes_;
  std::string line_;        // partial line carried over between feed calls
  std::string data_;        // data buffer, each value followed by LF (spec)
  std::string event_type_;  // event type buffer
  std::string last_id_;     // last event id buffer
  std::optional<int> retry_;
  SseEvent ready_;
  unsigned char bom_seen_ = 0;  // bytes of a leading BOM matched so far
  bool bom_done_ = false;
  bool skip_lf_ = false;  // previous chunk ended in CR: a leading LF belongs to it
  bool in_event_ = false;  // a field line was seen since the last blank line
  bool failed_ = false;
};

/// Formats one unnamed event: `data: <line>\n` per line of `data` (split at CRLF, LF or CR so
/// the payload cannot break framing), then a blank line. Empty data gives `data: \n\n`.
std::string format_sse(std::string_view data);

/// Formats a named event: `event: <event>\n` then the data lines as `format_sse`, then a blank
/// line. `event` must not contain CR/LF; it is cut at the first one if it does.
std::string format_sse_event(std::string_view event, std::string_view data);

/// Appends `format_sse_event(event, data)` to `out` (no event line when `event` is empty);
/// lets a writer batch several events into one buffer without temporaries.
void append_sse_event(std::string& out, std::string_view event, std::string_view data);

}  // namespace tollgate::http
