#pragma once
/// Model access rules: which model groups a caller may call (LiteLLM "virtual_keys": `models`,
/// wildcards and `model_info.access_groups`). Pure functions over immutable data; thread-safe.
/// The gateway checks the requested group; the attempt loop may use `may_call` to skip fallback
/// targets the caller may not call (`general_settings.enforce_fallback_model_access`).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/principal.hpp"
#include "config/config.hpp"
#include "core/error.hpp"

namespace tollgate::auth {

/// Whether an allow-list admits `model_group`: empty = every group; `*`, `all-proxy-models`
/// (and `all-team-models`, which defers to the team's own list) = every group; an entry equal
/// to the group; or an entry naming an access group listed in `model_info.access_groups` of one
/// of the group's deployments in `config`.
bool models_allow(const std::vector<std::string>& allowed, std::string_view model_group, const config::Config& config);

/// Whether `principal` may call `model_group`: the master key and a key-less principal may call
/// everything; a virtual key needs its own `models` AND, for a team key, its team's `models` to
/// admit the group (see models_allow).
bool may_call(const Principal& principal, std::string_view model_group, const config::Config& config);

/// The 401 LiteLLM returns when `may_call` is false (type `key_model_access_denied`, param
/// `model`): "key not allowed to access model. This key can only access models=[...]. Tried to
/// access X" (or the team's variant). nullopt when the call is allowed.
std::optional<core::Error> model_access_error(const Principal& principal, std::string_view model_group,
                                              const config::Config& config);

}  // namespace tollgate::auth
