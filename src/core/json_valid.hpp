#pragma once
/// Whether bytes are one well-formed JSON text (RFC 8259), checked without building a DOM: the
/// stream relay's test that an upstream event is readable before it is relayed (issue 13 §1).

#include <cstddef>
#include <string_view>

namespace tollgate::core {

/// Nesting accepted: an event may echo a request (a Responses `response.created` carries its
/// JSON schema, itself up to the API's 64 levels) inside a few levels of its own.
inline constexpr std::size_t kMaxJsonDepth = 128;

/// True when `text` is exactly one JSON value (surrounding whitespace allowed) of valid UTF-8,
/// nested at most kMaxJsonDepth. No allocation of values; thread-safe.
bool is_json_text(std::string_view text) noexcept;

}  // namespace tollgate::core
