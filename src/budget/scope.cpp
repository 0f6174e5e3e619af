#include "budget/scope.hpp"

#include <array>
#include <cstdint>

namespace tollgate::budget {
namespace {

constexpr std::array<std::string_view, 10> kKindNames = {
    "key", "user", "team", "team_member", "organization", "end_user", "tag", "global", "key_model", "key_window",
};

std::string join(std::string_view a, std::string_view b) {
  std::string out;
  out.reserve(a.size() + 1 + b.size());
  out.append(a);
  out.push_back('/');
  out.append(b);
  return out;
}

}  // namespace

std::string_view to_string(ScopeKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kKindNames.size() ? kKindNames[i] : std::string_view("unknown");
}

std::optional<ScopeKind> parse_scope_kind(std::string_view name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == name) return static_cast<ScopeKind>(i);
  }
  return std::nullopt;
}

std::string team_member_id(std::string_view team_id, std::string_view user_id) { return join(team_id, user_id); }

std::string key_model_id(std::string_view key_hash, std::string_view model_group) {
  return join(key_hash, model_group);
}

std::string key_window_id(std::string_view key_hash, std::string_view budget_duration) {
  return join(key_hash, budget_duration);
}

std::string to_string(const ScopeId& scope) {
  std::string out(to_string(scope.kind));
  out.push_back(':');
  out.append(scope.id);
  return out;
}

std::size_t ScopeIdHash::operator()(const ScopeId& scope) const noexcept {
  std::uint64_t h = std::hash<std::string_view>{}(scope.id);
  h ^= (static_cast<std::uint64_t>(scope.kind) + 1) * 0x9e3779b97f4a7c15ULL;
  // splitmix64 finaliser: the ledger picks shards from the low bits.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return static_cast<std::size_t>(h);
}

}  // namespace tollgate::budget
