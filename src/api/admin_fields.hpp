#pragma once
/// Validation of admin API bodies (LiteLLM proxy shapes, REFERENCE.md): pure functions from a
/// JSON field to a typed value or a 400 naming the field (`param`). No I/O; thread-safe.
///
/// Money arrives as decimal dollars (a JSON number or a string) and is converted ONCE to
/// nano-dollars with budget::parse_dollars; a JSON number is converted from its shortest decimal
/// text (Boost.JSON's round-trip serialisation), never through float arithmetic.

#include <cstddef>
#include <cstdint>
#include <expected>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/error.hpp"

namespace tollgate::api::admin {

/// A validated value or the 400 to send.
template <class T>
using Field = std::expected<T, core::Error>;

/// 400 `invalid_request_error` with `param` = `field`.
core::Error bad_field(std::string_view field, std::string message);

/// Names of `body`'s keys that are in neither `known` nor `tolerated` (tolerated keys are
/// accepted and ignored: LiteLLM fields Tollgate does not implement). The first unknown key
/// becomes a 400 naming it (all unknown keys are listed in the message).
std::optional<core::Error> check_fields(const boost::json::object& body, std::initializer_list<std::string_view> known,
                                        std::initializer_list<std::string_view> tolerated = {});

/// A string field; absent or null → nullopt; other types → 400.
Field<std::optional<std::string>> get_string(const boost::json::object& body, std::string_view field);
/// A required non-empty string field.
Field<std::string> require_string(const boost::json::object& body, std::string_view field);
/// A caller-chosen name (an id, alias, e-mail or tag name the admin API stores): get_string, and
/// at most auth::kMaxNameBytes (256) bytes, else 400 naming the field ("<field> is N bytes long;
/// caller-supplied names are limited to 256 bytes").
Field<std::optional<std::string>> get_name(const boost::json::object& body, std::string_view field);
/// A required non-empty name (require_string with get_name's limit).
Field<std::string> require_name(const boost::json::object& body, std::string_view field);
/// A list of names (get_string_list): each item at most auth::kMaxNameBytes bytes (400 naming
/// "<field>[i]"), and at most `max_items` items (400 naming the field).
Field<std::optional<std::vector<std::string>>> get_name_list(const boost::json::object& body, std::string_view field,
                                                             std::size_t max_items = SIZE_MAX);
/// A boolean field; absent or null → nullopt.
Field<std::optional<bool>> get_bool(const boost::json::object& body, std::string_view field);
/// A non-negative integer field (JSON integer, or a double with an integral value); absent or
/// null → nullopt; negative, fractional or other types → 400.
Field<std::optional<std::int64_t>> get_count(const boost::json::object& body, std::string_view field);
/// Decimal dollars (JSON number or numeric string) → nano-dollars; absent or null → nullopt;
/// negative, malformed or out of range → 400.
Field<std::optional<std::int64_t>> get_money(const boost::json::object& body, std::string_view field);
/// Dollars of one JSON value (see get_money), `field` naming it in errors.
Field<std::int64_t> money_of(const boost::json::value& v, std::string_view field);
/// An array of strings; absent or null → nullopt; other types or non-string items → 400.
Field<std::optional<std::vector<std::string>>> get_string_list(const boost::json::object& body, std::string_view field);
/// A JSON object, returned as compact JSON text; absent or null → nullopt.
Field<std::optional<std::string>> get_object_text(const boost::json::object& body, std::string_view field);
/// A `budget_duration` ("30s", "10m", "1h", "1d", "7d", "30d", "1mo"; budget::parse_budget_duration).
Field<std::optional<std::string>> get_budget_duration(const boost::json::object& body, std::string_view field);

/// A key `duration` ("30s", "10m", "1h", "1d", "2w", "1mo" = 30 days) in milliseconds.
std::expected<std::int64_t, std::string> parse_duration_ms(std::string_view text);

/// `budget_limits`: [{"budget_duration": "1d", "max_budget": 1.5}, ...] validated and
/// normalised to compact JSON text (max_budget as a JSON number); absent/null → nullopt.
/// Each window needs both fields; durations must be distinct.
Field<std::optional<std::string>> get_budget_limits(const boost::json::object& body);
/// `model_max_budget`: {"group": {"budget_duration"?: "1d", "max_budget": 2}} validated and
/// normalised to compact JSON text; absent/null → nullopt.
Field<std::optional<std::string>> get_model_max_budget(const boost::json::object& body);

/// Nano-dollars as a JSON number of dollars (the exact decimal text, parsed once for output): a
/// double, so exact up to 15 significant digits (every amount below $1,000,000); a larger amount
/// with nano-dollar digits comes out as the nearest double (within 1e-15 of it; docs/fuzzing.md).
boost::json::value dollars_json(std::int64_t nanos);
/// An optional amount: dollars_json or null.
boost::json::value dollars_json(const std::optional<std::int64_t>& nanos);
/// Parses stored JSON text (metadata, budget_limits...) for output; empty or invalid → `fallback`.
boost::json::value json_text(const std::string& text, boost::json::value fallback);

/// Decodes one `%XX`/`+` query-string component.
std::string url_decode(std::string_view s);
/// Value of `name` in the query string of `target` ("/key/info?key=sk-..."), decoded; nullopt
/// when absent.
std::optional<std::string> query_param(std::string_view target, std::string_view name);

/// An ISO 8601 date or date-time ("2025-01-31", "2025-01-31T12:00:00Z", with optional fractional
/// seconds and a "+HH:MM" offset) → milliseconds since the Unix epoch (UTC).
std::expected<std::int64_t, std::string> parse_iso_time_ms(std::string_view text);

}  // namespace tollgate::api::admin

namespace tollgate::api::admin {

// --- applying a validated field to a record (shared by */new and */update) -------------------

/// Applies `field` when present in `body` (null clears it): `get` validates, `set` stores.
/// Returns the 400 of `get`, else nullopt.
template <class Getter, class Setter>
std::optional<core::Error> apply(const boost::json::object& body, std::string_view field, Getter get, Setter set) {
  if (!body.contains(field)) return std::nullopt;
  auto v = get(body, field);
  if (!v) return v.error();
  set(std::move(*v));
  return std::nullopt;
}
/// get_money into `out`.
std::optional<core::Error> apply_money(const boost::json::object& body, std::string_view f, std::optional<std::int64_t>& out);
/// get_count into `out`.
std::optional<core::Error> apply_count(const boost::json::object& body, std::string_view f, std::optional<std::int64_t>& out);
/// get_string into `out` (null → "").
std::optional<core::Error> apply_string(const boost::json::object& body, std::string_view f, std::string& out);
/// A stored name (id, alias, e-mail): get_name into `out` (null → "").
std::optional<core::Error> apply_name(const boost::json::object& body, std::string_view f, std::string& out);
/// A key's tags: names, at most auth::kMaxRequestTags of them.
std::optional<core::Error> apply_tags(const boost::json::object& body, std::string_view f, std::vector<std::string>& out);
/// get_string_list into `out` (null → empty).
std::optional<core::Error> apply_list(const boost::json::object& body, std::string_view f, std::vector<std::string>& out);
/// get_object_text into `out` (null → "").
std::optional<core::Error> apply_object(const boost::json::object& body, std::string_view f, std::string& out);
/// get_budget_duration into `out`.
std::optional<core::Error> apply_duration(const boost::json::object& body, std::string_view f, std::optional<std::string>& out);
/// get_bool into `out` (null → false).
std::optional<core::Error> apply_flag(const boost::json::object& body, std::string_view f, bool& out);

}  // namespace tollgate::api::admin
