#include "config/wildcard.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace tollgate::config {
namespace {

/// Whether `name` matches `pattern` (`*` = any run of characters). Iterative, backtracking only
/// to the last star: O(|pattern| × |name|) at worst.
bool glob(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0, star = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

/// Longer requested names are not matched (a model name is an identifier, not a document).
constexpr std::size_t kMaxName = 512;

/// What a wildcard may pass through as (part of) a model name: letters, digits and
/// `. _ : @ + - /`, not empty, not starting with `/` or `.` nor ending with `/`, no `..` and no
/// `//` — the caller's
/// text becomes the upstream model (a JSON field, an Azure URL path segment), so nothing that
/// could read as a path, a query, an escape or a control character.
bool model_identifier(std::string_view s) {
  if (s.empty() || s.size() > 256 || s.front() == '/' || s.front() == '.' || s.back() == '/') return false;
  if (s.find("..") != std::string_view::npos || s.find("//") != std::string_view::npos) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '@' || c == '+' || c == '-' || c == '/';
  });
}

}  // namespace

std::optional<std::string> wildcard_capture(std::string_view pattern, std::string_view name) {
  const auto star = pattern.find('*');
  if (star == std::string_view::npos || name.size() > kMaxName || !glob(pattern, name)) return std::nullopt;
  // The first `*` matches as much as the rest of the pattern allows (as a regex's `(.*)`).
  const auto rest = pattern.substr(star + 1);
  for (std::size_t end = name.size() + 1; end-- > star;)
    if (glob(rest, name.substr(end))) {
      const auto capture = name.substr(star, end - star);
      if (!model_identifier(capture)) return std::nullopt;
      return std::string(capture);
    }
  return std::nullopt;  // unreachable: the whole-pattern glob matched
}

std::size_t wildcard_specificity(std::string_view pattern) noexcept {
  return static_cast<std::size_t>(std::count_if(pattern.begin(), pattern.end(), [](char c) { return c != '*'; }));
}

std::string resolve_wildcard_model(std::string_view tmpl, std::string_view capture, std::string_view provider_prefix) {
  if (tmpl == "*" && !provider_prefix.empty() && capture.size() > provider_prefix.size() + 1 &&
      capture.starts_with(provider_prefix) && capture[provider_prefix.size()] == '/')
    capture.remove_prefix(provider_prefix.size() + 1);
  std::string out;
  for (const char c : tmpl) {
    if (c == '*') out.append(capture);
    else out.push_back(c);
  }
  return out;
}

}  // namespace tollgate::config
