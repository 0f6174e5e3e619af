#include "core/json_parse.hpp"

#include <cmath>

#include <boost/json/error.hpp>
#include <boost/json/parse.hpp>

namespace tollgate::core {

bool has_non_finite(const boost::json::value& v) noexcept {
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

boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              const boost::json::parse_options& options) {
  boost::json::value v = boost::json::parse(text, ec, {}, options);
  if (ec) return nullptr;
  if (has_non_finite(v)) {
    ec = boost::json::error::exponent_overflow;
    return nullptr;
  }
  return v;
}

}  // namespace tollgate::core
