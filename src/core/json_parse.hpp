#pragma once
/// Parsing JSON that Tollgate may write back (upstream answers and events, tool-call arguments,
/// stored bodies): Boost.JSON 1.81 reads a number beyond a double's range (`1e400`) as infinity and
/// `serialize` then writes `Infinity`, which is not JSON. The provider decoders, caches and jobs,
/// which re-serialise what they parse, parse here and refuse the number; the stream relays, which
/// mostly pass the upstream's text on as it came, parse with Boost and check has_non_finite()
/// before writing a value back (docs/fuzzing.md). Trusted, stored JSON is not parsed here.

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
