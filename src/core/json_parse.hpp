#pragma once
/// Parsing JSON that Tollgate may write back (upstream answers and events, tool-call arguments,
/// stored bodies): Boost.JSON 1.81 reads a number beyond a double's range (`1e400`) as infinity and
/// `serialize` then writes `Infinity`, which is not JSON. The provider decoders, caches and jobs,
/// which re-serialise what they parse, parse here and refuse the number; the stream relays, which
/// mostly pass the upstream's text on as it came, parse with Boost and check has_non_finite()
/// before writing a value back (docs/fuzzing.md). Trusted, stored JSON is not parsed here.

#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

namespace tollgate::core {

/// Whether `v` holds a non-finite double anywhere. Recursion is bounded by the depth `v` was
/// parsed with.
bool has_non_finite(const boost::json::value& v) noexcept;

/// boost::json::parse(text, ec, storage, options), except that a value holding a number beyond a
/// double's range sets `ec` to boost::json::error::exponent_overflow and returns null. Never throws
/// for bad input (`ec` carries the parser's error); may throw std::bad_alloc.
boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              const boost::json::parse_options& options = {}, boost::json::storage_ptr storage = {});

/// A storage for one parsed document of `text`: a shared monotonic arena sized for it (its first
/// block about twice the text, at most 64 KiB; it grows by blocks for a larger document). The
/// document's keys, strings and containers come from a few blocks instead of one allocation each,
/// and its destruction frees those blocks only. For a document that is read, not edited at length:
/// the arena frees nothing before the last value using it is gone.
boost::json::storage_ptr document_arena(std::string_view text);

/// Puts `from` in `to`'s place, keeping `from`'s storage. (Boost.JSON's move assignment keeps the
/// target's storage and so copies every element when the two storages differ.)
void adopt(boost::json::object& to, boost::json::object&& from) noexcept;

}  // namespace tollgate::core
