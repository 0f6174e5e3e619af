#pragma once
/// YAML as LiteLLM reads it. LiteLLM loads its config with PyYAML, which implements YAML 1.1,
/// while yaml-cpp implements YAML 1.2: the two differ on plain numbers (`20_000`, `0x1F`,
/// `010`, `1:30`) and yaml-cpp is lenient where PyYAML refuses (a quoted scalar left open at the
/// end of the file). These helpers give the PyYAML reading (PyYAML's resolver, yaml/resolver.py:
/// tag:yaml.org,2002:int and :float) and the checks yaml-cpp skips.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace YAML {
class Node;
}

namespace tollgate::config {

/// The integer a plain (unquoted) scalar is in YAML 1.1: decimal with `_` separators,
/// `0b` binary, `0x` hex, a leading `0` for octal, and base 60 (`1:30` = 90), each with an
/// optional sign. nullopt when it is not an integer there, or does not fit in int64.
std::optional<std::int64_t> yaml11_int(std::string_view plain);

/// A plain scalar's number text without YAML 1.1's `_` separators, when the scalar is a YAML
/// 1.1 int or float (`1_000.5` → `1000.5`); the text unchanged otherwise.
std::string yaml11_number_text(std::string_view plain);

/// Where the source text holds a quoted scalar (single or double) that is never closed: PyYAML
/// refuses the file, yaml-cpp reads the rest of the file into the string. `root` is the parsed
/// document of `source`. Returns nullopt when every quoted scalar is closed, else the 1-based
/// line and column of the opening quote.
struct TextPosition {
  int line = 0;
  int column = 0;
};
std::optional<TextPosition> unterminated_quote(const YAML::Node& root, std::string_view source);

}  // namespace tollgate::config
