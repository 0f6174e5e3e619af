#pragma once
/// A hash for unordered containers keyed by std::string that also takes std::string_view (and
/// C strings) without building a std::string: with `std::equal_to<>`, `find(view)` is a
/// heterogeneous lookup (C++20 [unord.req] "transparent").

#include <cstddef>
#include <functional>
#include <string_view>

namespace tollgate::core {

/// std::hash of the characters, the same for a std::string and a view of the same text.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

}  // namespace tollgate::core
