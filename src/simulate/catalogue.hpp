#pragma once
/// What a scripted upstream answers: the bodies and headers real providers send, in the
/// deployment's own wire format (OpenAI chat completions / Azure OpenAI, or Anthropic Messages).
/// The named errors are the same catalogue as tollgate-mock's (tools/mock/README.md, "Named
/// errors"), so a scenario and an e2e test speak the same language.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "simulate/scenario.hpp"

namespace tollgate::simulate {

/// An upstream HTTP answer.
struct ScriptedResponse {
  int status = 200;
  HeaderList headers;  ///< lower-case names; content-type included
  std::string body;
};

/// Facts of the upstream request a response depends on.
struct RequestFacts {
  std::string model;                  ///< upstream model name
  std::int64_t prompt_tokens = 0;     ///< counted from the request (tollgate-mock's rule)
  std::optional<std::int64_t> max_tokens;  ///< max_tokens / max_completion_tokens of the request
  bool stream = false;
  bool include_usage = false;         ///< OpenAI stream_options.include_usage
};

/// Reads the upstream request body (as the provider adapter built it): model, token count
/// (Σ over messages (and Anthropic's system) of ceil(text bytes / 4) + 4), max_tokens, stream.
RequestFacts read_request(std::string_view body, const config::Deployment& d);

/// The error answer of `o` (a named error, or a bare status >= 400) in `kind`'s format.
ScriptedResponse error_response(config::ProviderKind kind, const Outcome& o, const RequestFacts& req,
                                const std::string& request_id);

/// A successful answer (a completion, or an event stream when `req.stream`), in `kind`'s format.
/// Usage: `o.prompt_tokens` else the request's count; `o.completion_tokens` else 16, capped at
/// the request's max_tokens (finish reason `length` / `max_tokens` then).
ScriptedResponse success_response(config::ProviderKind kind, const Outcome& o, const RequestFacts& req,
                                  const std::string& id);

/// A 200 whose body is not JSON (fault `garbage`).
ScriptedResponse garbage_response();

}  // namespace tollgate::simulate
