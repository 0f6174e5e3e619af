#pragma once
/// The name of a JSON value's kind for error messages ("a string", "a number", ...), one wording
/// for every field error of the API. Header-only (Boost.JSON's value type).

#include <boost/json/value.hpp>

namespace tollgate::core {

/// "null", "a boolean", "a number", "a string", "an array" or "an object".
inline const char* json_kind_name(const boost::json::value& v) noexcept {
  switch (v.kind()) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return "a boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_: return "a number";
    case boost::json::kind::string: return "a string";
    case boost::json::kind::array: return "an array";
    case boost::json::kind::object: return "an object";
  }
  return "unknown";
}

}  // namespace tollgate::core
