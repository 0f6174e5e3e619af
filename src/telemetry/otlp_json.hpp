#pragma once
/// OTLP/HTTP JSON encoding of spans (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding,
/// opentelemetry-proto collector/trace/v1 ExportTraceServiceRequest): hex trace and span ids,
/// int64 times as decimal strings, integer enums, attributes as {key, value: {stringValue |
/// intValue (decimal string) | doubleValue | boolValue | arrayValue}}.

#include <string>
#include <string_view>
#include <vector>

#include "telemetry/span.hpp"

namespace tollgate::telemetry {

/// What every exported span shares: its resource (service.name and OTEL_RESOURCE_ATTRIBUTES)
/// and the instrumentation scope.
struct Resource {
  Attributes attributes;                       ///< service.name first
  std::string scope_name = "tollgate";
  std::string scope_version;
};

/// Appends the OTLP/JSON Span object of `span` to `out`.
void append_span_json(std::string& out, const Span& span);

/// One ExportTraceServiceRequest body into `out` (cleared first) holding `spans_json`: whole Span
/// objects as append_span_json wrote them, each followed by a comma.
void encode_export_request(const Resource& resource, std::string_view spans_json, std::string& out);

/// One ExportTraceServiceRequest body holding `spans`, all under `resource`.
std::string encode_export_request(const Resource& resource, const std::vector<Span>& spans);

}  // namespace tollgate::telemetry
