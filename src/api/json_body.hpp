#pragma once
/// Request bodies: parsing a JSON object once, with a clear OpenAI-format error when it is not one.

#include <expected>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/error.hpp"

namespace tollgate::api {

/// Parses `text` as a JSON object (nesting at most `max_depth`). An empty body gives `{}` when
/// `empty_is_object`. Errors: 400 invalid_request_error ("not valid JSON" / "must be a JSON object";
/// also a number beyond a double's range, such as 1e400, which could not be written back as JSON).
/// A body of at most core::kMaxArenaText bytes is in an arena of its own (core::document_arena):
/// move it with core::adopt, since a move assignment into an object of another storage copies it.
std::expected<boost::json::object, core::Error> parse_json_object(std::string_view text, unsigned max_depth,
                                                                  bool empty_is_object);

}  // namespace tollgate::api
