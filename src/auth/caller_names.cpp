#include "auth/caller_names.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "core/json_kind.hpp"

namespace tollgate::auth {
namespace json = boost::json;

namespace {


core::Error bad(const std::string& field, std::string message, const char* code) {
  return core::Error::caller(400, "invalid_request_error", std::move(message), field, code);
}

/// A name field: absent/null → nullopt; a string within the limit → it; else the 400.
std::expected<std::optional<std::string>, core::Error> name_at(const json::value* v, const std::string& field,
                                                               std::size_t max_bytes) {
  if (v == nullptr || v->is_null()) return std::optional<std::string>{};
  if (!v->is_string())
    return std::unexpected(bad(field, field + " must be a string, got " + core::json_kind_name(*v), "invalid_caller_name"));
  const std::string_view s = v->get_string();
  if (auto p = name_problem(field, s, max_bytes)) return std::unexpected(bad(field, std::move(p->message), p->code));
  return std::optional<std::string>(std::string(s));
}

/// Appends the tags of list `v` (named `field`) to `out`, counting against `limits.max_tags`.
std::optional<core::Error> collect_tags(const json::value* v, const std::string& field, const CallerNameLimits& limits,
                                        std::size_t& seen, std::vector<std::string>& out) {
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_array())
    return bad(field, field + " must be an array of strings, got " + core::json_kind_name(*v), "invalid_caller_name");
  const auto& a = v->get_array();
  seen += a.size();
  if (seen > limits.max_tags)
    return bad(field,
               "too many request tags: " + std::to_string(seen) + " in metadata.tags and tags together; the limit is " +
                   std::to_string(limits.max_tags),
               "too_many_tags");
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto t = name_at(&a[i], field + "[" + std::to_string(i) + "]", limits.max_name_bytes);
    if (!t) return t.error();
    if (!*t) {
      const std::string at = field + "[" + std::to_string(i) + "]";
      return bad(at, at + " must be a string, got null", "invalid_caller_name");
    }
    if (!(*t)->empty()) out.push_back(std::move(**t));
  }
  return std::nullopt;
}

// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF) at the start of `s`, or 0.
std::size_t utf8_sequence(std::string_view s) noexcept {
  const auto b = [&s](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  const unsigned c = b(0);
  const auto cont = [&b](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xbf) { return b(i) >= lo && b(i) <= hi; };
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const bool second = c == 0xe0 ? cont(1, 0xa0) : c == 0xed ? cont(1, 0x80, 0x9f) : cont(1);
    return second && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const bool second = c == 0xf0 ? cont(1, 0x90) : c == 0xf4 ? cont(1, 0x80, 0x8f) : cont(1);
    return second && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::optional<NameProblem> name_problem(std::string_view field, std::string_view value, std::size_t max_bytes) {
  if (value.size() > max_bytes)
    return NameProblem{std::string(field) + " is " + std::to_string(value.size()) +
                           " bytes long; caller-supplied names are limited to " + std::to_string(max_bytes) + " bytes",
                       "name_too_long"};
  const auto at = [](unsigned char c, std::size_t i) {
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string{'0', 'x', kHex[c >> 4], kHex[c & 15]} + " at byte " + std::to_string(i);
  };
  for (std::size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f)
      return NameProblem{std::string(field) + " contains a control character (" + at(c, i) + "); caller-supplied names must not",
                         "invalid_caller_name"};
    const std::size_t n = utf8_sequence(value.substr(i));
    if (n == 0) return NameProblem{std::string(field) + " is not valid UTF-8 (" + at(c, i) + ")", "invalid_caller_name"};
    i += n;
  }
  return std::nullopt;
}

std::expected<CallerNames, core::Error> read_caller_names(const json::object& body, CallerApi api,
                                                         const CallerNameLimits& limits) {
  CallerNames out;
  const json::object* md = nullptr;
  if (const auto* m = body.if_contains("metadata"); m && m->is_object()) md = &m->get_object();
  // The end user: Anthropic's `metadata.user_id`, OpenAI's `user`. Request tags are LiteLLM's,
  // read the same way on both APIs (a tag budget must not be bypassed by the other endpoint).
  const bool anthropic = api == CallerApi::anthropic_messages;
  auto u = anthropic ? name_at(md ? md->if_contains("user_id") : nullptr, "metadata.user_id", limits.max_name_bytes)
                     : name_at(body.if_contains("user"), "user", limits.max_name_bytes);
  if (!u) return std::unexpected(std::move(u.error()));
  out.end_user = u->value_or("");
  std::size_t seen = 0;
  if (md != nullptr)
    if (auto e = collect_tags(md->if_contains("tags"), "metadata.tags", limits, seen, out.tags))
      return std::unexpected(*e);
  if (auto e = collect_tags(body.if_contains("tags"), "tags", limits, seen, out.tags)) return std::unexpected(*e);
  return out;
}

std::optional<core::Error> add_header_tags(std::string_view header, CallerNames& names,
                                           const CallerNameLimits& limits) {
  const std::string field = "x-litellm-tags";
  std::size_t count = names.tags.size();
  std::size_t i = 0;
  while (i <= header.size()) {
    const std::size_t comma = std::min(header.find(',', i), header.size());
    std::string_view t = header.substr(i, comma - i);
    i = comma + 1;
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (t.empty()) continue;
    if (auto p = name_problem(field, t, limits.max_name_bytes)) return bad(field, std::move(p->message), p->code);
    if (++count > limits.max_tags)
      return bad(field,
                 "too many request tags: more than " + std::to_string(limits.max_tags) +
                     " in metadata.tags, tags and the x-litellm-tags header together",
                 "too_many_tags");
    names.tags.emplace_back(t);
  }
  return std::nullopt;
}

}  // namespace tollgate::auth
