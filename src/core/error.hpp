#pragma once
/// Errors on the data plane: values, never exceptions (DESIGN.md "Concurrency and async").
/// An Error carries where it came from and, for upstream errors, the provider's own
/// status, body and headers so the client can receive the primary's error unchanged.

#include <string>
#include <utility>
#include <vector>

namespace tollgate::core {

/// Who caused an error: the caller (bad request), an upstream provider, or Tollgate itself.
enum class ErrorOrigin { caller, upstream, gateway };

/// An error as the client will see it (OpenAI error body fields) plus its provenance.
struct Error {
  int status = 500;        ///< HTTP status sent to the client
  std::string type;        ///< OpenAI `error.type` (e.g. invalid_request_error)
  std::string code;        ///< OpenAI `error.code` / provider code (e.g. rate_limit_exceeded); may be empty
  std::string message;     ///< human-readable, never contains secrets
  std::string param;       ///< OpenAI `error.param`; empty = null
  ErrorOrigin origin = ErrorOrigin::gateway;
  /// For upstream errors: the provider's body and content type, relayed unchanged when this
  /// error is the one returned to the client (the primary's own error).
  std::string upstream_body;
  std::string upstream_content_type;
  /// API family of `upstream_body`: "openai" (OpenAI, Azure, compatible) or "anthropic".
  std::string upstream_api;
  /// Headers worth relaying to the client (retry-after, x-ratelimit-*).
  std::vector<std::pair<std::string, std::string>> headers;

  static Error caller(int status, std::string type, std::string message, std::string param = {},
                      std::string code = {}) {
    Error e;
    e.status = status;
    e.type = std::move(type);
    e.message = std::move(message);
    e.param = std::move(param);
    e.code = std::move(code);
    e.origin = ErrorOrigin::caller;
    return e;
  }
  static Error gateway(int status, std::string type, std::string message, std::string code = {}) {
    Error e;
    e.status = status;
    e.type = std::move(type);
    e.message = std::move(message);
    e.code = std::move(code);
    e.origin = ErrorOrigin::gateway;
    return e;
  }
};

}  // namespace tollgate::core
