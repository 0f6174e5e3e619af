#include "api/json_body.hpp"

#include <boost/json.hpp>

#include "core/json_parse.hpp"

namespace tollgate::api {

std::expected<boost::json::object, core::Error> parse_json_object(std::string_view text, unsigned max_depth,
                                                                  bool empty_is_object) {
  if (text.empty() && empty_is_object) return boost::json::object{};
  boost::system::error_code ec;
  boost::json::parse_options opts;
  opts.max_depth = max_depth;
  // In an arena of its own when small (core::document_arena): the body is read and edited in
  // place, not rebuilt, and core::adopt keeps it there when it moves into the call.
  auto v = boost::json::parse(text, ec, core::document_arena(text), opts);
  if (ec)
    return std::unexpected(
        core::Error::caller(400, "invalid_request_error", "request body is not valid JSON: " + ec.message()));
  if (!v.is_object())
    return std::unexpected(core::Error::caller(400, "invalid_request_error", "request body must be a JSON object"));
  // The body is passed on re-serialised (upstream, into the store): a number it cannot write
  // back as JSON is refused here rather than sent on as `Infinity`.
  if (core::has_non_finite(v))
    return std::unexpected(core::Error::caller(
        400, "invalid_request_error", "request body is not valid JSON: a number is out of range (beyond ±1.8e308)"));
  return std::move(v.as_object());
}

}  // namespace tollgate::api
