#include "core/json_parse.hpp"

#include <cmath>
#include <memory>

#include <boost/json/error.hpp>
#include <boost/json/monotonic_resource.hpp>
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
                              const boost::json::parse_options& options, boost::json::storage_ptr storage) {
  boost::json::value v = boost::json::parse(text, ec, std::move(storage), options);
  if (ec) return nullptr;
  if (has_non_finite(v)) {
    ec = boost::json::error::exponent_overflow;
    return nullptr;
  }
  return v;
}

boost::json::storage_ptr document_arena(std::string_view text) {
  if (text.size() > kMaxArenaText) return {};  // the default storage: copies and edits free as they go
  return boost::json::make_shared_resource<boost::json::monotonic_resource>(2 * text.size() + 256);
}

void adopt(boost::json::object& to, boost::json::object&& from) noexcept {
  std::destroy_at(&to);
  std::construct_at(&to, std::move(from));
}

}  // namespace tollgate::core
