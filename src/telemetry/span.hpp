#pragma once
/// A finished span as Tollgate exports it (OpenTelemetry trace data model,
/// https://opentelemetry.io/docs/specs/otel/trace/api/): ids, name, kind, times, status and
/// typed attributes. Plain data: the pipeline renders spans from its decision trace
/// (pipeline/run_spans.hpp), the exporter encodes them (telemetry/otlp_json.hpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tollgate::telemetry {

/// Attributes in the order they were added, held as their OTLP/JSON encoding (a comma-separated
/// list of KeyValue objects: {"key":K,"value":{"stringValue" | "intValue" (decimal string) |
/// "doubleValue" | "boolValue" | "arrayValue"}}), so that a span costs one string, not a
/// document. Keys are unique by construction of the caller.
class Attributes {
 public:
  void add_string(std::string_view key, std::string_view value);
  void add_int(std::string_view key, std::int64_t value);
  void add_double(std::string_view key, double value);
  void add_bool(std::string_view key, bool value);
  void add_strings(std::string_view key, const std::vector<std::string>& values);
  /// Empties the list, keeping its buffer (spans are rendered into reused objects).
  void clear() noexcept {
    json_.clear();
    count_ = 0;
  }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  /// The encoded KeyValue list, without the enclosing brackets.
  [[nodiscard]] const std::string& json() const noexcept { return json_; }

 private:
  void begin(std::string_view key);
  std::string json_;
  std::size_t count_ = 0;
};

/// One span.
struct Span {
  /// SpanKind as OTLP numbers it.
  enum class Kind { internal = 1, server = 2, client = 3 };
  /// Status code as OTLP numbers it.
  enum class Status { unset = 0, ok = 1, error = 2 };
  std::string trace_id;        ///< 32 lowercase hex digits
  std::string span_id;         ///< 16 lowercase hex digits
  std::string parent_span_id;  ///< 16 hex digits; empty for a root span
  std::string trace_state;     ///< W3C tracestate, passed through
  std::string name;
  Kind kind = Kind::internal;
  std::int64_t start_unix_nano = 0;
  std::int64_t end_unix_nano = 0;
  Status status = Status::unset;
  std::string status_message;  ///< with Status::error
  Attributes attributes;

  /// Back to a default span, keeping the strings' buffers.
  void clear() noexcept {
    trace_id.clear();
    span_id.clear();
    parent_span_id.clear();
    trace_state.clear();
    name.clear();
    kind = Kind::internal;
    start_unix_nano = end_unix_nano = 0;
    status = Status::unset;
    status_message.clear();
    attributes.clear();
  }
};

}  // namespace tollgate::telemetry
