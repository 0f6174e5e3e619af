#pragma once
/// Whether bytes are one well-formed JSON text (RFC 8259), checked without building a DOM: the
/// stream relay's test that an upstream event is readable before it is relayed (issue 13 §1).

#include <string_view>

namespace tollgate::core {

/// True when `text` is exactly one JSON value (surrounding whitespace allowed), nested at most
/// Boost.JSON's default depth (32). No allocation of values; thread-safe.
bool is_json_text(std::string_view text) noexcept;

}  // namespace tollgate::core
