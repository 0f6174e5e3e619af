#pragma once
/// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header a client
/// sends (and Tollgate sends upstream), and fresh trace and span ids. Ids are kept as lowercase
/// hex text, the form both the header and OTLP/HTTP JSON use.

#include <optional>
#include <string>
#include <string_view>

namespace tollgate::telemetry {

/// A span's place in a trace.
struct TraceContext {
  std::string trace_id;  ///< 32 lowercase hex digits, never all zero
  std::string span_id;   ///< 16 lowercase hex digits, never all zero (the parent, as received)
  bool sampled = true;   ///< flags bit 0
  std::string tracestate;  ///< the caller's `tracestate`, passed on unchanged (≤ 512 bytes)
};

/// Parses a `traceparent` value: `00-<32 hex>-<16 hex>-<2 hex>` (version 00; a higher version
/// is read by its first four fields, as the spec asks). nullopt when it is malformed, uses
/// uppercase hex, or has an all-zero id: the caller's trace is then ignored and a new one started.
std::optional<TraceContext> parse_traceparent(std::string_view value);

/// Whether `value` may be passed on as `tracestate`: at most 512 bytes of printable ASCII in at
/// most 32 comma-separated `key=value` members (W3C Trace Context §3.3); anything else is dropped.
bool valid_tracestate(std::string_view value);

/// `00-<trace_id>-<span_id>-01` (or `-00` when not sampled).
std::string format_traceparent(const std::string& trace_id, const std::string& span_id, bool sampled);

/// A random trace id (32 hex digits, not all zero).
std::string new_trace_id();

/// A random span id (16 hex digits, not all zero).
std::string new_span_id();

}  // namespace tollgate::telemetry
