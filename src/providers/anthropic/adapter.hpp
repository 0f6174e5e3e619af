#pragma once
/// The Anthropic Messages API as a Provider (https://docs.anthropic.com/en/api/messages):
/// OpenAI chat requests are translated to Messages requests and the answers back.

#include "providers/provider.hpp"

namespace tollgate::providers::anthropic {

/// The process-wide Anthropic adapter.
const Provider& adapter();

}  // namespace tollgate::providers::anthropic
