#pragma once
/// Error bodies in each client API's own format.
/// OpenAI: {"error":{"message","type","param","code"}} (REFERENCE.md "OpenAI").
/// Anthropic: {"type":"error","error":{"type","message"}} (REFERENCE.md "Anthropic").

#include <string>

#include "core/error.hpp"

namespace tollgate::api {

/// OpenAI error body for `e`; an upstream OpenAI-format error body is relayed unchanged.
std::string openai_error_json(const core::Error& e);
/// Anthropic error body for `e`; an upstream Anthropic error body is relayed unchanged.
std::string anthropic_error_json(const core::Error& e);

}  // namespace tollgate::api
