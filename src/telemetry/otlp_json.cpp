#include "telemetry/otlp_json.hpp"

#include <boost/json.hpp>

namespace tollgate::telemetry {
namespace {

namespace json = boost::json;

json::object any_value(const AttributeValue& v) {
  json::object o;
  std::visit(
      [&o](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) o["stringValue"] = x;
        else if constexpr (std::is_same_v<T, std::int64_t>) o["intValue"] = std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) o["doubleValue"] = x;
        else if constexpr (std::is_same_v<T, bool>) o["boolValue"] = x;
        else {
          json::array values;
          for (const auto& s : x) values.push_back(json::object{{"stringValue", s}});
          o["arrayValue"] = json::object{{"values", std::move(values)}};
        }
      },
      v);
  return o;
}

json::array attributes(const Attributes& attrs) {
  json::array out;
  for (const auto& [k, v] : attrs) out.push_back(json::object{{"key", k}, {"value", any_value(v)}});
  return out;
}

}  // namespace

std::string encode_export_request(const Resource& resource, const std::vector<Span>& spans) {
  json::array out_spans;
  for (const auto& s : spans) {
    json::object o;
    o["traceId"] = s.trace_id;
    o["spanId"] = s.span_id;
    if (!s.parent_span_id.empty()) o["parentSpanId"] = s.parent_span_id;
    if (!s.trace_state.empty()) o["traceState"] = s.trace_state;
    o["name"] = s.name;
    o["kind"] = static_cast<int>(s.kind);
    o["startTimeUnixNano"] = std::to_string(s.start_unix_nano);
    o["endTimeUnixNano"] = std::to_string(s.end_unix_nano);
    o["attributes"] = attributes(s.attributes);
    json::object status;
    if (s.status != Span::Status::unset) status["code"] = static_cast<int>(s.status);
    if (!s.status_message.empty()) status["message"] = s.status_message;
    o["status"] = std::move(status);
    out_spans.push_back(std::move(o));
  }
  json::object scope{{"name", resource.scope_name}};
  if (!resource.scope_version.empty()) scope["version"] = resource.scope_version;
  json::object scope_spans{{"scope", std::move(scope)}, {"spans", std::move(out_spans)}};
  json::object resource_spans{{"resource", json::object{{"attributes", attributes(resource.attributes)}}},
                              {"scopeSpans", json::array{std::move(scope_spans)}}};
  return json::serialize(json::object{{"resourceSpans", json::array{std::move(resource_spans)}}});
}

}  // namespace tollgate::telemetry
