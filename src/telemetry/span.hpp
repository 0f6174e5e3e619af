#pragma once
/// A finished span as Tollgate exports it (OpenTelemetry trace data model,
/// https://opentelemetry.io/docs/specs/otel/trace/api/): ids, name, kind, times, status and
/// typed attributes. Plain data: the pipeline renders spans from its decision trace
/// (pipeline/run_spans.hpp), the exporter encodes them (telemetry/otlp_json.hpp).

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tollgate::telemetry {

/// An attribute value: string, int, double, bool or string array (OTLP AnyValue's subset).
using AttributeValue = std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>>;

/// Attributes in the order they were added (keys unique by construction of the caller).
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;

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
};

}  // namespace tollgate::telemetry
