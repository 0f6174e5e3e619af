#pragma once
/// Caller credentials: where a client may put its key, and the master-key check.
/// LiteLLM accepts `Authorization: Bearer <key>` and `x-litellm-api-key`; Anthropic SDKs send
/// `x-api-key` and Azure SDKs `api-key`, so those are accepted too.

#include <functional>
#include <string>
#include <string_view>

namespace tollgate::auth {

/// Header lookup: returns the value or an empty view.
using HeaderLookup = std::function<std::string_view(std::string_view name)>;

/// The key the caller presented (first of Authorization Bearer, x-litellm-api-key, x-api-key,
/// api-key), or empty.
std::string_view presented_key(const HeaderLookup& header);

/// Compares in time independent of where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tollgate::auth
