#pragma once
/// Binding a model call to its caller: model access, then the request's own identity facts
/// (LiteLLM: body `user` = end user; `metadata.tags` / `tags` = request tags), read and checked
/// beforehand by read_caller_names (auth/caller_names.hpp).

#include <memory>
#include <string>

#include <boost/json/object.hpp>

#include "auth/caller_names.hpp"
#include "auth/identities.hpp"
#include "config/config.hpp"

namespace tollgate::auth {

/// Checks that `principal` may call model group `model` (auth::model_access_error), then returns
/// a copy with `names`' end user and tags (with_request). Erases the top-level `tags` field
/// from `body` (LiteLLM's own, not for the provider). Errors: 401/403 as model_access_error and
/// with_request describe.
AuthResult bind_request(const std::shared_ptr<const Principal>& principal, const IdentityIndex& index,
                        const std::string& model, boost::json::object& body, const config::Config& cfg,
                        const CallerNames& names);

}  // namespace tollgate::auth
