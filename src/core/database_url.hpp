#pragma once
/// Which database a `general_settings.database_url` names (docs/storage.md). Shared by the config
/// check and the store factory, so that `tollgate config check` accepts exactly what `serve` opens.

#include <expected>
#include <string>
#include <string_view>

namespace tollgate::core {

/// A classified database URL.
struct DatabaseUrl {
  enum class Kind { sqlite, postgres };
  Kind kind = Kind::sqlite;
  /// sqlite: the filename (`sqlite:///abs.db` → `/abs.db`, `sqlite://rel.db` → `rel.db`, a plain
  /// path as given, `:memory:`); postgres: the URL as written (libpq parses it).
  std::string target;
};

/// Classifies `url`: `sqlite://PATH`, a plain path or `:memory:` → sqlite; `postgresql://…` or
/// `postgres://…` (a URI that boost::url parses: RFC 3986) → postgres. Errors (a one-line reason,
/// without the password): empty, an empty sqlite path, an unparsable postgres URL, another scheme.
std::expected<DatabaseUrl, std::string> parse_database_url(std::string_view url);

/// `url` with its password (if any) replaced by `***`, for messages and logs. Text that is not a
/// URL with a password is returned as is.
std::string redact_database_url(std::string_view url);

}  // namespace tollgate::core
