#pragma once
// Internal to budget/: a JSON document whose numbers keep their exact text, so prices read from
// JSON (LiteLLM's price file) are converted by parse_price_per_token and never pass through a
// double. RFC 8259 JSON, parsed by Boost.JSON's basic_parser (max depth 32, valid UTF-8 only).

#include <expected>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tollgate::budget::detail {

/// One JSON value. Numbers and strings are kept as text (`text`); objects keep their members in
/// document order (duplicates included).
struct JsonText {
  enum class Kind : unsigned char { null, boolean, number, string, array, object };
  // Declared, so that clang 14 (the fuzz build) can tell whether std::pair<std::string, JsonText>
  // is default-constructible while this class is still being defined.
  JsonText() noexcept {}
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;  ///< number text exactly as written ("1.5e-06"), or the decoded string
  std::vector<JsonText> items;
  std::vector<std::pair<std::string, JsonText>> members;

  /// The first member named `key`, or nullptr (also when this is not an object).
  [[nodiscard]] const JsonText* find(std::string_view key) const;
};

/// "an object", "a string", ... for error messages.
[[nodiscard]] std::string_view kind_name(JsonText::Kind kind) noexcept;

/// Parses a whole JSON document. Error: "not valid JSON: <reason> (line N)".
[[nodiscard]] std::expected<JsonText, std::string> parse_json_text(std::string_view json);

}  // namespace tollgate::budget::detail
