#pragma once
/// Budget scopes: who a budget belongs to (DESIGN.md, "Budget admission"; docs/budgets.md).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tollgate::budget {

/// The kind of owner a budget belongs to. Names (to_string) appear in 429 messages, logs and the
/// durable ledger, so they are stable.
enum class ScopeKind {
  key,           ///< a virtual key; id = the key's SHA-256 hash (hex)
  user,          ///< an internal user; id = user_id
  team,          ///< a team; id = team_id
  team_member,   ///< a user inside a team (`max_budget_in_team`); id = "team_id/user_id"
  organization,  ///< id = organization_id
  end_user,      ///< the request body's `user` (a LiteLLM "customer"); id = that string
  tag,           ///< a request/key tag; id = the tag
  global,        ///< the whole proxy (`litellm_settings.max_budget`); id = "" by convention
  key_model,     ///< one model group on one key (`model_max_budget`); id = "key_hash/model_group"
  key_window,    ///< one of a key's `budget_limits` windows; id = "key_hash/<duration>", e.g. ".../1d"
};

/// The stable name of a kind: "key", "user", "team", "team_member", "organization", "end_user",
/// "tag", "global", "key_model", "key_window". Thread-safe; the view points to static storage.
[[nodiscard]] std::string_view to_string(ScopeKind kind);

/// The inverse of to_string(ScopeKind); nullopt for an unknown name.
[[nodiscard]] std::optional<ScopeKind> parse_scope_kind(std::string_view name);

/// The identity of one budget: kind + id. Value type; comparable and hashable (ScopeIdHash,
/// std::hash<ScopeId>).
struct ScopeId {
  ScopeKind kind = ScopeKind::global;
  std::string id;

  friend bool operator==(const ScopeId&, const ScopeId&) = default;
};

/// "team_id/user_id": the id of a ScopeKind::team_member scope.
[[nodiscard]] std::string team_member_id(std::string_view team_id, std::string_view user_id);

/// "key_hash/model_group": the id of a ScopeKind::key_model scope.
[[nodiscard]] std::string key_model_id(std::string_view key_hash, std::string_view model_group);

/// "key_hash/<budget_duration>" (e.g. "ab12.../1d"): the id of a ScopeKind::key_window scope.
[[nodiscard]] std::string key_window_id(std::string_view key_hash, std::string_view budget_duration);

/// "kind:id" (e.g. "team:t-42"), for logs and messages.
[[nodiscard]] std::string to_string(const ScopeId& scope);

/// Hash of a ScopeId (libstdc++'s string hash of the id, the kind mixed in, splitmix64 finish).
/// Deterministic for a given build (no per-process seed). Thread-safe.
struct ScopeIdHash {
  [[nodiscard]] std::size_t operator()(const ScopeId& scope) const noexcept;
};

}  // namespace tollgate::budget

/// std::hash support so ScopeId works in standard unordered containers.
template <>
struct std::hash<tollgate::budget::ScopeId> {
  std::size_t operator()(const tollgate::budget::ScopeId& s) const noexcept {
    return tollgate::budget::ScopeIdHash{}(s);
  }
};
