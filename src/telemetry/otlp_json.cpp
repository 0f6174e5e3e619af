#include "telemetry/otlp_json.hpp"

#include <charconv>

#include "core/json_out.hpp"

namespace tollgate::telemetry {

using core::JsonOut;

void append_span_json(std::string& out, const Span& s) {
  JsonOut j(out);
  j.begin_object();
  j.key("traceId").value(s.trace_id).key("spanId").value(s.span_id);
  if (!s.parent_span_id.empty()) j.key("parentSpanId").value(s.parent_span_id);
  if (!s.trace_state.empty()) j.key("traceState").value(s.trace_state);
  j.key("name").value(s.name).key("kind").value(static_cast<int>(s.kind));
  // int64 times as decimal strings (the OTLP JSON mapping).
  char digits[24];
  j.key("startTimeUnixNano").value(std::string_view(digits, std::to_chars(digits, digits + sizeof digits, s.start_unix_nano).ptr));
  j.key("endTimeUnixNano").value(std::string_view(digits, std::to_chars(digits, digits + sizeof digits, s.end_unix_nano).ptr));
  j.key("attributes").begin_array();
  out.append(s.attributes.json());
  j.end_array();
  j.key("status").begin_object();
  if (s.status != Span::Status::unset) j.key("code").value(static_cast<int>(s.status));
  if (!s.status_message.empty()) j.key("message").value(s.status_message);
  j.end_object();
  j.end_object();
}

void encode_export_request(const Resource& resource, std::string_view spans_json, std::string& out) {
  if (!spans_json.empty() && spans_json.back() == ',') spans_json.remove_suffix(1);
  out.clear();
  out.reserve(512 + resource.attributes.json().size() + spans_json.size());
  JsonOut j(out);
  j.begin_object().key("resourceSpans").begin_array().begin_object();
  j.key("resource").begin_object().key("attributes").begin_array();
  out.append(resource.attributes.json());
  j.end_array().end_object();
  j.key("scopeSpans").begin_array().begin_object();
  j.key("scope").begin_object().key("name").value(resource.scope_name);
  if (!resource.scope_version.empty()) j.key("version").value(resource.scope_version);
  j.end_object();
  j.key("spans").begin_array();
  out.append(spans_json);
  j.end_array().end_object().end_array().end_object().end_array().end_object();
}

std::string encode_export_request(const Resource& resource, const std::vector<Span>& spans) {
  std::string joined;
  for (const auto& s : spans) {
    append_span_json(joined, s);
    joined.push_back(',');
  }
  std::string out;
  encode_export_request(resource, joined, out);
  return out;
}

}  // namespace tollgate::telemetry
