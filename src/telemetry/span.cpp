#include "telemetry/span.hpp"

#include <charconv>

#include "core/json_out.hpp"

namespace tollgate::telemetry {

void Attributes::begin(std::string_view key) {
  if (count_++ > 0) json_.push_back(',');
  else json_.reserve(1024);  // a span's attributes, in one allocation
  if (core::json_safe(key)) {  // every key the pipeline writes
    json_.append("{\"key\":\"", 8);
    json_.append(key);
    json_.append("\",\"value\":{", 11);
  } else {
    json_.append("{\"key\":", 7);
    core::append_json_string(json_, key);
    json_.append(",\"value\":{", 10);
  }
}

void Attributes::add_string(std::string_view key, std::string_view value) {
  begin(key);
  json_.append("\"stringValue\":", 14);
  core::append_json_string(json_, value);
  json_.append("}}", 2);
}

void Attributes::add_int(std::string_view key, std::int64_t value) {
  begin(key);
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  json_.append("\"intValue\":\"", 12);  // int64 as a decimal string (the OTLP JSON mapping)
  json_.append(digits, end);
  json_.append("\"}}", 3);
}

void Attributes::add_double(std::string_view key, double value) {
  begin(key);
  core::JsonOut(json_).key("doubleValue").value(value);
  json_.append("}}");
}

void Attributes::add_bool(std::string_view key, bool value) {
  begin(key);
  json_.append(value ? "\"boolValue\":true}}" : "\"boolValue\":false}}");
}

void Attributes::add_strings(std::string_view key, const std::vector<std::string>& values) {
  begin(key);
  json_.append("\"arrayValue\":{\"values\":[");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) json_.push_back(',');
    json_.append("{\"stringValue\":");
    core::append_json_string(json_, values[i]);
    json_.push_back('}');
  }
  json_.append("]}}}");
}

}  // namespace tollgate::telemetry
