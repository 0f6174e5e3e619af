#pragma once
/// Request bodies: parsing a JSON object once, with a clear OpenAI-format error when it is not one.

#include <cmath>
#include <expected>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/error.hpp"

namespace tollgate::api {

/// Whether `v` holds a number beyond a double's range (Boost.JSON 1.81 reads 1e400 as infinity
/// and would write it back as `Infinity`, which is not JSON). Recursion is bounded by the depth
/// the value was parsed with.
inline bool has_non_finite(const boost::json::value& v) {
  if (const auto* d = v.if_double()) return !std::isfinite(*d);
  if (const auto* o = v.if_object()) {
    for (const auto& kv : *o)
      if (has_non_finite(kv.value())) return true;
  } else if (const auto* a = v.if_array()) {
    for (const auto& x : *a)
      if (has_non_finite(x)) return true;
  }
  return false;
}

/// Parses `text` as a JSON object (nesting at most `max_depth`). An empty body gives `{}` when
/// `empty_is_object`. Errors: 400 invalid_request_error ("not valid JSON" / "must be a JSON object";
/// also a number beyond a double's range, such as 1e400, which could not be written back as JSON).
std::expected<boost::json::object, core::Error> parse_json_object(std::string_view text, unsigned max_depth,
                                                                  bool empty_is_object);

}  // namespace tollgate::api
