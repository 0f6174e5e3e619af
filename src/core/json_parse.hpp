#pragma once
/// Parsing JSON that Tollgate may write back (upstream answers and events, tool-call arguments,
/// stored bodies): Boost.JSON 1.81 reads a number beyond a double's range (`1e400`) as infinity and
/// `serialize` then writes `Infinity`, which is not JSON. The provider decoders, caches and jobs,
/// which re-serialise what they parse, parse here and refuse the number; the stream relays, which
/// mostly pass the upstream's text on as it came, parse with Boost and check has_non_finite()
/// before writing a value back (docs/fuzzing.md). Trusted, stored JSON is not parsed here.

#include <cstddef>
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

/// Texts up to this size (bytes) are parsed into an arena by document_arena().
inline constexpr std::size_t kMaxArenaText = 64 * 1024;

/// A storage for one parsed document of `text`: for a text of at most kMaxArenaText bytes, a
/// shared monotonic arena sized for it (its first block about twice the text; it grows by blocks).
/// The document's keys, strings and containers then come from a few blocks instead of one
/// allocation each, and its destruction frees those blocks only. The arena frees nothing before
/// the last value using it is gone, and a copy of such a document (Boost.JSON copies into the
/// source's storage) or an edit of it stays until then too: a larger text gets the default
/// storage, so that the copies a request makes of a large body (per attempt, per continuation)
/// are freed as they go.
boost::json::storage_ptr document_arena(std::string_view text);

/// Puts `from` in `to`'s place, keeping `from`'s storage. (Boost.JSON's move assignment keeps the
/// target's storage and so copies every element when the two storages differ.)
void adopt(boost::json::object& to, boost::json::object&& from) noexcept;

}  // namespace tollgate::core
