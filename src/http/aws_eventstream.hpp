#pragma once
/// The AWS event-stream binary framing (application/vnd.amazon.eventstream), used by Bedrock
/// ConverseStream / InvokeModelWithResponseStream and SageMaker InvokeEndpointWithResponseStream.
/// Spec: AWS "Event stream encoding" (https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream,
/// and the Smithy eventstream codec): each message is
///   total length (u32 BE) | headers length (u32 BE) | prelude CRC32 (of the 8 bytes before) |
///   headers | payload | message CRC32 (of everything before it),
/// a header being name length (u8) | name | value type (u8) | value (0/1 bool, 2 byte, 3 i16,
/// 4 i32, 5 i64, 6 bytes and 7 string with a u16 BE length, 8 timestamp i64, 9 uuid 16 bytes).
/// CRC32 is IEEE 802.3 (the zlib polynomial). Pure std (the simulator links it too).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tollgate::http {

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as zlib's crc32) of `data`, continuing
/// from `crc` (0 to start).
std::uint32_t crc32(std::string_view data, std::uint32_t crc = 0) noexcept;

/// One decoded event-stream message: its string-typed headers (`:message-type`, `:event-type`,
/// `:exception-type`, `:content-type`, ...; other value types are skipped) and its payload.
struct EventStreamMessage {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload;
  /// The value of string header `name`, empty when absent.
  std::string_view header(std::string_view name) const noexcept;
};

/// Incremental decoder: bytes split anywhere in, whole CRC-checked messages out.
/// Fails (for good) on a prelude or message CRC mismatch, a total length below the 16-byte
/// minimum or above `max_message_bytes`, headers longer than the message, or a malformed header.
/// Not thread-safe; one per stream.
class EventStreamParser {
 public:
  /// AWS's own limits: a message is at most 16 MiB, its headers at most 128 KiB.
  static constexpr std::size_t default_max_message_bytes = std::size_t{16} << 20;

  explicit EventStreamParser(std::size_t max_message_bytes = default_max_message_bytes) noexcept
      : max_(max_message_bytes) {}

  /// Consumes `bytes`; calls `on_message` once per complete message, in order. Returns false
  /// once the parser failed (messages completed before the fault were delivered).
  bool feed(std::string_view bytes, const std::function<void(const EventStreamMessage&)>& on_message);
  /// True once a fault was seen.
  bool failed() const noexcept { return failed_; }
  /// Why it failed ("prelude CRC mismatch", ...), empty while healthy.
  const std::string& error() const noexcept { return error_; }

 private:
  bool fail(std::string why);
  bool decode(std::string_view msg, EventStreamMessage& out);

  std::size_t max_;
  std::string buf_;
  bool failed_ = false;
  std::string error_;
};

/// Encodes one message with string headers (type 7) and `payload`, CRCs included (the
/// simulator's writer; tests).
std::string encode_event_stream_message(const std::vector<std::pair<std::string, std::string>>& headers,
                                        std::string_view payload);

}  // namespace tollgate::http
