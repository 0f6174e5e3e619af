#pragma once
/// Internal to src/config: a section of the schema as a table of fields, and the one dispatcher
/// that loads a YAML map through such a table (known key → its reader; `warned` key → warning;
/// `refused` key → error; a key not in the table → the section's unknown-key warning).

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/load_context.hpp"
#include "config/schema.hpp"

namespace tollgate::config::detail {

/// Reads one value into the section's target `T`: (context, target, value, YAML path, line).
template <class T>
using Apply = void (*)(LoadContext&, T&, const YAML::Node&, const std::string&, int);

/// A key of a section: its schema entry and, unless it is only warned/refused/no_effect, how it
/// is read. A field with `apply` is read by it whatever its status (it gives its own warnings).
template <class T>
struct Field {
  SettingInfo info;
  Apply<T> apply = nullptr;
};

/// A section's handler for keys that are a family rather than one name (price keys): returns
/// false when `key` is not one of them.
template <class T>
using Pattern = bool (*)(LoadContext&, T&, const std::string& key, const YAML::Node&, const std::string&, int);

/// The key a schema path names: its last segment (`model_list[].litellm_params.rpm` → `rpm`).
std::string_view key_of(std::string_view schema_path);

/// "not supported by tollgate, ignored" (LiteLLM's sections) / "unknown key, ignored" (Tollgate's).
inline constexpr std::string_view kUnknownLitellmKey = "not supported by tollgate, ignored";
inline constexpr std::string_view kUnknownKey = "unknown key, ignored";

/// Applies a field whose reader is null by its status: warned → warning with its note,
/// refused → error, no_effect → nothing; os.environ/ beneath it is still resolved.
void apply_status(LoadContext& c, const SettingInfo& info, const YAML::Node& v, const std::string& path, int line);

/// Loads the map `v` at `path` through `fields`. Returns false when `v` is not a map (error given).
template <class T>
bool load_section(LoadContext& c, std::span<const Field<T>> fields, const YAML::Node& v, const std::string& path,
                  int line, T& target, std::string_view unknown_message, Pattern<T> pattern = nullptr) {
  return c.for_each_entry(v, path, line, [&](const std::string& k, const YAML::Node& val, const std::string& p, int l) {
    for (const Field<T>& f : fields) {
      if (key_of(f.info.path) != k) continue;
      if (f.apply) f.apply(c, target, val, p, l);
      else apply_status(c, f.info, val, p, l);
      return;
    }
    if (pattern && pattern(c, target, k, val, p, l)) return;
    c.warn(p, l, std::string(unknown_message));
  });
}

/// Appends the infos of `fields` to `out` (for all_settings()).
template <class T>
void append_infos(std::span<const Field<T>> fields, std::vector<SettingInfo>& out) {
  for (const Field<T>& f : fields) out.push_back(f.info);
}

}  // namespace tollgate::config::detail
