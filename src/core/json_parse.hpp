#pragma once
/// Parsing JSON that Tollgate may write back (upstream answers and events, tool-call arguments,
/// stored bodies): Boost.JSON 1.81 reads a number beyond a double's range (`1e400`) as infinity and
/// `serialize` then writes `Infinity`, which is not JSON. Every such parse goes through here and
/// refuses the number, so no re-serialised value can hold one (docs/fuzzing.md).

#include <string_view>

#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

namespace tollgate::core {

/// Whether `v` holds a non-finite double anywhere. Recursion is bounded by the depth `v` was
/// parsed with.
bool has_non_finite(const boost::json::value& v) noexcept;

/// boost::json::parse(text, ec, {}, options), except that a value holding a number beyond a
/// double's range sets `ec` to boost::json::error::exponent_overflow and returns null. Never throws
/// for bad input (`ec` carries the parser's error); may throw std::bad_alloc.
boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              const boost::json::parse_options& options = {});

}  // namespace tollgate::core
