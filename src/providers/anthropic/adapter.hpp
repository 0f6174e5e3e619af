#pragma once
/// The Anthropic Messages API as a Provider (https://docs.anthropic.com/en/api/messages):
/// OpenAI chat requests are translated to Messages requests and the answers back.

#include "providers/provider.hpp"

namespace tollgate::providers::anthropic {

/// The process-wide Anthropic adapter.
const Provider& adapter();

/// The adapter of a /v1/messages call served natively (no Anthropic → OpenAI → Anthropic
/// translation): the caller's Messages body is sent with `model` := the upstream model and
/// `max_tokens` := the attempt's bound, every other field (`thinking`, `cache_control` with
/// `ttl`, fields Tollgate does not know) unchanged; a 2xx message is relayed byte for byte
/// (usage read with usage_from_anthropic); a stream's events are relayed unchanged (their data,
/// named by their `type`), their usage and end read as the translation reads them; errors as
/// the translated adapter's.
const Provider& native_adapter();

}  // namespace tollgate::providers::anthropic
